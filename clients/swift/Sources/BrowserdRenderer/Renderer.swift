import BrowserdClient
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// browserd-renderer's core: a real Chromium attached to one browserd profile. It follows the
/// profile's windows (present and future), and those of its incognito profile while it has one (their
/// pages in a Chromium browser context of their own: nothing of theirs on disk, nothing shared with the
/// regular pages), through their event streams; each window's active tab and
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
        /// Origins on this machine or a private network that pages may reach (`--allow-origin`), and
        /// ranges (`--allow-network`): everything else there is fenced (``NetworkPolicy``).
        public var allowedOrigins: [String]
        public var allowedNetworks: [IPNetwork]
        /// Told of each main-frame commit as its DevTools event arrives (the tab, the URL): for
        /// measuring the path from Chromium's commit to browserd's watchers (bench/renderer.py).
        public var commitObserver: (@Sendable (_ tab: String, _ url: String) -> Void)?
        /// Timing and picture settings.
        public var policy: RendererPolicy
        /// Where automation clients attach (``DevToolsGateway``); nil: nowhere.
        public var devtools: DevToolsEndpoint?
        /// The renderer's name in its lease (browserd's `GET /v1/profiles/{id}/renderer`).
        public var name: String
        /// Where it counts Chromium's starts (nil: nowhere).
        public var metrics: RendererMetrics?
        /// Whether Chromium runs in its own sandbox (`--chromium-sandbox`); as root it never can.
        public var chromiumSandbox = true
        /// How much nicer than the renderer Chromium runs (`--chromium-nice`; ``ChromiumLaunch/niceness``).
        public var chromiumNiceness = ChromiumLaunch.defaultNiceness
        /// Live pages shared with the renderer's other profiles (`--max-live-pages`; nil: each
        /// window's own ``liveTabs`` only).
        public var livePageAllocator: LivePageAllocator?

        public init(
            profileID: String, liveTabs: Int = 3, chromium: String, stateDirectory: String, allowedOrigins: [String] = [], allowedNetworks: [IPNetwork] = [],
            commitObserver: (@Sendable (_ tab: String, _ url: String) -> Void)? = nil, policy: RendererPolicy = .standard
        ) {
            self.commitObserver = commitObserver
            self.policy = policy
            self.profileID = profileID
            self.liveTabs = liveTabs
            self.chromium = chromium
            self.stateDirectory = stateDirectory
            self.allowedOrigins = allowedOrigins
            self.allowedNetworks = allowedNetworks
            devtools = nil
            name = "browserd-renderer"
        }
    }

    /// The gateway's socket and the URL browserd hands to clients for it.
    public struct DevToolsEndpoint: Sendable {
        public var host: String
        /// 0: a port of the kernel's choosing.
        public var port: Int
        /// `ws://HOST:PORT` clients reach the gateway at (nil: `ws://<host>:<port bound>`).
        public var advertisedURL: String?

        /// The host clients reach a gateway of a bound port at (nil: the listen address, or 127.0.0.1
        /// when it listens on every address): a fleet's gateways, each on a port of its own.
        public var advertisedHost: String?

        public init(host: String = "127.0.0.1", port: Int = 0, advertisedURL: String? = nil) {
            self.host = host
            self.port = port
            self.advertisedURL = advertisedURL
        }
    }

    let options: Options
    let client: BrowserdClient
    let logger: Logger
    let policy: NetworkPolicy
    /// The fence Chromium's requests go through (while ``run()`` runs).
    private var proxy: FencingProxy?
    private var windows: [String: WindowTabs] = [:]
    private var windowTasks: [String: Task<Void, Never>] = [:]
    /// The profile each followed window belongs to (the renderer's, or its incognito profile).
    var windowProfile: [String: String] = [:] { didSet { leaseWake.signal() } }
    /// The incognito profile followed (the profile's, while it has one), and its stream's task.
    private var incognito: (profileID: String, task: Task<Void, Never>)?
    /// The Chromium browser context of each incognito profile's pages (made on its first page, per
    /// Chromium process: an in-memory context, as Chromium's off-the-record profile).
    private var contexts: [String: Task<String?, Never>] = [:]
    /// The live pages: each tab's page, window, target and session (a popup names its opener's target).
    var table = PageTable<LivePage>() { didSet { leaseWake.signal() } }
    /// The profile's web state as kept in step with browserd (``keepWebState()``).
    var webState = WebStateTracker()
    /// Whether a state written at browserd is being loaded into Chromium, and how many were: a reading
    /// that overlaps one is dropped (it could save the state from before, or half of it).
    var webStateApplying = false
    var webStateGeneration = 0
    /// The sweep of pages whose tab left its window (``PageTable/moveGrace``), while one is due.
    private var sweeping: Task<Void, Never>?
    private let started = ContinuousClock.now
    /// Seconds since the renderer was made (the table's clock).
    private var clock: Double {
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
    /// Popups waiting for their tab's page: by the tab made for each, the target it adopts, the tab's
    /// window, and when the tab was made (its window's stream may not have shown it yet).
    private var adoptions: [String: (popup: LivePage.Adopted, window: String, made: ContinuousClock.Instant)] = [:]
    /// Sessions Chromium attached to targets the renderer made, not asked for yet (``session(for:)``).
    private var attachedSessions: [String: String] = [:]
    /// Pages waiting for their target's session.
    private var sessionWaiters: [String: CheckedContinuation<String?, Never>] = [:]
    /// Windows whose pages wait while a popup's tab is being made in them (its page must adopt the
    /// popup's target, not make one of its own).
    private var popupsUnderWay: [String: Int] = [:]
    var chromium: ChromiumProcess? { didSet { leaseWake.signal() } }
    /// What automation clients read without the actor (``AutomationDirectory``).
    let automation: AutomationDirectory
    /// Where automation clients attach (while ``run()`` runs with ``Options/devtools``).
    var gateway: DevToolsGateway?
    /// The key browserd's WebDriver calls carry (given to browserd in the lease only).
    let controlKey: String
    /// Chromium's `Browser.getVersion` (the lease's `browser`).
    var browserVersion: JSONValue?
    /// Automation clients waiting for a tab's page (a target they asked for: ``carryOut(_:profile:)``).
    var targetWaiters: [String: [CheckedContinuation<String?, Never>]] = [:]
    /// When each window last had a tab activated or opened (a counter): a client's new page opens in
    /// its profile's most recent window.
    var windowActivity: [String: Int] = [:]
    /// When each window last had a tab activated or opened (``LivePageAllocator/clock``).
    var windowActiveAt: [String: Double] = [:]
    var activityCount = 0
    /// The pages changed since the leases were put last.
    var leasesDirty = true { didSet { if leasesDirty { leaseWake.signal() } } }
    /// Wakes the lease loop when what a lease says may have changed (the page table, the windows'
    /// profiles, Chromium, ``leasesDirty``): it waits for this, not a timer.
    let leaseWake = WakeSignal()
    /// Whether browserd's refusal of a lease (a profile's token) was logged.
    var leaseRefusalLogged = false
    /// How many times Chromium was started (the first start is 1).
    public private(set) var starts = 0

    public init(options: Options, client: BrowserdClient, logger: Logger = Logger(label: "browserd-renderer")) {
        self.options = options
        self.client = client
        self.logger = logger
        policy = NetworkPolicy(allowedOrigins: options.allowedOrigins, allowedNetworks: options.allowedNetworks)
        automation = AutomationDirectory(profile: options.profileID)
        var generator = SystemRandomNumberGenerator()
        controlKey = (0..<4).map { _ in String(generator.next() as UInt64, radix: 16) }.map { String(repeating: "0", count: 16 - $0.count) + $0 }.joined()
    }

    /// Runs until cancelled (or the profile is deleted); Chromium is closed cleanly at the end.
    /// - Throws: when the fence cannot start (no page may load without it).
    public func run() async throws {
        let proxy = try await FencingProxy.start(policy: policy, logger: logger)
        self.proxy = proxy
        if let endpoint = options.devtools {
            do {
                gateway = try await DevToolsGateway.start(host: endpoint.host, port: endpoint.port, controlKey: controlKey, automation: self, logger: logger)
                logger.info("automation clients attach at \(advertisedURL ?? "?") (through browserd's /v1/profiles/{id}/devtools)")
            } catch {
                await proxy.stop()
                throw error
            }
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.superviseChromium() }
            group.addTask { await self.keepWebState() }
            if self.gateway != nil { group.addTask { await self.announceLeases() } }
            group.addTask {
                do { try await self.followWindows(of: self.options.profileID) } catch { self.logger.error("profile stream ended: \(error)") }
            }
            await group.next()
            group.cancelAll()
        }
        incognito?.task.cancel()
        for task in windowTasks.values { task.cancel() }
        for window in windows.keys { options.livePageAllocator?.remove(window) }
        // What changed since the last reading is saved before Chromium goes.
        await saveWebState()
        await dropPages(closingTargets: false)
        await gateway?.stop()
        await withdrawLeases()
        gateway = nil
        await chromium?.stop(gracefully: true)
        chromium = nil
        await proxy.stop()
        self.proxy = nil
    }

    /// How many requests the fence refused (nil while not running).
    public var refusedRequests: Int? { proxy?.refusals }

    /// The tabs with a live page now, by window (for tests and the status line).
    public func livePages() -> [String: Set<String>] { table.liveTabs }

    /// Chromium's process id (nil while it is not running).
    public var chromiumPID: pid_t? { chromium?.pid }

    // MARK: Chromium

    private func superviseChromium() async {
        var backoff = RestartBackoff(policy: options.policy)
        let launch = ChromiumLaunch(
            executable: options.chromium,
            userDataDirectory: URL(fileURLWithPath: options.stateDirectory).appendingPathComponent("chromium-\(options.profileID)").path,
            proxyPort: proxy?.port, runsAsRoot: getuid() == 0 || !options.chromiumSandbox, niceness: options.chromiumNiceness)
        while !Task.isCancelled {
            let process: ChromiumProcess
            do {
                process = try ChromiumProcess(launch)
                // The pipe answers once the browser is up.
                browserVersion = try await process.connection.call("Browser.getVersion", timeout: options.policy.startTimeout)
                // Nothing a page (or a client) does writes to this machine's disk: downloads are refused.
                _ = try await process.connection.call("Browser.setDownloadBehavior", ["behavior": "deny"])
                // browserd's web state goes in before any page of the profile (they would load logged
                // out), from a page of the renderer's own attached here, before Chromium attaches any.
                await loadWebState(process.connection)
                // Every new target is attached and waits for the debugger: a page's popup gets its
                // script before its first document, and becomes a tab (``popupOpened(_:)``).
                _ = try await process.connection.call(
                    "Target.setAutoAttach", ["autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true])
            } catch {
                logger.error("Chromium did not start: \(error)")
                try? await Task.sleep(for: backoff.failed())
                continue
            }
            // Chromium's own first page (about:blank) is no tab's: it goes, so that an automation
            // client sees the profile's pages only (headless Chromium runs on without a page).
            await closeUntabbedPages(process.connection)
            chromium = process
            automation.connection = process.connection
            leasesDirty = true
            starts += 1
            options.metrics?.chromiumStarts.increment()
            let up = ContinuousClock.now
            logger.info("Chromium \(process.pid) started")
            for window in windows.keys { await reconcile(window) }
            for await event in process.connection.events {
                logger.trace("devtools event", metadata: ["method": "\(event.method)", "session": "\(event.sessionID ?? "-")"])
                // A live page's events go to it straight from the connection (its `DevToolsSession`, a
                // target that detaches included); here: the browser's own, and other targets'.
                if event.method == "Target.attachedToTarget" {
                    attached(event.params, connection: process.connection)
                }
            }
            // EOF on its pipe: it exited or was killed. Its pages are gone with it.
            guard !Task.isCancelled else { break }
            logger.warning("Chromium \(process.pid) ended; starting it again")
            chromium = nil
            automation.connection = nil
            automation.clearContexts()
            gateway?.endClients(reason: "the renderer's Chromium ended")
            await dropPages(closingTargets: false)
            await process.stop(gracefully: false)
            try? await Task.sleep(for: backoff.failed(afterRunning: ContinuousClock.now - up))
        }
    }

    private func closeUntabbedPages(_ connection: DevToolsConnection) async {
        let targets = (try? await connection.call("Target.getTargets", timeout: options.policy.quickCommandTimeout))?["targetInfos"]?.array ?? []
        for target in targets where target["type"]?.string == "page" {
            guard let id = target["targetId"]?.string, table.tab(ofTarget: id) == nil else { continue }
            _ = try? await connection.call("Target.closeTarget", ["targetId": .string(id)], timeout: options.policy.quickCommandTimeout)
        }
    }

    /// A target Chromium attached (``superviseChromium()``), waiting for the debugger: a page's popup
    /// becomes a tab with its opener; a page the renderer made goes to the ``LivePage`` that made it
    /// (``session(for:)``); anything else runs on, unwatched.
    private func attached(_ params: JSONValue, connection: DevToolsConnection) {
        guard let session = params["sessionId"]?.string, let target = params["targetInfo"]?["targetId"]?.string else { return }
        let info = params["targetInfo"]
        // An automation client's browser session (``DevToolsGateway``): its client's, never detached here.
        guard info?["type"]?.string != "browser" else { return }
        if info?["type"]?.string == "page", let opener = info?["openerId"]?.string, let openerTab = table.tab(ofTarget: opener),
            let window = table.entries[openerTab]?.window
        {
            popupsUnderWay[window, default: 0] += 1
            Task { await self.popupOpened(.init(targetID: target, sessionID: session), url: info?["url"]?.string ?? "", opener: openerTab, in: window) }
            return
        }
        if info?["type"]?.string == "page", info?["openerId"] != nil {
            // A popup of a page that is no tab's (gone, or not registered yet): every page is a tab's.
            logger.notice("a popup whose opener is no live tab's page is closed")
            Task { _ = try? await connection.call("Target.closeTarget", ["targetId": .string(target)]) }
            return
        }
        if info?["type"]?.string == "page", params["waitingForDebugger"]?.bool == true {
            // The renderer's own (made blank by `Target.createTarget`, whose answer may come after this).
            if let waiter = sessionWaiters.removeValue(forKey: target) {
                waiter.resume(returning: session)
            } else {
                attachedSessions[target] = session
            }
            return
        }
        Task {
            _ = try? await connection.call("Runtime.runIfWaitingForDebugger", session: session)
            _ = try? await connection.call("Target.detachFromTarget", ["sessionId": .string(session)])
        }
    }

    /// The session Chromium attached to `target`, a page the renderer made (nil if none comes within 10 s).
    func session(for target: String) async -> String? {
        if let session = attachedSessions.removeValue(forKey: target) { return session }
        let timeout = Task {
            try? await Task.sleep(for: self.options.policy.attachTimeout)
            self.sessionWaiters.removeValue(forKey: target)?.resume(returning: nil)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { sessionWaiters[target] = $0 }
    }

    /// A page opened a popup (Chromium's popup blocker let it through: a user's gesture): it becomes a
    /// tab of the opener's window with the opener as its opener, placed and activated by the model's
    /// rules (a foreground tab, as a link to a new tab opens), and its page adopts the popup's target.
    private func popupOpened(_ popup: LivePage.Adopted, url: String, opener: String, in window: String) async {
        let placeholder = PageSync.pageCanShow(url) ? url : "about:blank"
        do {
            let tab = try await client.api.openTab(
                path: .init(browserId: window), body: .json(.init(url: placeholder, activate: true, openerTabId: opener, transition: .link))
            ).created.body.json
            adoptions[tab.id] = (popup, window, .now)
        } catch {
            logger.warning("a popup of tab \(opener) could not become a tab; it is closed: \(error)")
            _ = try? await chromium?.connection.call("Target.closeTarget", ["targetId": .string(popup.targetID)])
        }
        popupsUnderWay[window, default: 1] -= 1
        if popupsUnderWay[window] == 0 { popupsUnderWay[window] = nil }
        await reconcile(window)
    }

    private func dropPages(closingTargets: Bool) async {
        let all = table.removeAll()
        sweeping?.cancel()
        sweeping = nil
        adoptions = [:]
        popupsUnderWay = [:]
        contexts = [:]
        attachedSessions = [:]
        for waiter in sessionWaiters.values { waiter.resume(returning: nil) }
        sessionWaiters = [:]
        for page in all { await page.close(closingTarget: closingTargets) }
    }

    // MARK: The model

    /// Follows a profile's windows (the renderer's profile, or its incognito profile) until the profile
    /// is gone; for the renderer's profile, its incognito profile's too while it has one.
    private func followWindows(of profile: String) async throws {
        for try await event in client.profileEvents(profile) {
            switch event.payload {
            case .browsersPopulate(let populate):
                await follow(populate.browsers.map(\.id), of: profile)
                await followIncognito(populate.incognitoProfileId, of: profile)
            case .reset(let reset):
                await follow(reset.browsers.map(\.id), of: profile)
                await followIncognito(reset.incognitoProfileId, of: profile)
            case .browsersAdd(let add): await follow(windowIDs(of: profile) + [add.browser.id], of: profile)
            case .browsersRemove(let remove): await follow(windowIDs(of: profile).filter { $0 != remove.browserId }, of: profile)
            case .profileIncognito(let change): await followIncognito(change.incognitoProfileId, of: profile)
            case .profileWebState where profile == options.profileID: await webStateChangedAtBrowserd()
            case .profileDeleted:
                await follow([], of: profile)
                return
            default: break
            }
        }
    }

    func windowIDs(of profile: String) -> [String] { windows.keys.filter { windowProfile[$0] == profile } }

    /// Follows the renderer's profile's incognito profile `id` (nil: it has none now): its windows'
    /// pages go in a browser context of their own, which goes with the profile.
    private func followIncognito(_ id: String?, of profile: String) async {
        guard profile == options.profileID, id != incognito?.profileID else { return }
        if let gone = incognito {
            gone.task.cancel()
            incognito = nil
            automation.incognito = nil
            automation.setContext(nil, of: gone.profileID)
            await withdrawLease(of: gone.profileID)
            await follow([], of: gone.profileID)
            if let context = await contexts.removeValue(forKey: gone.profileID)?.value {
                _ = try? await chromium?.connection.call("Target.disposeBrowserContext", ["browserContextId": .string(context)], timeout: options.policy.commandTimeout)
            }
        }
        guard let id else { return }
        logger.info("following incognito profile \(id)")
        automation.incognito = id
        leasesDirty = true
        incognito = (
            id,
            Task {
                do { try await self.followWindows(of: id) } catch { self.logger.warning("incognito profile \(id): stream ended: \(error)") }
            }
        )
    }

    /// The browser context of `profile`'s pages: nil for the renderer's profile (Chromium's default
    /// context), a context made once per Chromium for its incognito profile (nil if none could be made:
    /// its pages then wait, never in the default context).
    private func browserContext(for profile: String, connection: DevToolsConnection) async -> String?? {
        guard profile != options.profileID else { return .some(nil) }
        if let made = contexts[profile] { return await made.value.map { .some($0) } }
        // Its requests go through the fence too (named here, not left to Chromium's default).
        var params: [String: JSONValue] = ["disposeOnDetach": true]
        if let port = proxy?.port {
            params["proxyServer"] = .string("http://127.0.0.1:\(port)")
            params["proxyBypassList"] = "<-loopback>"
        }
        let making = Task { [params] in
            try? await connection.call("Target.createBrowserContext", .object(params))["browserContextId"]?.string
        }
        contexts[profile] = making
        guard let id = await making.value else {
            logger.warning("no browser context for incognito profile \(profile): its pages wait")
            contexts[profile] = nil
            return nil
        }
        // Its downloads are refused too (each context has its own behaviour).
        _ = try? await connection.call("Browser.setDownloadBehavior", ["behavior": "deny", "browserContextId": .string(id)])
        if chromium?.connection === connection { automation.setContext(id, of: profile) }
        return .some(id)
    }

    /// Follows exactly these windows of `profile`: a stream for each new one, the pages of a gone one closed.
    private func follow(_ ids: [String], of profile: String) async {
        let wanted = Set(ids)
        var gone: [String] = []
        for id in windows.keys where windowProfile[id] == profile && !wanted.contains(id) {
            windows[id] = nil
            windowProfile[id] = nil
            windowTasks.removeValue(forKey: id)?.cancel()
            gone.append(id)
        }
        for id in wanted where windows[id] == nil {
            windows[id] = WindowTabs()
            windowProfile[id] = profile
            let client = self.client
            windowTasks[id] = Task {
                do {
                    for try await event in client.windowEvents(id, topics: ["tabs"]) { await self.apply(event.payload, to: id) }
                } catch {
                    self.logger.warning("window \(id): stream ended: \(error)")
                }
            }
        }
        for id in gone { await reconcile(id) }
    }

    private func apply(_ event: WindowStreamEvent, to window: String) async {
        guard windows[window] != nil else { return }
        let active = windows[window]!.activeID
        let changed = windows[window]!.apply(event)
        for tab in changed { table.page(ofTab: tab.id)?.send(.model(tab)) }
        switch event {
        case .tabsInsert, .tabsSelect, .tabsPopulate, .reset:
            activityCount += 1
            windowActivity[window] = activityCount
            windowActiveAt[window] = LivePageAllocator.clock
        default: break
        }
        if case .browserClosed = event {
            windows[window] = nil
            windowProfile[window] = nil
        }
        await reconcile(window)
        // The model activated a tab: its page comes to the front, as the tab strip's active tab.
        if let now = windows[window]?.activeID, now != active, let target = table.target(ofTab: now) {
            _ = try? await chromium?.connection.call("Target.activateTarget", ["targetId": .string(target)], timeout: options.policy.quickCommandTimeout)
        }
    }

    /// Makes and closes pages so that exactly the window's live tabs have one (``PageTable``: a tab
    /// that left the window keeps its page a moment, for the window it moved to).
    private func reconcile(_ window: String) async {
        // A popup's tab is being made: its page must adopt the popup's target (reconciled after).
        guard popupsUnderWay[window] == nil else { return }
        let before = windows[window]
        await carryOut(
            table.reconcile(
                window: window, wanted: wantedPages(window, before), present: Set(before?.tabs.keys.map { $0 } ?? []),
                now: clock))
        guard let connection = chromium?.connection, windows[window] != nil, let profile = windowProfile[window] else { return }
        // An incognito window's pages go in its profile's context (made on its first page): once it is
        // there, what the window wants is looked at again (it may have changed meanwhile).
        guard case .some(let context) = await browserContext(for: profile, connection: connection),
            chromium?.connection === connection, popupsUnderWay[window] == nil, let state = windows[window]
        else { return }
        let live = wantedPages(window, state)
        var closing: [LivePage] = []
        for action in table.reconcile(window: window, wanted: live, present: Set(state.tabs.keys.map { $0 }), now: clock) {
            switch action {
            case .close(_, let page): closing.append(page)
            case .open(let tab, _):
                guard let model = state.tabs[tab] else { continue }
                let page = LivePage(
                    tab: model, connection: connection, client: client, browserContextID: context,
                    adopting: adoptions.removeValue(forKey: tab)?.popup, policy: options.policy, logger: logger,
                    commitObserver: options.commitObserver, session: { [weak self] target in await self?.session(for: target) },
                    register: { [weak self] session, target in await self?.register(session, target: target, tab: tab) })
                table.added(tab, page: page, window: window)
            }
        }
        for page in closing { await page.close(closingTarget: true) }
        await closeUnadopted(in: window, state: state, wanted: live, connection)
    }

    /// The tabs of `window` that have a live page: its own choice (``WindowTabs/livePages(extra:)``),
    /// within the renderer's share for it when its profiles share ``Options/livePageAllocator``.
    private func wantedPages(_ window: String, _ state: WindowTabs?) -> Set<String> {
        guard let allocator = options.livePageAllocator else { return state?.livePages(extra: options.liveTabs) ?? [] }
        guard let state else {
            allocator.remove(window)
            return []
        }
        return allocator.want(
            state.livePageOrder(extra: options.liveTabs), window: window, lastUsed: windowActiveAt[window, default: 0]
        ) { [weak self] other in
            Task { await self?.reconcileIfFollowed(other) }
        }
    }

    /// Looks at `window`'s pages again (its share of the renderer's live pages changed).
    private func reconcileIfFollowed(_ window: String) async {
        guard windows[window] != nil else { return }
        await reconcile(window)
    }

    /// Closes the pages the table gave up; schedules the sweep of pages whose tab left its window.
    private func carryOut(_ actions: [PageTable<LivePage>.Action]) async {
        for case .close(_, let page) in actions { await page.close(closingTarget: true) }
        guard sweeping == nil, table.entries.values.contains(where: { $0.leftAt != nil }) else { return }
        sweeping = Task {
            try? await Task.sleep(for: .seconds(PageTable<LivePage>.moveGrace))
            await self.sweep()
        }
    }

    private func sweep() async {
        sweeping = nil
        await carryOut(table.sweep(now: clock, windows: Set(windows.keys)))
    }

    /// A popup whose tab is not live, or is gone (not seen 10 s after it was made): its target goes.
    private func closeUnadopted(in window: String, state: WindowTabs, wanted: Set<String>, _ connection: DevToolsConnection) async {
        for (tab, adoption) in adoptions where adoption.window == window {
            let gone = state.tabs[tab] == nil && ContinuousClock.now - adoption.made > options.policy.attachTimeout
            guard gone || (state.tabs[tab] != nil && !wanted.contains(tab)) else { continue }
            adoptions[tab] = nil
            _ = try? await connection.call("Target.closeTarget", ["targetId": .string(adoption.popup.targetID)], timeout: options.policy.quickCommandTimeout)
        }
    }

    private func register(_ session: String, target: String, tab: String) {
        table.attached(tab, session: session, target: target)
        leasesDirty = true
        for waiter in targetWaiters.removeValue(forKey: tab) ?? [] { waiter.resume(returning: target) }
    }

    // MARK: Looking at a page (status and tests)

    /// The page's back/forward list as Chromium holds it; nil while the tab has no live page.
    public func pageHistory(ofTab tab: String) async throws -> PageHistory? {
        guard let session = table.session(ofTab: tab), let connection = chromium?.connection else { return nil }
        return PageHistory(try await connection.call("Page.getNavigationHistory", session: session))
    }

    /// The URL of every page target Chromium holds (`Target.getTargets`), the renderer's or not.
    public func pageTargets() async throws -> [String] {
        guard let connection = chromium?.connection else { return [] }
        let targets = try await connection.call("Target.getTargets")["targetInfos"]?.array ?? []
        return targets.filter { $0["type"]?.string == "page" }.compactMap { $0["url"]?.string }
    }

    /// The Chromium browser context of the tab's page (nil while it has none).
    public func browserContext(ofTab tab: String) async throws -> String? {
        guard let target = table.target(ofTab: tab), let connection = chromium?.connection else {
            return nil
        }
        return try await connection.call("Target.getTargetInfo", ["targetId": .string(target)])["targetInfo"]?["browserContextId"]?.string
    }

    /// The browser contexts Chromium holds besides its default one (`Target.getBrowserContexts`).
    public func browserContexts() async throws -> [String] {
        guard let connection = chromium?.connection else { return [] }
        return try await connection.call("Target.getBrowserContexts")["browserContextIds"]?.array?.compactMap(\.string) ?? []
    }

    /// Crashes the tab's page's renderer (`Page.crash`, as a page that runs out of memory would): for
    /// tests of the crashed state. False when the tab has no live page.
    public func crashPage(ofTab tab: String) async -> Bool {
        guard let session = table.session(ofTab: tab), let connection = chromium?.connection else { return false }
        // It answers no more once the renderer is gone.
        _ = try? await connection.call("Page.crash", session: session, timeout: options.policy.quickCommandTimeout)
        return true
    }

    /// Clicks the middle of the first element `selector` finds in the tab's page, as a user's mouse
    /// would (`Input.dispatchMouseEvent`: a gesture, so a popup it opens is not blocked). False when
    /// the tab has no live page or the element is not there.
    public func click(_ selector: String, inTab tab: String) async throws -> Bool {
        guard let session = table.session(ofTab: tab), let connection = chromium?.connection else { return false }
        let place = try await connection.call(
            "Runtime.evaluate",
            [
                "expression": .string(
                    "(() => { const e = document.querySelector(\(String(reflecting: selector))); if (!e) return null; "
                        + "const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"),
                "returnByValue": true,
            ], session: session)
        guard let point = place["result"]?["value"]?.array, point.count == 2, let x = point[0].double, let y = point[1].double else {
            return false
        }
        for type in ["mousePressed", "mouseReleased"] {
            try await connection.call(
                "Input.dispatchMouseEvent",
                ["type": .string(type), "x": .number(x), "y": .number(y), "button": "left", "buttons": 1, "clickCount": 1], session: session)
        }
        return true
    }

    /// Runs `expression` in the tab's page, as a user's action would (`userGesture`: a popup it opens is
    /// not blocked); its value by JSON.
    public func evaluate(_ expression: String, inTab tab: String) async throws -> JSONValue? {
        guard let session = table.session(ofTab: tab), let connection = chromium?.connection else { return nil }
        let result = try await connection.call(
            "Runtime.evaluate", ["expression": .string(expression), "userGesture": true, "returnByValue": true, "awaitPromise": true],
            session: session)
        return result["result"]?["value"]
    }
}
