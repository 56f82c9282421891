import BrowserAPI
import BrowserModel
import BrowserPostgres
import BrowserRecords
import BrowserServices
import ClusterCore
import Foundation
import HTTPServer
import Metrics

/// Finds the instance that holds an off-the-record profile, or a window, tab or group of one: the
/// database never has them, only their owner's memory does.
///
/// The owners of the incognito profiles the directory announced are asked first (for a profile: its
/// regular profile's owner), then every other live instance (the directory may not have heard of a
/// profile made a moment ago); each is asked with a read of the subject (`GET`, as the client), and the
/// request goes to the one that has it.
struct OffTheRecordSearch: Sendable {
    let service: BrowserService
    let leases: ProfileLeases
    let lookups: ClusterLookups
    let forwarder: Forwarder
    let forwarded: Counter

    /// The answer of the instance that has `subject`, or nil when none does (the handler's 404 here),
    /// or when another instance forwarded the request (one hop at most).
    /// - Throws: the database could not be read.
    func place(_ subject: Placement.Subject, _ request: HTTPRequest) async throws -> HTTPResponse? {
        guard !forwarder.isFromPeer(request) else { return nil }
        let elsewhere = service.directoryProfiles().filter { $0.incognito && !service.holdsProfile($0.parentID ?? $0.id) }
        let parents: [ProfileID]
        if case .profile(let id) = subject {
            parents = elsewhere.first(where: { $0.id.rawValue == id })?.parentID.map { [$0] } ?? []
        } else {
            parents = Array(Set(elsewhere.compactMap(\.parentID)))
        }
        var candidates: [String] = []
        for parent in parents {
            if let owner = try await lookups.liveOwner(of: parent.rawValue), !candidates.contains(owner.url) { candidates.append(owner.url) }
        }
        let others: [(instanceID: InstanceID, url: String)]
        do { others = try await leases.otherLiveInstances() } catch { throw ClusterLookups.Failure(description: PostgresStore.describe(error)) }
        for other in others where !candidates.contains(other.url) { candidates.append(other.url) }
        let probe = Self.readPath(of: subject)
        for url in candidates {
            guard let found = try? await forwarder.get(probe, from: url, for: request), found.status == 200 else { continue }
            forwarded.increment()
            do {
                return try await forwarder.forward(request, to: url)
            } catch {
                return PlacementInterpreter.unavailable("The instance that holds this incognito resource did not answer; retry.", request)
            }
        }
        return nil
    }

    /// The path that reads `subject` (its existence, for the caller).
    static func readPath(of subject: Placement.Subject) -> String {
        let (base, id): (String, String) =
            switch subject {
            case .profile(let id): ("/v1/profiles/", id)
            case .window(let id): ("/v1/browsers/", id)
            case .tab(let id): ("/v1/tabs/", id)
            case .group(let id): ("/v1/groups/", id)
            }
        return base + (id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)
    }
}
