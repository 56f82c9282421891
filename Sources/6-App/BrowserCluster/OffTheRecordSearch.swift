import BrowserAPI
import BrowserModel
import BrowserPostgres
import BrowserRecords
import BrowserServices
import ClusterCore
import Foundation
import HTTPServer
import Metrics

/// Finds the instance that holds an off-the-record profile, or a window, tab or group of one: asks the
/// candidates ``OffTheRecordCandidates`` orders with a read of the subject (`GET`, as the client), and
/// the request goes to the first that has it.
struct OffTheRecordSearch: Sendable {
    let service: BrowserService
    let leases: ProfileLeases
    let lookups: ClusterLookups
    let forwarder: Forwarder
    let forwarded: Counter

    /// The answer of the instance that has `subject`; a 503 when none has it but one could not say
    /// (a timeout, a 5xx); nil when every instance said it has not (the handler's 404 here), or when
    /// another instance forwarded the request (one hop at most).
    /// - Throws: the database could not be read.
    func place(_ subject: Placement.Subject, _ request: HTTPRequest) async throws -> HTTPResponse? {
        guard !forwarder.isFromPeer(request) else { return nil }
        var announced: [OffTheRecordCandidates.Announced] = []
        for profile in service.directoryProfiles() where profile.incognito {
            guard let parent = profile.parentID, !service.holdsProfile(parent) else { continue }
            announced.append(OffTheRecordCandidates.Announced(id: profile.id.rawValue, parentID: parent.rawValue))
        }
        var parentOwners: [String] = []
        for parent in OffTheRecordCandidates.parents(of: subject, announced: announced) {
            if let owner = try await lookups.liveOwner(of: ProfileID(rawValue: parent)) { parentOwners.append(owner.url) }
        }
        let others: [(instanceID: InstanceID, url: String)]
        do { others = try await leases.otherLiveInstances() } catch { throw ClusterLookups.Failure(error) }
        let candidates = OffTheRecordCandidates.order(parentOwners: parentOwners, otherInstances: others.map(\.url))
        let probe = Self.readPath(of: subject)
        var answers: [OffTheRecordCandidates.Answer] = []
        for url in candidates {
            let status = try? await forwarder.get(probe, from: url, for: request).status
            let answer = OffTheRecordCandidates.answer(status: status)
            answers.append(answer)
            guard answer == .has else { continue }
            forwarded.increment()
            do {
                return try await forwarder.forward(request, to: url)
            } catch {
                return PlacementInterpreter.unavailable("The instance that holds this incognito resource did not answer; retry.", request)
            }
        }
        // Not found only when every instance said so: one that could not say may hold it (issue 53).
        if OffTheRecordCandidates.nobodyHasIt(answers) == .unavailable {
            return PlacementInterpreter.unavailable("An instance that may hold this incognito resource did not answer; retry.", request)
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
