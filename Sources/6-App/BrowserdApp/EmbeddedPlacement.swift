import BrowserAPI
import BrowserAccess
import BrowserModel
import BrowserResidency
import BrowserServices
import HTTPServer
import Logging

/// The embedded store's placement stage (after authentication): a request whose profile is in memory
/// is served at once (and marks it used); one whose profile is stored but not loaded waits for it to
/// load (``ProfileResidency``), then is served here. Listing every window loads the profiles the caller
/// reaches. At start no profile is in memory (the directory of stored ones is).
final class EmbeddedPlacement: RequestPlacement {
    let residency: ProfileResidency
    let reader: StoreReader
    let tokens: TokenStore
    let webDriverBasePath: String?
    let logger: Logger

    var service: BrowserService { residency.service }

    init(residency: ProfileResidency, reader: StoreReader, tokens: TokenStore, webDriverBasePath: String?, logger: Logger) {
        self.residency = residency
        self.reader = reader
        self.tokens = tokens
        self.webDriverBasePath = webDriverBasePath
        self.logger = logger
    }

    func placeAtOnce(_ request: HTTPRequest) -> PlacedAtOnce {
        if RequestSubject.isNewWebDriverSession(request, basePath: webDriverBasePath) { return .undecided }
        guard let subject = RequestSubject(request) else {
            return listsEveryWindow(request) && service.hasStoredElsewhere ? .undecided : .here
        }
        // Not in memory (or loading, or being dropped): `place` waits for it; an id nothing holds is
        // answered there too.
        guard let root = residency.root(of: subject), residency.touch(root) else { return .undecided }
        return .here
    }

    func place(_ request: HTTPRequest) async -> HTTPResponse? {
        do {
            // A request loads only a profile its caller may use (the administrator, or that profile's
            // token): any other id is answered 404 by the handler, as an id nothing holds, and stays
            // on disk (nothing of another tenant's is read, loaded or counted for it).
            let caller = Principal.current
            if RequestSubject.isNewWebDriverSession(request, basePath: webDriverBasePath) {
                if let id = webDriverSessionProfile(request), caller.reaches(id) { try await residency.bringIn(id) }
                return nil
            }
            guard let subject = RequestSubject(request) else {
                if listsEveryWindow(request) {
                    for id in service.storedElsewhere() where caller.reaches(id) { try await residency.bringIn(id) }
                }
                return nil
            }
            if let root = residency.root(of: subject), residency.touch(root) { return nil }
            if let stored = try await unloadedProfile(holding: subject) {
                guard caller.reaches(stored) else { return nil }
                try await residency.bringIn(stored)
            } else if let root = residency.root(of: subject), caller.reaches(root) {
                // It was loading or being dropped when the request came: in memory now.
                try await residency.bringIn(root)
            }
            // Served here: the handler finds it, or answers 404 for an id nothing holds.
            return nil
        } catch {
            logger.error("loading a profile failed", metadata: ["path": "\(request.path)", "error": "\(error)"])
            // Nothing of it is held (a load builds the profile whole, or not at all): a later request loads it.
            return HTTPError.storageUnavailable("The profile could not be read from storage; nothing was changed. Retry later.", retryAfter: 1)
                .response(instance: request.path)
        }
    }

    /// `GET /v1/browsers` without a profile: every window the caller reaches.
    private func listsEveryWindow(_ request: HTTPRequest) -> Bool {
        (request.method == .get || request.method == .head) && request.routeTemplate == "/v1/browsers"
    }

    /// The stored regular profile that holds `subject`, if the directory lists it as not loaded.
    func unloadedProfile(holding subject: RequestSubject) async throws -> ProfileID? {
        let found: String? =
            switch subject {
            case .profile(let id): id
            case .window(let id): try await reader.read { try $0.profile(ofWindow: id) }
            case .tab(let id): try await reader.read { try $0.profile(ofTab: id) }
            case .group(let id): try await reader.read { try $0.profile(ofGroup: id) }
            }
        // A profile deleted in memory is out of the directory at once, though its rows stay until
        // the delete commits: it is never loaded again.
        guard let found, service.isStoredElsewhere(ProfileID(rawValue: found)) else { return nil }
        return ProfileID(rawValue: found)
    }

    /// Where a new WebDriver session will live (as the facade picks it): its `browserd:profileId`, else
    /// a profile token's own profile, else the oldest profile named "webdriver".
    func webDriverSessionProfile(_ request: HTTPRequest) -> ProfileID? {
        if let id = RequestSubject.webDriverCapabilityProfile(request) { return service.rootProfile(of: ProfileID(rawValue: id)) ?? ProfileID(rawValue: id) }
        if let own = tokens.tokenProfile(of: request) { return own }
        return ProfileResidency.sharedWebDriverProfile(among: service.directoryProfiles())?.id
    }
}
