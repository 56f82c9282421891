public import BrowserRecords
import Crypto
import DequeModule
public import Foundation
import HTTPServer
import Synchronization

/// Answers kept per `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header): a retry with the
/// same key and body gets the stored answer; the same key with another body is refused (422); a retry
/// while the first request runs is refused (409). Keys expire after ``lifetime`` (24 h) and are
/// scoped to the caller: each caller's keys live in a partition of their own, bounded in count and
/// bytes, so one tenant's flood of keys never evicts another tenant's key.
///
/// This is the fast path: answers of requests that changed durable state are also committed with
/// their change (``IdempotentRequest``) and come back here at start through ``restore(_:)``.
public final class IdempotencyStore: Sendable {
    enum Begin {
        case proceed
        case replay(HTTPResponse)
        case mismatch
        case inFlight
    }

    private struct Entry {
        let fingerprint: [UInt8]
        var response: HTTPResponse?
        let createdAt: Date
        /// Bytes this entry holds (key, fingerprint, answer), counted against its partition.
        var bytes: Int
    }

    /// One caller's keys (a principal's scope: the administrator, or one profile): what another caller
    /// does never evicts them. Entries leave in the order they came (oldest first) when they expire
    /// or when the partition is full, in O(1) each: no scan, whatever the flood.
    private struct Partition {
        var entries: [String: Entry] = [:]
        var order: Deque<(key: String, createdAt: Date)> = []
        var bytes = 0

        mutating func remove(_ key: String) {
            if let entry = entries.removeValue(forKey: key) { bytes -= entry.bytes }
        }

        /// Drops the oldest entries while they are expired, or while the partition is over its limits.
        mutating func trim(now: Date, capacity: Int, byteLimit: Int, incoming: Int) {
            while let first = order.first {
                let stale = entries[first.key].map { $0.createdAt != first.createdAt } ?? true
                let expired = now.timeIntervalSince(first.createdAt) >= IdempotencyStore.lifetime
                let full = entries.count >= capacity || bytes + incoming > byteLimit
                guard stale || expired || full else { return }
                order.removeFirst()
                if !stale { remove(first.key) }
            }
        }
    }

    static let lifetime: TimeInterval = IdempotencyRecord.lifetime
    /// Keys kept per caller (the oldest leave first).
    let capacity: Int
    /// Bytes of answers kept per caller (the oldest leave first).
    let byteLimit: Int
    private let partitions = Mutex<[String: Partition]>([:])

    /// - Parameters:
    ///   - capacity: keys kept per caller (principal).
    ///   - byteLimit: bytes of stored answers kept per caller.
    public init(capacity: Int = 10_000, byteLimit: Int = 8 << 20) {
        self.capacity = capacity
        self.byteLimit = byteLimit
    }

    /// A scoped key's caller scope and key (`"admin\n8e03978e"`).
    private static func split(_ scoped: String) -> (scope: String, key: String) {
        guard let newline = scoped.firstIndex(of: "\n") else { return ("", scoped) }
        return (String(scoped[..<newline]), String(scoped[scoped.index(after: newline)...]))
    }

    private static func size(of response: HTTPResponse?) -> Int {
        guard let response else { return 0 }
        var size = response.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
        switch response.body {
        case .bytes(let bytes): size += bytes.count
        case .shared(let shared): size += shared.body.count
        case .stream: break
        }
        return size
    }

    /// Takes back the answers stored in the database (per caller, the newest kept when there are more than fit).
    public func restore(_ records: [IdempotencyRecord], now: Date = Date()) {
        partitions.withLock { partitions in
            for record in records.sorted(by: { $0.createdAt < $1.createdAt }) where now.timeIntervalSince(record.createdAt) < Self.lifetime {
                let (scope, key) = Self.split(record.key)
                let headers = HTTPHeaders(record.headers.map { (name: $0.name, value: $0.value) })
                let response = HTTPResponse(status: record.status, headers: headers, body: .bytes(record.body))
                let bytes = key.utf8.count + 64 + Self.size(of: response)
                partitions[scope, default: Partition()].trim(now: now, capacity: capacity, byteLimit: byteLimit, incoming: bytes)
                partitions[scope, default: Partition()].remove(key)
                partitions[scope, default: Partition()].entries[key] = Entry(
                    fingerprint: record.fingerprint, response: response,
                    createdAt: record.createdAt, bytes: bytes)
                partitions[scope, default: Partition()].bytes += bytes
                partitions[scope, default: Partition()].order.append((key, record.createdAt))
            }
        }
    }

    /// The record to store for `response`, or nil when it cannot or must not be kept (server errors,
    /// streams).
    static func record(key: String, fingerprint: [UInt8], response: HTTPResponse, now: Date = Date()) -> IdempotencyRecord? {
        guard response.status < 500 else { return nil }
        let body: [UInt8]
        var headers = response.headers
        switch response.body {
        case .bytes(let bytes): body = bytes
        case .shared(let shared):
            body = shared.body
            headers = shared.headers
        case .stream: return nil
        }
        return IdempotencyRecord(
            key: key, fingerprint: fingerprint, status: response.status,
            headers: headers.map { .init(name: $0.name, value: $0.value) }, body: body, createdAt: now)
    }

    static func fingerprint(_ request: HTTPRequest) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: Array("\(request.method.rawValue) \(request.path)\n".utf8))
        hasher.update(data: request.body)
        return Array(hasher.finalize())
    }

    func begin(key scoped: String, fingerprint: [UInt8], now: Date = Date()) -> Begin {
        let (scope, key) = Self.split(scoped)
        return partitions.withLock { partitions in
            var partition = partitions.removeValue(forKey: scope) ?? Partition()
            defer { partitions[scope] = partition }
            if let entry = partition.entries[key], now.timeIntervalSince(entry.createdAt) < Self.lifetime {
                guard entry.fingerprint == fingerprint else { return .mismatch }
                guard let response = entry.response else { return .inFlight }
                return .replay(response)
            }
            let bytes = key.utf8.count + 64
            partition.remove(key)
            partition.trim(now: now, capacity: capacity, byteLimit: byteLimit, incoming: bytes)
            partition.entries[key] = Entry(fingerprint: fingerprint, response: nil, createdAt: now, bytes: bytes)
            partition.bytes += bytes
            partition.order.append((key, now))
            return .proceed
        }
    }

    /// Stores the answer for `key`; server errors are not kept, so a retry runs again. An answer larger
    /// than the caller's byte limit is not kept either (a retry then runs again, as after expiry).
    func finish(key scoped: String, response: HTTPResponse) {
        let (scope, key) = Self.split(scoped)
        let size = Self.size(of: response)
        partitions.withLock { partitions in
            guard var partition = partitions.removeValue(forKey: scope) else { return }
            defer { partitions[scope] = partition.entries.isEmpty ? nil : partition }
            guard var entry = partition.entries[key] else { return }
            if response.status >= 500 || size > byteLimit / 4 {
                partition.remove(key)
                return
            }
            entry.response = response
            entry.bytes += size
            partition.entries[key] = entry
            partition.bytes += size
            partition.trim(now: Date(), capacity: capacity + 1, byteLimit: byteLimit, incoming: 0)
        }
    }

    func abandon(key scoped: String) {
        let (scope, key) = Self.split(scoped)
        partitions.withLock { partitions in
            partitions[scope]?.remove(key)
            if partitions[scope]?.entries.isEmpty == true { partitions[scope] = nil }
        }
    }

    /// The key's value: a structured-field string (`"abc"`) or a bare token; 1 to 255 characters.
    static func parse(_ header: String) -> String? {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard (1...255).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { return nil }
        // The structured-field string form ("8e03978e") names the same key as the bare token.
        if value.utf8.count >= 3, value.hasPrefix("\""), value.hasSuffix("\"") { return String(value.dropFirst().dropLast()) }
        return value
    }
}
