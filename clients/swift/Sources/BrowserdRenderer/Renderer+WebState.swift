import BrowserdClient
import Foundation

// A profile's web state kept in step with browserd (issue 52): loaded into a Chromium before any of
// the profile's pages (``loadWebState(_:)``), read back every ``RendererPolicy/webStateEvery`` and saved
// when it changed (``keepWebState()``), saved once more before Chromium stops, and loaded again when
// someone else wrote it at browserd (`profile.webState`). The decisions are ``WebStateTracker``'s.
// The regular profile's only: an incognito profile's pages keep theirs in their own browser context.
extension Renderer {
    /// Loads browserd's web state into `connection`'s Chromium: its cookies, then each origin's
    /// localStorage through a page of the renderer's own whose every request is answered with an empty
    /// document (no request leaves; no script but the renderer's runs there). Tried until it works
    /// (or the run is cancelled): pages must not load logged out, and nothing is saved before it.
    func loadWebState(_ connection: DevToolsConnection) async {
        var attempt = 0
        while !Task.isCancelled {
            do {
                let state = try await client.api.getStorageState(path: .init(profileId: options.profileID)).ok.body.json
                try await apply(state, replacing: nil, autoAttached: false, connection)
                webState.loaded(state)
                if attempt > 0 { logger.notice("web state loaded", metadata: ["attempts": "\(attempt + 1)"]) }
                return
            } catch {
                attempt += 1
                if attempt == 1 { logger.warning("web state not loaded: \(Renderer.brief(error)); trying again every second") }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Puts `state` into Chromium: its cookies replace them all, and each origin's localStorage
    /// (those of `previous` that it no longer has are emptied).
    /// - Parameter autoAttached: whether Chromium attaches new targets itself now (they then wait for the
    ///   renderer's word; before that, at Chromium's start, the renderer attaches its page itself).
    private func apply(
        _ state: WebStateTracker.State, replacing previous: WebStateTracker.State?, autoAttached: Bool, _ connection: DevToolsConnection
    ) async throws {
        let timeout = options.policy.quickCommandTimeout
        if previous != nil { try await connection.call("Storage.clearCookies", timeout: timeout) }
        if !state.cookies.isEmpty {
            try await connection.call("Storage.setCookies", ["cookies": .array(state.cookies.map(WebStateTracker.devToolsParameter))], timeout: timeout)
        }
        var origins = Dictionary(state.origins.map { ($0.origin, $0.localStorage) }, uniquingKeysWith: { _, last in last })
        for gone in previous?.origins ?? [] where origins[gone.origin] == nil { origins[gone.origin] = [] }
        guard !origins.isEmpty else { return }
        try await seedLocalStorage(origins, autoAttached: autoAttached, connection)
    }

    /// Writes each origin's localStorage (replacing it) from a blank page of the renderer's own.
    private func seedLocalStorage(_ origins: [String: [WebStateTracker.Item]], autoAttached: Bool, _ connection: DevToolsConnection) async throws {
        let timeout = options.policy.quickCommandTimeout
        let created = try await connection.call("Target.createTarget", ["url": "about:blank"], timeout: timeout)
        guard let target = created["targetId"]?.string else { throw DevToolsError.closed }
        defer { Task { _ = try? await connection.call("Target.closeTarget", ["targetId": .string(target)]) } }
        let attached =
            autoAttached
            ? await session(for: target)
            : try await connection.call("Target.attachToTarget", ["targetId": .string(target), "flatten": true], timeout: timeout)["sessionId"]?.string
        guard let session = attached else { throw DevToolsError.timedOut(method: "Target.attachedToTarget") }
        // Every request of this page is answered here: an empty document at the origin's address.
        let blank = Data("<!doctype html><title></title>".utf8).base64EncodedString()
        let route = connection.session(session) { event in
            guard event.method == "Fetch.requestPaused", let id = event.params["requestId"]?.string else { return }
            Task {
                _ = try? await connection.call(
                    "Fetch.fulfillRequest",
                    [
                        "requestId": .string(id), "responseCode": 200,
                        "responseHeaders": [["name": "Content-Type", "value": "text/html"]], "body": .string(blank),
                    ], session: session)
            }
        }
        defer { connection.endSession(route.id) }
        try await connection.call("Fetch.enable", ["patterns": [["urlPattern": "*"]]], session: session, timeout: timeout)
        try await connection.call("Page.enable", session: session, timeout: timeout)
        if autoAttached { try await connection.call("Runtime.runIfWaitingForDebugger", session: session, timeout: timeout) }
        for (origin, items) in origins.sorted(by: { $0.key < $1.key }) {
            try await connection.call("Page.navigate", ["url": .string(origin + "/")], session: session, timeout: options.policy.startTimeout)
            let storage: JSONValue = ["securityOrigin": .string(origin), "isLocalStorage": true]
            try await connection.call("DOMStorage.clear", ["storageId": storage], session: session, timeout: timeout)
            for item in items {
                try await connection.call(
                    "DOMStorage.setDOMStorageItem", ["storageId": storage, "key": .string(item.name), "value": .string(item.value)], session: session,
                    timeout: timeout)
            }
        }
    }

    /// Reads Chromium's web state every ``RendererPolicy/webStateEvery`` and saves it when it changed.
    func keepWebState() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: options.policy.webStateEvery)
            await saveWebState()
        }
    }

    /// Reads Chromium's cookies and the live pages' localStorage, and saves the state when it changed.
    func saveWebState() async {
        guard let connection = chromium?.connection, webState.stored != nil, !webStateApplying else { return }
        let generation = webStateGeneration
        let timeout = options.policy.quickCommandTimeout
        var attempted: WebStateTracker.State?
        do {
            let answer = try await connection.call("Storage.getCookies", timeout: timeout)
            let cookies = (answer["cookies"]?.array ?? []).compactMap(WebStateTracker.cookie(fromDevTools:))
            // The regular profile's live pages, by the origin Chromium says each is at (never the page's word).
            var sessions: [String: String] = [:]
            for entry in table.entries.values where windowProfile[entry.window] == options.profileID {
                if let target = entry.target, let session = entry.session { sessions[target] = session }
            }
            var pages: [String: [WebStateTracker.Item]] = [:]
            if !sessions.isEmpty {
                let targets = (try await connection.call("Target.getTargets", timeout: timeout))["targetInfos"]?.array ?? []
                for info in targets {
                    guard let target = info["targetId"]?.string, let session = sessions[target], let url = info["url"]?.string,
                        let origin = WebStateTracker.origin(of: url), pages[origin] == nil
                    else { continue }
                    let storage: JSONValue = ["securityOrigin": .string(origin), "isLocalStorage": true]
                    guard let entries = try? await connection.call("DOMStorage.getDOMStorageItems", ["storageId": storage], session: session, timeout: timeout)
                    else { continue }
                    pages[origin] = (entries["entries"]?.array ?? []).compactMap { pair in
                        guard let pair = pair.array, pair.count == 2, let name = pair[0].string, let value = pair[1].string else { return nil }
                        return WebStateTracker.Item(name: name, value: value)
                    }
                }
            }
            // A load of browserd's state began while this reading was made: the reading may be from
            // before it, or of half of it; the next one says what Chromium holds then.
            guard !webStateApplying, generation == webStateGeneration else { return }
            guard let changed = webState.read(cookies: cookies, pages: pages) else { return }
            attempted = changed
            _ = try await client.api.putStorageState(path: .init(profileId: options.profileID), body: .json(changed)).ok
            webState.saved(changed)
            options.metrics?.webStateSaves.increment()
            logger.debug("web state saved", metadata: ["cookies": "\(changed.cookies.count)", "origins": "\(changed.origins.count)"])
        } catch {
            // A refusal that retrying cannot change (past a limit: 413, 422, 507) is not sent again as it
            // is, and said once; anything else is tried again at the next reading.
            if let problem = BrowserdProblem.from(error), [413, 422, 507].contains(problem.status), let state = attempted {
                webState.refused(state)
                logger.warning("web state refused by browserd; kept in Chromium only until it changes: \(problem.description)")
            } else {
                logger.debug("web state not saved: \(Renderer.brief(error))")
            }
        }
    }

    /// browserd says the profile's web state changed: unless it is the renderer's own save coming
    /// back, what browserd holds now is loaded into Chromium (pages loaded after it see it).
    func webStateChangedAtBrowserd() async {
        guard let connection = chromium?.connection, let previous = webState.stored else { return }
        webStateApplying = true
        webStateGeneration += 1
        defer { webStateApplying = false }
        do {
            let state = try await client.api.getStorageState(path: .init(profileId: options.profileID)).ok.body.json
            guard !webState.isCurrent(state) else { return }
            try await apply(state, replacing: previous, autoAttached: true, connection)
            webState.loaded(state)
            logger.info("web state written at browserd loaded into Chromium", metadata: ["cookies": "\(state.cookies.count)"])
        } catch {
            logger.warning("web state written at browserd not loaded: \(Renderer.brief(error))")
        }
    }
}
