public import BrowserAPI
import BrowserAccess
import BrowserModel
import BrowserPostgres
import BrowserRecords
import ClusterCore
import Foundation
public import HTTPServer

// Lists across instances: `GET /v1/browsers` without a profile shows the windows every instance holds.
extension ClusterMembership {
    /// The windows other instances hold that the caller may see, for `GET /v1/browsers`. Profiles
    /// nobody holds (their owner died) are taken over first, so their windows are listed too. A
    /// request another instance sent (to gather its list) gets only what is held here.
    /// - Throws: a 503 when the database or another instance does not answer (retry).
    public func otherWindows(_ request: HTTPRequest) async throws -> [ListedWindow] {
        if forwarder.isFromPeer(request) { return [] }
        guard databaseAnswers else {
            throw HTTPError.storageUnavailable("The database does not answer, so the instances that hold windows cannot be known; retry.", retryAfter: 1)
        }
        let caller = Principal.current
        let others: [(instanceID: InstanceID, url: String)]
        do {
            for profile in try await leases.unheldProfiles() where caller.reaches(ProfileID(rawValue: profile)) {
                try await ensureHeld(profile)
            }
            others = try await leases.otherLiveInstances()
        } catch let failed as ClusterHolding.TakeoverFailed {
            // Its windows cannot be listed: the whole list is refused, never answered without them.
            throw HTTPError.storageUnavailable("Profile \(failed.profile) could not be taken over, so its windows cannot be listed; retry.", retryAfter: 1)
        } catch {
            throw HTTPError.storageUnavailable("The database cannot say which instances hold windows: \(PostgresStore.describe(error))", retryAfter: 1)
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
    private func windows(heldBy instance: InstanceID, at url: String, for request: HTTPRequest) async throws -> [ListedWindow] {
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
        guard let (page, spans) = try? JSONParser.parse(body, spanning: "items"), let items = page["items"]?.array,
            spans.count == items.count
        else { return nil }
        var listed: [ListedWindow] = []
        listed.reserveCapacity(items.count)
        for (item, span) in zip(items, spans) {
            guard let id = item["id"]?.string, let created = item["createdAt"]?.string,
                let date = JSONText.date(fromTimestamp: created)
            else { return nil }
            listed.append(
                ListedWindow(
                    id: id, createdAtMilliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()),
                    json: Array(body[span])))
        }
        return (listed, page["nextCursor"]?.string)
    }
}
