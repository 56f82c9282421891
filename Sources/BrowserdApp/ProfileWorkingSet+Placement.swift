import BrowserAPI
import BrowserModel
import BrowserServices
import HTTPServer

// The working set as the API's placement stage (after authentication): a request whose profile is in
// memory is served at once (and marks it used); one whose profile is stored but not loaded waits for
// it to load, then is served here. Listing every window loads the profiles the caller reaches.
extension ProfileWorkingSet: RequestPlacement {
    func placeAtOnce(_ request: HTTPRequest) -> PlacedAtOnce {
        if RequestSubject.isNewWebDriverSession(request, basePath: webDriverBasePath) { return .undecided }
        guard let subject = RequestSubject(request) else {
            return listsEveryWindow(request) && service.hasStoredElsewhere ? .undecided : .here
        }
        // Not in memory (or being dropped): `place` loads it; an id nothing holds is answered there too.
        guard let root = root(of: subject), touch(root) else { return .undecided }
        return .here
    }

    func place(_ request: HTTPRequest) async -> HTTPResponse? {
        do {
            // A request loads only a profile its caller may use (the administrator, or that profile's
            // token): any other id is answered 404 by the handler, as an id nothing holds, and stays
            // on disk (nothing of another tenant's is read, loaded or counted for it).
            let caller = Principal.current
            if RequestSubject.isNewWebDriverSession(request, basePath: webDriverBasePath) {
                if let id = webDriverSessionProfile(request), caller.reaches(id) { try await ensureLoaded(id) }
                return nil
            }
            guard let subject = RequestSubject(request) else {
                if listsEveryWindow(request) {
                    for id in service.storedElsewhere() where caller.reaches(id) { try await ensureLoaded(id) }
                }
                return nil
            }
            if let root = root(of: subject), touch(root) { return nil }
            if let stored = try await unloadedProfile(holding: subject) {
                guard caller.reaches(stored) else { return nil }
                try await ensureLoaded(stored)
            } else if let root = root(of: subject), caller.reaches(root) {
                // It was being dropped when the request came: back in memory now.
                try await ensureLoaded(root)
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
}
