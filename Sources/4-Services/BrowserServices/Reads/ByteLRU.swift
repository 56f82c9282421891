/// Values kept within a budget of bytes, the least recently used leaving first: a value (no locks, no
/// I/O), O(1) per operation. Its owner holds it under its own lock and reports what it did.
///
/// A value larger than the whole budget is never kept (it would evict everything for one use).
public struct ByteLRU<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Node: Sendable {
        var value: Value
        var bytes: Int
        /// Toward the most recently used end.
        var newer: Key?
        /// Toward the least recently used end.
        var older: Key?
    }

    public let limit: Int
    private var nodes: [Key: Node] = [:]
    private var newest: Key?
    private var oldest: Key?
    /// The bytes every kept value counts.
    public private(set) var bytes = 0
    public var count: Int { nodes.count }

    /// - Parameter limit: the most bytes kept (0: nothing is kept).
    public init(limit: Int) { self.limit = max(0, limit) }

    /// The value under `key`, which becomes the most recently used.
    public mutating func get(_ key: Key) -> Value? {
        guard let node = nodes[key] else { return nil }
        // Already the most recent (a window read again and again): nothing to move.
        if newest == key { return node.value }
        unlink(key, node)
        link(key, value: node.value, bytes: node.bytes)
        return node.value
    }

    /// The value under `key`, leaving the order as it is.
    public func peek(_ key: Key) -> Value? { nodes[key]?.value }

    /// Keeps `value` under `key` (replacing what it held), the most recently used; the least recently
    /// used leave until the bytes fit.
    /// - Returns: the keys that left to make room (not `key`, unless it was too large to keep).
    @discardableResult
    public mutating func put(_ key: Key, _ value: Value, bytes size: Int) -> [Key] {
        remove(key)
        guard size <= limit else { return [] }
        var evicted: [Key] = []
        while bytes + size > limit, let last = oldest {
            remove(last)
            evicted.append(last)
        }
        link(key, value: value, bytes: size)
        return evicted
    }

    /// Forgets `key`.
    /// - Returns: whether it was kept.
    @discardableResult
    public mutating func remove(_ key: Key) -> Bool {
        guard let node = nodes[key] else { return false }
        unlink(key, node)
        return true
    }

    /// The keys from the most to the least recently used (for tests).
    public var keysByRecency: [Key] {
        var keys: [Key] = []
        var cursor = newest
        while let key = cursor {
            keys.append(key)
            cursor = nodes[key]?.older
        }
        return keys
    }

    private mutating func unlink(_ key: Key, _ node: Node) {
        if let newer = node.newer { nodes[newer]?.older = node.older } else { newest = node.older }
        if let older = node.older { nodes[older]?.newer = node.newer } else { oldest = node.newer }
        nodes[key] = nil
        bytes -= node.bytes
    }

    private mutating func link(_ key: Key, value: Value, bytes size: Int) {
        nodes[key] = Node(value: value, bytes: size, newer: nil, older: newest)
        if let previous = newest { nodes[previous]?.newer = key }
        newest = key
        if oldest == nil { oldest = key }
        bytes += size
    }
}
