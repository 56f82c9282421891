public import BrowserRecords
import Crypto
public import Foundation
import HTTPServer
import Synchronization

/// Answers kept per `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header): a retry with the
/// same key and body gets the stored answer; the same key with another body is refused (422); a retry
/// while the first request runs is refused (409). Keys expire after ``lifetime`` (24 h) and are
/// scoped to the caller.
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
    }

    static let lifetime: TimeInterval = IdempotencyRecord.lifetime
    let capacity: Int
    private let entries = Mutex<[String: Entry]>([:])

    public init(capacity: Int = 100_000) { self.capacity = capacity }

    /// Takes back the answers stored in the database (newest kept when there are more than fit).
    public func restore(_ records: [IdempotencyRecord], now: Date = Date()) {
        entries.withLock { entries in
            for record in records.suffix(capacity) where now.timeIntervalSince(record.createdAt) < Self.lifetime {
                let headers = HTTPHeaders(record.headers.map { (name: $0.name, value: $0.value) })
                entries[record.key] = Entry(fingerprint: record.fingerprint,
                                            response: HTTPResponse(status: record.status, headers: headers, body: .bytes(record.body)),
                                            createdAt: record.createdAt)
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
        return IdempotencyRecord(key: key, fingerprint: fingerprint, status: response.status,
                                 headers: headers.map { .init(name: $0.name, value: $0.value) }, body: body, createdAt: now)
    }

    static func fingerprint(_ request: HTTPRequest) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: Array("\(request.method.rawValue) \(request.path)\n".utf8))
        hasher.update(data: request.body)
        return Array(hasher.finalize())
    }

    func begin(key: String, fingerprint: [UInt8], now: Date = Date()) -> Begin {
        entries.withLock { entries in
            if let entry = entries[key], now.timeIntervalSince(entry.createdAt) < Self.lifetime {
                guard entry.fingerprint == fingerprint else { return .mismatch }
                guard let response = entry.response else { return .inFlight }
                return .replay(response)
            }
            if entries.count >= capacity {
                entries = entries.filter { now.timeIntervalSince($0.value.createdAt) < Self.lifetime }
                if entries.count >= capacity, let oldest = entries.min(by: { $0.value.createdAt < $1.value.createdAt })?.key {
                    entries[oldest] = nil
                }
            }
            entries[key] = Entry(fingerprint: fingerprint, response: nil, createdAt: now)
            return .proceed
        }
    }

    /// Stores the answer for `key`; server errors are not kept, so a retry runs again.
    func finish(key: String, response: HTTPResponse) {
        entries.withLock { entries in
            if response.status >= 500 { entries[key] = nil } else { entries[key]?.response = response }
        }
    }

    func abandon(key: String) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
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
