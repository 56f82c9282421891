#if canImport(NIOHTTP1)
    import NIOCore

    /// What ``KeepAlivePool`` asks of a connection: where it goes, whether its server still keeps it,
    /// whether it lives on the asking thread's event loop.
    protocol PooledConnection: AnyObject {
        var host: String { get }
        var port: Int { get }
        var isUsable: Bool { get }
        var isOnCallerLoop: Bool { get }
    }

    /// The decisions of ``KeepAliveTransport``'s connections as a value: which connection a request
    /// takes, when one is made, when a request waits and which waiting request goes on, what is let go.
    /// The transport carries them out (connects, closes, resumes) under its lock.
    struct KeepAlivePool<Connection: PooledConnection> {
        /// Connections open at once (idle, busy or connecting), at least one.
        let limit: Int
        let idleLimit: Int
        let idleTime: TimeAmount
        /// Idle connections, the most recently used last, with when each became idle.
        private(set) var idle: [(connection: Connection, since: NIODeadline)] = []
        private(set) var open = 0
        /// Requests waiting for their turn, in order.
        private(set) var waiting: [Int] = []

        init(limit: Int, idleLimit: Int, idleTime: TimeAmount) {
            self.limit = max(1, limit)
            self.idleLimit = idleLimit
            self.idleTime = idleTime
        }

        enum Take {
            /// An idle one to the same server (reused: a close before its answer may be retried).
            case kept(Connection)
            /// Make one: its place is counted (``closed()`` gives it back should connecting fail).
            case connect
            /// Every place taken and none idle: wait for a turn (``wait(_:)``).
            case full
        }

        /// A request to `host:port` asks for a connection (`fresh`: not a kept one). `letGo` are to be
        /// closed: idle ones the server closed or idle past ``idleTime`` (the server may be closing
        /// them as the request goes), and, when every place is taken, the oldest idle one to another
        /// server, whose place the new one takes.
        mutating func take(host: String, port: Int, fresh: Bool, now: NIODeadline) -> (Take, letGo: [Connection]) {
            var letGo = dropStale(now: now)
            if !fresh,
                let index = idle.lastIndex(where: { $0.connection.host == host && $0.connection.port == port && $0.connection.isOnCallerLoop })
                    ?? idle.lastIndex(where: { $0.connection.host == host && $0.connection.port == port })
            {
                return (.kept(idle.remove(at: index).connection), letGo)
            }
            if open >= limit, !idle.isEmpty {
                letGo.append(idle.removeFirst().connection)
                return (.connect, letGo)
            }
            guard open < limit else { return (.full, letGo) }
            open += 1
            return (.connect, letGo)
        }

        /// Request `id` waits for its turn: false when it need not (a place or an idle one is there now).
        mutating func wait(_ id: Int) -> Bool {
            guard open >= limit, idle.isEmpty else { return false }
            waiting.append(id)
            return true
        }

        /// Request `id` no longer waits (cancelled): whether it was waiting (then it is to be failed).
        mutating func cancel(_ id: Int) -> Bool {
            guard let index = waiting.firstIndex(of: id) else { return false }
            waiting.remove(at: index)
            return true
        }

        /// A connection done with and kept idle; `letGo` are to be closed (stale ones, the oldest past
        /// ``idleLimit``), `wake` is the request whose turn it is.
        mutating func keep(_ connection: Connection, now: NIODeadline) -> (letGo: [Connection], wake: Int?) {
            var letGo = dropStale(now: now)
            idle.append((connection, now))
            if idle.count > idleLimit {
                letGo.append(idle.removeFirst().connection)
                open -= 1
            }
            return (letGo, waiting.isEmpty ? nil : waiting.removeFirst())
        }

        /// A connection closed (or one never made): its place is free; `wake` is the request whose turn it is.
        mutating func closed() -> Int? {
            open -= 1
            return waiting.isEmpty ? nil : waiting.removeFirst()
        }

        private mutating func dropStale(now: NIODeadline) -> [Connection] {
            let stale = idle.filter { !$0.connection.isUsable || now - $0.since > idleTime }.map(\.connection)
            idle.removeAll { !$0.connection.isUsable || now - $0.since > idleTime }
            open -= stale.count
            return stale
        }
    }

    extension KeepAlivePool: Sendable where Connection: Sendable {}
#endif
