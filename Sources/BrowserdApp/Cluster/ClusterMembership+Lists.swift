import BrowserAPI
import BrowserModel
import BrowserPostgres
import Foundation
import HTTPServer

// Lists across instances: `GET /v1/browsers` without a profile shows the windows every instance holds.
extension ClusterMembership {
    /// The windows other instances hold that the caller may see, for `GET /v1/browsers`. Profiles
    /// nobody holds (their owner died) are taken over first, so their windows are listed too. A
    /// request another instance sent (to gather its list) gets only what is held here.
    /// - Throws: a 503 when the database or another instance does not answer (retry).
    func otherWindows(_ request: HTTPRequest) async throws -> [ListedWindow] {
        if forwarder.isFromPeer(request) { return [] }
        guard databaseAnswers.withLock({ $0 }) else {
            throw HTTPError.unavailable("The database does not answer, so the instances that hold windows cannot be known; retry.", retryAfter: 1)
        }
        let caller = Principal.current
        let others: [(instanceID: String, url: String)]
        do {
            for profile in try await leases.unheldProfiles() where caller.reaches(ProfileID(rawValue: profile)) {
                _ = try? await owner(of: profile)
            }
            others = try await leases.otherLiveInstances()
        } catch {
            throw HTTPError.unavailable("The database cannot say which instances hold windows: \(PostgresStore.describe(error))", retryAfter: 1)
        }
        return try await withThrowingTaskGroup(of: [ListedWindow].self) { group in
            for (instance, url) in others {
                group.addTask { try await self.windows(heldBy: instance, at: url, for: request) }
            }
            var all: [ListedWindow] = []
            for try await some in group { all += some }
            return all
        }
    }

    /// Every window the instance at `url` holds, page after page.
    private func windows(heldBy instance: String, at url: String, for request: HTTPRequest) async throws -> [ListedWindow] {
        var found: [ListedWindow] = []
        var cursor: String?
        repeat {
            var path = "/v1/browsers?limit=1000"
            if let cursor { path += "&cursor=" + (cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor) }
            let answer: (status: Int, body: [UInt8])
            do {
                answer = try await forwarder.get(path, from: url, for: request)
            } catch {
                throw HTTPError.unavailable("Instance \(instance) did not answer for its windows; retry.", retryAfter: 1)
            }
            guard answer.status == 200, let page = Self.windowPage(answer.body) else {
                throw HTTPError.unavailable("Instance \(instance) answered \(answer.status) for its windows; retry.", retryAfter: 1)
            }
            found += page.items
            cursor = page.next
        } while cursor != nil
        return found
    }

    /// A page of `GET /v1/browsers` as another instance wrote it: each item's bytes kept as they are.
    static func windowPage(_ body: [UInt8]) -> (items: [ListedWindow], next: String?)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let items = object["items"] as? [[String: Any]],
              let raw = JSONSlices.arrayElements(body, key: "items"), raw.count == items.count else { return nil }
        var listed: [ListedWindow] = []
        listed.reserveCapacity(items.count)
        for (item, bytes) in zip(items, raw) {
            guard let id = item["id"] as? String, let created = item["createdAt"] as? String,
                  let date = JSONSlices.timestamp(created) else { return nil }
            listed.append(ListedWindow(id: id, createdAtMilliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()), json: bytes))
        }
        return (listed, object["nextCursor"] as? String)
    }
}

/// Pieces of JSON text found without re-encoding them.
enum JSONSlices {
    /// The elements of the array at top-level member `key`, each as the bytes it is written with.
    static func arrayElements(_ text: [UInt8], key: String) -> [[UInt8]]? {
        let marker = Array("\"\(key)\":".utf8)
        guard let at = text.firstRange(of: marker) else { return nil }
        var index = at.upperBound
        while index < text.count, text[index] == UInt8(ascii: " ") { index += 1 }
        guard index < text.count, text[index] == UInt8(ascii: "[") else { return nil }
        index += 1
        var elements: [[UInt8]] = []
        var depth = 0, inString = false, escaped = false, start = index
        while index < text.count {
            let byte = text[index]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { // the array's own end
                        if index > start { elements.append(Array(text[start..<index])) }
                        return elements
                    }
                    depth -= 1
                case UInt8(ascii: ",") where depth == 0:
                    elements.append(Array(text[start..<index]))
                    start = index + 1
                default: break
                }
            }
            index += 1
        }
        return nil
    }

    /// An RFC 3339 timestamp as the API writes it (`2026-11-23T20:45:17.123Z`).
    static func timestamp(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
