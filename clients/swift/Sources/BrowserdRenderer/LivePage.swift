import BrowserdClient
import Foundation
import Logging

/// One live tab's page in Chromium (a target in a Chromium window of its own, so that it renders as
/// a visible tab): made when the tab becomes live, closed when it stops being live. Its inputs (the
/// model's states of the tab, the page's DevTools events) are handled one at a time, in order, by
/// its own task, through ``PageSync``; this type only carries the actions out.
final class LivePage: Sendable {
    enum Input: Sendable {
        case model(ModelTab)
        case devtools(DevToolsEvent)
    }

    let tabID: String
    private let continuation: AsyncStream<Input>.Continuation
    private let task: Task<Void, Never>

    /// A target Chromium made by itself (a popup), attached and waiting for the debugger: the page
    /// adopts it instead of making one.
    struct Adopted: Sendable {
        var targetID: String
        var sessionID: String
    }

    /// - Parameters:
    ///   - adopting: a popup's target, for the tab made for it; nil makes a target for the tab.
    ///   - session: the session Chromium attached to a target the page made (every new target is
    ///     attached, waiting for the debugger, and the page resumes it once its policy is in place).
    ///   - register: called with the page's DevTools session and target once attached (its events
    ///     come through ``send(_:)``).
    init(
        tab: ModelTab, connection: DevToolsConnection, client: BrowserdClient, browserContextID: String?, adopting: Adopted? = nil,
        policy: RendererPolicy = .standard, logger: Logger, session: @escaping @Sendable (_ target: String) async -> String?,
        register: @escaping @Sendable (_ session: String, _ target: String) async -> Void
    ) {
        tabID = tab.id
        let (inputs, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        self.continuation = continuation
        task = Task {
            var worker = Worker(tab: tab, adopting: adopting != nil, connection: connection, client: client, policy: policy, logger: logger)
            await worker.run(inputs: inputs, browserContextID: browserContextID, adopting: adopting, session: session, register: register)
        }
    }

    func send(_ input: Input) { continuation.yield(input) }

    /// Ends it: its target is closed (unless the browser is gone) and its task ends.
    func close(closingTarget: Bool) async {
        continuation.finish()
        if !closingTarget { task.cancel() }
        await task.value
    }
}

/// The page's script: reports the top document's title and favicon through a binding whenever
/// they change (`document.title` set late, a `<link rel=icon>` added), as Chromium's tab strip sees them.
let pageStateScript = """
    (() => {
      if (window !== window.top) return;
      let last = null;
      const report = () => {
        const icon = document.querySelector('link[rel~="icon"]');
        const state = JSON.stringify({ url: location.href, title: document.title, favicon: icon ? icon.href : null });
        if (state === last) return;
        last = state;
        try { globalThis.__browserdPageState(state); } catch (e) {}
      };
      new MutationObserver(report).observe(document, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['href', 'rel'] });
      document.addEventListener('DOMContentLoaded', report);
      window.addEventListener('load', report);
    })();
    """

private struct Worker {
    var sync: PageSync
    let connection: DevToolsConnection
    let client: BrowserdClient
    let policy: RendererPolicy
    let logger: Logger
    var targetID: String?
    var sessionID: String?
    var mainFrameID: String?
    /// The page closed itself (`window.close()`): its target is gone already.
    var closedByPage = false
    /// Whether a document committed yet (the first one drops the initial about:blank entry).
    var committedOnce = false
    /// Whether a document of the page's own has committed (a picture is taken only then).
    var documentCommitted = false
    /// The picture put last (the same picture is not put twice).
    var lastSnapshot: Data?
    let clock = ContinuousClock()
    let started = ContinuousClock.now

    init(tab: ModelTab, adopting: Bool, connection: DevToolsConnection, client: BrowserdClient, policy: RendererPolicy, logger: Logger) {
        sync = adopting ? PageSync(adopting: tab) : PageSync(model: tab)
        self.connection = connection
        self.client = client
        self.policy = policy
        self.logger = logger
    }

    var now: Double {
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    mutating func run(
        inputs: AsyncStream<LivePage.Input>, browserContextID: String?, adopting: LivePage.Adopted?,
        session attachedSession: @Sendable (String) async -> String?, register: @Sendable (String, String) async -> Void
    ) async {
        do {
            if let adopting {
                targetID = adopting.targetID
                sessionID = adopting.sessionID
            } else {
                var params: [String: JSONValue] = ["url": "about:blank", "newWindow": true]
                if let browserContextID { params["browserContextId"] = .string(browserContextID) }
                let target = try await connection.call("Target.createTarget", .object(params))
                targetID = target["targetId"]?.string
                guard let targetID else { return }
                sessionID = await attachedSession(targetID)
                if sessionID == nil { logger.warning("page for tab \(sync.model.id): Chromium attached no session to its target") }
            }
            guard let targetID, let sessionID else { return }
            await register(sessionID, targetID)
            // Requests to loopback wait for a decision (LoopbackPolicy, taken by the renderer as each
            // arrives, never behind this page's own work): browserd's API and other local services are out
            // of a page's reach unless their origin is allowed.
            try await call("Fetch.enable", ["patterns": .array(LoopbackPolicy.patterns.map { ["urlPattern": .string($0)] })])
            // The page's own domains, its binding and script: sent in order, answered once the target
            // runs (a popup's renderer answers only after `runIfWaitingForDebugger`, which goes last,
            // so Chromium takes them all before the page's first document).
            let (connection, session) = (connection, sessionID)
            async let page = connection.call("Page.enable", session: session)
            async let lifecycle = connection.call("Page.setLifecycleEventsEnabled", ["enabled": true], session: session)
            async let runtime = connection.call("Runtime.enable", session: session)
            async let binding = connection.call("Runtime.addBinding", ["name": "__browserdPageState"], session: session)
            async let script = connection.call("Page.addScriptToEvaluateOnNewDocument", ["source": .string(pageStateScript)], session: session)
            async let tree = connection.call("Page.getFrameTree", session: session)
            async let inspector = connection.call("Inspector.enable", session: session)
            // Every new target waits for the debugger until the policy and the script are in place.
            async let run = connection.call("Runtime.runIfWaitingForDebugger", session: session)
            _ = try await (page, lifecycle, runtime, binding, script, inspector, run)
            mainFrameID = try await tree["frameTree"]?["frame"]?["id"]?.string
            if adopting != nil {
                // A popup's first document loads now, and its commit becomes the tab's entry.
                committedOnce = true
            } else {
                await perform(sync.start())
            }
        } catch {
            logger.warning("page for tab \(sync.model.id) not made: \(error)")
        }
        for await input in inputs {
            switch input {
            case .model(let tab): await perform(sync.event(.model(tab), now: now))
            case .devtools(let event): await handle(event)
            }
        }
        // Closed: its picture as it leaves (what the tab switcher shows of it from now on), then the
        // target goes too, unless the browser is gone (then the task was cancelled).
        if !Task.isCancelled, !closedByPage, let targetID {
            await takeSnapshot()
            await closeTarget(targetID)
        }
    }

    /// Closes the page's target, and closes it again while it is still there: Chromium answers
    /// `Target.closeTarget` of a page in the middle of a load and keeps the page (seen for about one
    /// page in ten while a window's tabs open quickly); a second close, once the load went on, ends it.
    func closeTarget(_ targetID: String) async {
        for attempt in 0..<policy.closeAttempts {
            _ = try? await connection.call("Target.closeTarget", ["targetId": .string(targetID)], timeout: policy.quickCommandTimeout)
            try? await Task.sleep(for: policy.closeRetryInterval)
            // Gone: getTargetInfo fails with "No target with given id found".
            guard (try? await connection.call("Target.getTargetInfo", ["targetId": .string(targetID)], timeout: policy.quickCommandTimeout)) != nil
            else {
                return
            }
            logger.debug("page for tab \(sync.model.id): its target is still open after a close (attempt \(attempt + 1))")
        }
        logger.warning("page for tab \(sync.model.id): its target did not close")
    }

    /// Takes a small JPEG of the page as it shows now (a tenth of its pixels) and puts it as the tab's
    /// picture, unless it is the picture put last or the page shows nothing of its own (crashed, blank).
    mutating func takeSnapshot() async {
        // Not before the page's own first document has committed: a new page's or a popup's initial
        // blank document is no picture of it (and a popup is mid-navigation then).
        guard documentCommitted, !sync.model.crashed, sessionID != nil else { return }
        do {
            let metrics = try await call("Page.getLayoutMetrics", timeout: policy.quickCommandTimeout)
            let viewport = metrics["cssLayoutViewport"]
            let width = viewport?["clientWidth"]?.double ?? 800
            let height = viewport?["clientHeight"]?.double ?? 600
            let shot = try await call(
                "Page.captureScreenshot",
                [
                    "format": "jpeg", "quality": .number(Double(policy.snapshotQuality)), "optimizeForSpeed": true,
                    "clip": ["x": 0, "y": 0, "width": .number(width), "height": .number(height), "scale": .number(policy.snapshotScale)],
                ], timeout: policy.snapshotTimeout)
            guard let base64 = shot["data"]?.string, let bytes = Data(base64Encoded: base64), bytes.starts(with: [0xFF, 0xD8, 0xFF]) else {
                return
            }
            guard bytes != lastSnapshot else { return }
            _ = try await client.api.putTabSnapshot(path: .init(tabId: sync.model.id), body: .jpeg(.init(bytes))).ok
            lastSnapshot = bytes
            logger.debug("tab \(sync.model.id): snapshot put (\(bytes.count) bytes)")
        } catch {
            logger.debug("tab \(sync.model.id): no snapshot: \(error)")
        }
    }

    @discardableResult
    func call(_ method: String, _ params: JSONValue = [:], timeout: Duration? = nil) async throws -> JSONValue {
        try await connection.call(method, params, session: sessionID, timeout: timeout ?? policy.commandTimeout)
    }

    mutating func handle(_ event: DevToolsEvent) async {
        logger.trace("page event", metadata: ["tab": "\(sync.model.id)", "method": "\(event.method)"])
        switch event.method {
        case "Page.frameNavigated":
            guard event.params["frame"]?["parentId"] == nil else { return }
            mainFrameID = event.params["frame"]?["id"]?.string ?? mainFrameID
            let frame = event.params["frame"]
            let url = frame?["url"]?.string.map { $0 + (frame?["urlFragment"]?.string ?? "") }
            await historyChanged(loaderID: frame?["loaderId"]?.string, url: url)
        case "Page.navigatedWithinDocument":
            guard event.params["frameId"]?.string == mainFrameID else { return }
            await historyChanged(loaderID: nil, url: event.params["url"]?.string)
        case "Page.frameStartedLoading":
            guard event.params["frameId"]?.string == mainFrameID else { return }
            await perform(sync.event(.loading(true, progress: 0.1), now: now))
        case "Page.lifecycleEvent":
            guard event.params["frameId"]?.string == mainFrameID, event.params["name"]?.string == "DOMContentLoaded" else { return }
            await perform(sync.event(.loading(true, progress: 0.7), now: now))
        case "Page.frameStoppedLoading":
            guard event.params["frameId"]?.string == mainFrameID else { return }
            await perform(sync.event(.loading(false, progress: 1), now: now))
            // The page has loaded: its picture, for a tab switcher (Chrome's tab grid).
            await takeSnapshot()
        case "Target.detachedFromTarget", "Inspector.detached":
            // The page closed itself (`window.close()`, which Chromium allows a page with one history
            // entry or opened by script): its tab closes, as Chromium's `WebStateDelegate::CloseWebState`.
            // (A target the renderer closes is no longer followed by then.)
            guard event.method == "Target.detachedFromTarget" || event.params["reason"]?.string == "target_closed", !closedByPage
            else { return }
            closedByPage = true
            do {
                _ = try await client.api.closeTab(path: .init(tabId: sync.model.id)).noContent
            } catch {
                logger.warning("tab \(sync.model.id): the page closed itself, but its tab could not be closed: \(error)")
            }
        case "Inspector.targetCrashed":
            await perform(sync.event(.crashed, now: now))
        case "Runtime.bindingCalled":
            guard event.params["name"]?.string == "__browserdPageState", let payload = event.params["payload"]?.string,
                let state = try? JSONDecoder().decode(JSONValue.self, from: Data(payload.utf8))
            else { return }
            await perform(
                sync.event(
                    .pageState(title: state["title"]?.string ?? "", faviconURL: state["favicon"]?.string, url: state["url"]?.string), now: now))
        default:
            break
        }
    }

    mutating func historyChanged(loaderID: String?, url: String?) async {
        var answer: PageHistory?
        for attempt in 0..<policy.historyAttempts {
            do {
                let history = PageHistory(try await call("Page.getNavigationHistory"))
                answer = history
                // Asked while the commit is under way, Chromium may answer with the entry not filled
                // in yet (a popup's first entry with an empty URL, seen about once in ten popups): asked
                // again, it shows the URL that committed.
                guard let history, let url, PageSync.pageCanShow(url), !history.holds(url) else { break }
                logger.debug("tab \(sync.model.id): navigation history without \(url) yet (attempt \(attempt))")
            } catch {
                logger.debug("tab \(sync.model.id): no navigation history (attempt \(attempt)): \(error)")
            }
            try? await Task.sleep(for: policy.historyRetryInterval)
        }
        guard var history = answer else { return }
        if let url, PageSync.pageCanShow(url), !history.holds(url), history.current?.url == "" { history.entries[history.currentIndex].url = url }
        // The page is made blank (so that the loopback policy is in place before its first request),
        // and that blank document left an entry: once the first document commits, the entry goes, as
        // a new tab's initial empty document leaves none in Chromium (`history.back()` cannot reach it,
        // and `window.close()` is allowed as to a page with one entry).
        if !committedOnce {
            committedOnce = true
            if history.entries.count == 2, history.currentIndex == 1, history.entries[0].url == "about:blank",
                (try? await call("Page.resetNavigationHistory")) != nil, let again = try? await call("Page.getNavigationHistory"),
                let fresh = PageHistory(again)
            {
                history = fresh
            }
        }
        logger.trace("page history", metadata: ["tab": "\(sync.model.id)", "history": "\(history)"])
        if let current = history.current, PageSync.pageCanShow(current.url) { documentCommitted = true }
        await perform(sync.event(.committed(history, loaderID: loaderID, url: url), now: now))
    }

    mutating func perform(_ actions: [PageSync.Action]) async {
        for action in actions {
            logger.trace("page action", metadata: ["tab": "\(sync.model.id)", "action": "\(action)"])
            do {
                switch action {
                case .load(let url):
                    let result = try await call("Page.navigate", ["url": .string(url)])
                    if result["errorText"]?.string != nil {
                        await perform(sync.event(.loadFailed, now: now))
                    } else {
                        sync.loadStarted(loaderID: result["loaderId"]?.string)
                    }
                case .traverse(let entryID):
                    try await call("Page.navigateToHistoryEntry", ["entryId": .number(Double(entryID))])
                case .reload:
                    try await call("Page.reload")
                case .reportNavigation(let url, let transition, let replace):
                    let tab = try await client.api.navigateTab(
                        path: .init(tabId: sync.model.id),
                        body: .json(.init(url: url, transition: .init(rawValue: transition) ?? .link, replace: replace))
                    ).ok.body.json
                    await perform(sync.reported(action, answer: ModelTab(tab), now: now))
                case .reportMove(let offset):
                    let tab = try await client.api.goTab(path: .init(tabId: sync.model.id), body: .json(.init(offset: offset))).ok.body.json
                    await perform(sync.reported(action, answer: ModelTab(tab), now: now))
                case .reportCrash:
                    let tab = try await client.api.updateTab(
                        path: .init(tabId: sync.model.id), body: .json(.init(loading: false, crashed: true))
                    ).ok.body.json
                    await perform(sync.reported(action, answer: ModelTab(tab), now: now))
                case .reportPageState(let title, let loading, let progress, let favicon):
                    let body = Components.Schemas.PatchTab(
                        title: title, loading: loading, progress: progress, faviconUrl: favicon ?? nil)
                    let tab = try await client.api.updateTab(path: .init(tabId: sync.model.id), body: .json(body)).ok.body.json
                    await perform(sync.reported(action, answer: ModelTab(tab), now: now))
                }
            } catch {
                logger.warning("tab \(sync.model.id): \(action): \(error)")
            }
        }
    }
}
