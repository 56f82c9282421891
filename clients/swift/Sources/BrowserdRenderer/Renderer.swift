import BrowserdClient
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// browserd-renderer's core: a real Chromium attached to one browserd profile. It follows the
/// profile's windows (present and future) through their event streams; each window's active tab and
/// its ``Options/liveTabs`` most recently activated or opened tabs have a live page (``LivePage``), the
/// others none, as Chromium's unrealized `WebState`s have no web view. The model drives the pages and
/// the pages drive the model (``PageSync``). When Chromium dies, its pages are dropped and it starts
/// again (with backoff), and the live tabs load again.
public actor Renderer {
    public struct Options: Sendable {
        public var profileID: String
        /// How many tabs besides the active one keep a live page, per window.
        public var liveTabs: Int
        public var chromium: String
        /// Chromium's profile directory is made under it (one Chromium per profile).
        public var stateDirectory: String
        public var allowedOrigins: [String]

        public init(profileID: String, liveTabs: Int = 3, chromium: String, stateDirectory: String, allowedOrigins: [String] = []) {
            self.profileID = profileID
            self.liveTabs = liveTabs
            self.chromium = chromium
            self.stateDirectory = stateDirectory
            self.allowedOrigins = allowedOrigins
        }
    }

    let options: Options
    let client: BrowserdClient
    let logger: Logger
    let loopback: LoopbackPolicy
    private var windows: [String: WindowTabs] = [:]
    private var windowTasks: [String: Task<Void, Never>] = [:]
    private var pages: [String: LivePage] = [:]
    private var pageWindow: [String: String] = [:]
    private var sessions: [String: LivePage] = [:]
    private var tabSessions: [String: String] = [:]
    private var chromium: ChromiumProcess?
    /// How many times Chromium was started (the first start is 1).
    public private(set) var starts = 0

    public init(options: Options, client: BrowserdClient, logger: Logger = Logger(label: "browserd-renderer")) {
        self.options = options
        self.client = client
        self.logger = logger
        loopback = LoopbackPolicy(allowedOrigins: options.allowedOrigins)
    }

    /// Runs until cancelled (or the profile is deleted); Chromium is closed cleanly at the end.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.superviseChromium() }
            group.addTask {
                do { try await self.followProfile() } catch { self.logger.error("profile stream ended: \(error)") }
            }
            await group.next()
            group.cancelAll()
        }
        for task in windowTasks.values { task.cancel() }
        await dropPages(closingTargets: false)
        await chromium?.stop(gracefully: true)
        chromium = nil
    }

    /// The tabs with a live page now, by window (for tests and the status line).
    public func livePages() -> [String: Set<String>] {
        var live: [String: Set<String>] = [:]
        for (tab, window) in pageWindow { live[window, default: []].insert(tab) }
        return live
    }

    /// Chromium's process id (nil while it is not running).
    public var chromiumPID: pid_t? { chromium?.pid }

    // MARK: Chromium

    private func superviseChromium() async {
        var delay = Duration.milliseconds(250)
        let launch = ChromiumLaunch(
            executable: options.chromium,
            userDataDirectory: URL(fileURLWithPath: options.stateDirectory).appendingPathComponent("chromium-\(options.profileID)").path)
        while !Task.isCancelled {
            let process: ChromiumProcess
            do {
                process = try ChromiumProcess(launch)
                // The pipe answers once the browser is up.
                _ = try await process.connection.call("Browser.getVersion", timeout: .seconds(30))
            } catch {
                logger.error("Chromium did not start: \(error)")
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(10))
                continue
            }
            chromium = process
            starts += 1
            let up = ContinuousClock.now
            logger.info("Chromium \(process.pid) started")
            for window in windows.keys { await reconcile(window) }
            for await event in process.connection.events {
                logger.trace("devtools event", metadata: ["method": "\(event.method)", "session": "\(event.sessionID ?? "-")"])
                if event.method == "Fetch.requestPaused", let session = event.sessionID {
                    decide(event, session: session, connection: process.connection)
                } else if let session = event.sessionID {
                    sessions[session]?.send(.devtools(event))
                } else if event.method == "Target.detachedFromTarget", let session = event.params["sessionId"]?.string {
                    // A page's target went without being asked to (`window.close()`): its page is told.
                    sessions[session]?.send(.devtools(event))
                }
            }
            // EOF on its pipe: it exited or was killed. Its pages are gone with it.
            guard !Task.isCancelled else { break }
            logger.warning("Chromium \(process.pid) ended; starting it again")
            chromium = nil
            await dropPages(closingTargets: false)
            await process.stop(gracefully: false)
            if ContinuousClock.now - up > .seconds(30) { delay = .milliseconds(250) }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(10))
        }
    }

    /// A page's request to loopback: continued at an allowed origin, refused otherwise (at once, in
    /// a task of its own: the page may be waiting for it in the middle of its own work).
    private func decide(_ event: DevToolsEvent, session: String, connection: DevToolsConnection) {
        guard let request = event.params["requestId"]?.string else { return }
        let url = event.params["request"]?["url"]?.string ?? ""
        let allowed = loopback.allows(url)
        if !allowed { logger.notice("a page's request to \(url) refused: loopback, not an --allow-origin") }
        Task {
            if allowed {
                _ = try? await connection.call("Fetch.continueRequest", ["requestId": .string(request)], session: session)
            } else {
                _ = try? await connection.call(
                    "Fetch.failRequest", ["requestId": .string(request), "errorReason": "BlockedByClient"], session: session)
            }
        }
    }

    private func dropPages(closingTargets: Bool) async {
        let all = pages.values
        pages = [:]
        pageWindow = [:]
        sessions = [:]
        tabSessions = [:]
        for page in all { await page.close(closingTarget: closingTargets) }
    }

    // MARK: The model

    private func followProfile() async throws {
        for try await event in client.profileEvents(options.profileID) {
            switch event.payload {
            case .browsersPopulate(let populate): follow(populate.browsers.map(\.id))
            case .reset(let reset): follow(reset.browsers.map(\.id))
            case .browsersAdd(let add): follow(Array(windows.keys) + [add.browser.id])
            case .browsersRemove(let remove): follow(windows.keys.filter { $0 != remove.browserId })
            case .profileDeleted: return
            default: break
            }
        }
    }

    /// Follows exactly these windows: a stream for each new one, the pages of a gone one closed.
    private func follow(_ ids: [String]) {
        let wanted = Set(ids)
        for id in windows.keys where !wanted.contains(id) {
            windows[id] = nil
            windowTasks.removeValue(forKey: id)?.cancel()
            Task { await self.reconcile(id) }
        }
        for id in wanted where windows[id] == nil {
            windows[id] = WindowTabs()
            let client = self.client
            windowTasks[id] = Task {
                do {
                    for try await event in client.windowEvents(id, topics: ["tabs"]) { await self.apply(event.payload, to: id) }
                } catch {
                    self.logger.warning("window \(id): stream ended: \(error)")
                }
            }
        }
    }

    private func apply(_ event: WindowStreamEvent, to window: String) async {
        guard windows[window] != nil else { return }
        let changed = windows[window]!.apply(event)
        for tab in changed { pages[tab.id]?.send(.model(tab)) }
        if case .browserClosed = event { windows[window] = nil }
        await reconcile(window)
    }

    /// Makes and closes pages so that exactly the window's live tabs have one.
    private func reconcile(_ window: String) async {
        let wanted = windows[window]?.livePages(extra: options.liveTabs) ?? []
        for (tab, owner) in pageWindow where owner == window && !wanted.contains(tab) {
            guard let page = pages.removeValue(forKey: tab) else { continue }
            pageWindow[tab] = nil
            for (session, candidate) in sessions where candidate === page { sessions[session] = nil }
            tabSessions[tab] = nil
            await page.close(closingTarget: true)
        }
        guard let connection = chromium?.connection, let state = windows[window] else { return }
        for tab in wanted where pages[tab] == nil {
            guard let model = state.tabs[tab] else { continue }
            // A tab moved here from another window keeps its page.
            if pageWindow[tab] != nil { continue }
            let page = LivePage(
                tab: model, connection: connection, client: client, browserContextID: nil, logger: logger,
                register: { [weak self] session in await self?.register(session, tab: tab) })
            pages[tab] = page
            pageWindow[tab] = window
        }
    }

    private func register(_ session: String, tab: String) {
        guard let page = pages[tab] else { return }
        sessions[session] = page
        tabSessions[tab] = session
    }

    // MARK: Looking at a page (status and tests)

    /// The page's back/forward list as Chromium holds it; nil while the tab has no live page.
    public func pageHistory(ofTab tab: String) async throws -> PageHistory? {
        guard let session = tabSessions[tab], pages[tab] != nil, let connection = chromium?.connection else { return nil }
        return PageHistory(try await connection.call("Page.getNavigationHistory", session: session))
    }

    /// Runs `expression` in the tab's page, as a user's action would (`userGesture`: a popup it opens is
    /// not blocked); its value by JSON.
    public func evaluate(_ expression: String, inTab tab: String) async throws -> JSONValue? {
        guard let session = tabSessions[tab], pages[tab] != nil, let connection = chromium?.connection else { return nil }
        let result = try await connection.call(
            "Runtime.evaluate", ["expression": .string(expression), "userGesture": true, "returnByValue": true, "awaitPromise": true],
            session: session)
        return result["result"]?["value"]
    }
}
