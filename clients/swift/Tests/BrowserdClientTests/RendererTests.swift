import BrowserdClient
import Foundation
import Logging
import TestSupport
import Testing

@testable import BrowserdRenderer

#if canImport(Glibc)
    import Glibc
#endif

/// browserd-renderer with a real Chromium (Debian's, new headless, over its DevTools pipe), a live
/// browserd and pages served on loopback: the model drives the pages and the pages drive the model.
@Suite(.serialized, .offThePool, .timeLimit(.minutes(2))) struct RendererTests {
    /// browserd, the pages, a window, and a renderer running on the window's profile.
    struct Setup {
        let server: LiveServer
        let pages: PageServer
        let client: BrowserdClient
        let profileID: String
        let windowID: String
        let renderer: Renderer
        let run: Task<Void, any Error>
        let state: URL

        /// - Parameter extraOrigins: origins pages may reach besides the page server's (given it).
        /// - Parameter gateway: the renderer runs its DevTools gateway (as `browserd-renderer` does unless
        ///   `--devtools-listen off`) and so announces its pages in its lease: a client's navigation of
        ///   a live tab then pends until the page commits it (issue 56). Without it, navigations commit at once.
        init(
            liveTabs: Int = 3, gateway: Bool = true, chromiumNiceness: Int = ChromiumLaunch.defaultNiceness, extraOrigins: (PageServer) -> [String] = { _ in [] }
        ) async throws {
            server = try await LiveServer()
            pages = try PageServer()
            client = BrowserdClient(server: server.url)
            let profile = try await client.api.createProfile(body: .json(.init(name: "rendered"))).created.body.json
            profileID = profile.id
            windowID = try await client.api.createWindow(body: .json(.init(profileId: profile.id))).created.body.json.id
            state = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-renderer-\(UUID().uuidString)")
            let chromium = try #require(ChromiumLaunch.defaultExecutable(), "Chromium is not installed (make test installs Debian's chromium)")
            var logger = Logger(label: "browserd-renderer")
            // BROWSERD_RENDERER_TRACE=1: every DevTools event and page action, to see a failure through.
            logger.logLevel = ProcessInfo.processInfo.environment["BROWSERD_RENDERER_TRACE"] == "1" ? .trace : .info
            var options = Renderer.Options(
                profileID: profile.id, liveTabs: liveTabs, chromium: chromium, stateDirectory: state.path,
                allowedOrigins: [pages.origin] + extraOrigins(pages))
            if gateway { options.devtools = .init() }
            options.chromiumNiceness = chromiumNiceness
            renderer = Renderer(options: options, client: client, logger: logger)
            let renderer = self.renderer
            run = Task { try await renderer.run() }
        }

        func tab(_ id: String) async throws -> Components.Schemas.Tab {
            try await client.api.getTab(path: .init(tabId: id)).ok.body.json
        }

        func open(_ path: String) async throws -> String {
            try await client.api.openTab(path: .init(browserId: windowID), body: .json(.init(url: pages.url(path)))).created.body.json.id
        }

        /// Runs `body` with a setup, and stops it (Chromium closed) however `body` ends.
        static func with(
            liveTabs: Int = 3, gateway: Bool = true, chromiumNiceness: Int = ChromiumLaunch.defaultNiceness, extraOrigins: (PageServer) -> [String] = { _ in [] },
            _ body: (Setup) async throws -> Void
        ) async throws {
            let setup = try await Setup(liveTabs: liveTabs, gateway: gateway, chromiumNiceness: chromiumNiceness, extraOrigins: extraOrigins)
            do {
                try await body(setup)
            } catch {
                await setup.stop()
                throw error
            }
            await setup.stop()
        }

        /// Ends the renderer (Chromium closed cleanly) and removes its state.
        func stop() async {
            run.cancel()
            _ = try? await run.value
            try? FileManager.default.removeItem(at: state)
        }
    }

    /// Waits (up to 20 s) until `condition` gives a value; `state` says what was seen, for a failure.
    static func eventually<T>(
        _ what: String, within limit: Duration = .seconds(20), state: (() async -> String)? = nil, _ condition: () async throws -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now + limit
        var lastError: (any Error)?
        while ContinuousClock.now < deadline {
            do {
                if let value = try await condition() { return value }
            } catch {
                lastError = error
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let seen = await state?() ?? ""
        throw Failure("not within \(limit): \(what)\(lastError.map { " (last error: \($0))" } ?? "")\(seen.isEmpty ? "" : "; seen: \(seen)")")
    }

    @Test func theModelDrivesThePagesAndThePagesDriveTheModel() async throws {
        try await Setup.with { try await modelAndPages($0) }
    }

    @Test func livePagesAreCappedAndComeBackAfterChromiumDies() async throws {
        try await Setup.with(liveTabs: 1, chromiumNiceness: 10) { try await livePagesAndRestarts($0) }
    }

    func modelAndPages(_ setup: Setup) async throws {
        let pages = setup.pages
        let api = setup.client.api

        // A tab opened through the API loads: its title, favicon and loading reach browserd.
        let a = try await setup.open("/a.html")
        let loaded = try await Self.eventually("page A loaded", state: { "\(String(describing: try? await setup.tab(a)))" }) {
            let tab = try await setup.tab(a)
            return tab.title == "Page A" && !tab.loading && tab.faviconUrl == pages.url("/icon.png") ? tab : nil
        }
        #expect(loaded.historyCount == 1 && loaded.progress == 1)

        // Once loaded, the page's picture reaches browserd: a small JPEG of the page (a tenth of its pixels).
        let picture = try await Self.eventually("A's snapshot", state: { await describe(setup, a) }) { try await setup.tab(a).snapshot }
        #expect(picture.mediaType == .imageJpeg && picture.bytes > 0 && picture.bytes < 64 * 1024)
        let image = try await api.getTabSnapshot(path: .init(tabId: a)).ok
        let jpeg = try await Data(collecting: try image.body.jpeg, upTo: 1 << 20)
        #expect(jpeg.count == picture.bytes && image.headers.eTag == "\"\(picture.etag)\"")
        let size = try #require(Self.jpegSize(jpeg), "not a JPEG with a frame header")
        let viewport = try await setup.renderer.evaluate("innerWidth + 'x' + innerHeight", inTab: a)?.string ?? ""
        let (width, height) = (Double(viewport.split(separator: "x").first ?? "") ?? 0, Double(viewport.split(separator: "x").last ?? "") ?? 0)
        #expect(abs(Double(size.width) - width * 0.316) <= 2 && abs(Double(size.height) - height * 0.316) <= 2, "\(size) of \(viewport)")

        // A page reaches its own (allowed) origin on loopback, but not browserd's API.
        let reach = """
            Promise.all([fetch('/c.html'), fetch('\(setup.server.url.absoluteString)/healthz')]
              .map(p => p.then(() => 'reached', () => 'refused'))).then(r => r.join(' '))
            """
        #expect(try await setup.renderer.evaluate(reach, inTab: a)?.string == "reached refused")

        // navigate through the API reaches the page; a title set late reaches browserd.
        _ = try await api.navigateTab(path: .init(tabId: a), body: .json(.init(url: pages.url("/b.html")))).ok
        _ = try await Self.eventually("the late title of B", state: { await describe(setup, a) }) { try await setup.tab(a).title == "B late" ? true : nil }
        #expect(try await setup.renderer.pageHistory(ofTab: a)?.current?.url == pages.url("/b.html"))

        // back and forward through the API reach the page (the entries Chromium holds).
        _ = try await api.backTab(path: .init(tabId: a), body: .json(.init())).ok
        _ = try await Self.eventually("back on the page", state: { await describe(setup, a) }) {
            try await setup.renderer.pageHistory(ofTab: a)?.current?.url == pages.url("/a.html") ? true : nil
        }
        _ = try await api.forwardTab(path: .init(tabId: a), body: .json(.init())).ok
        _ = try await Self.eventually("forward on the page", state: { await describe(setup, a) }) {
            try await setup.renderer.pageHistory(ofTab: a)?.current?.url == pages.url("/b.html") ? true : nil
        }
        _ = try await api.backTab(path: .init(tabId: a), body: .json(.init())).ok
        _ = try await Self.eventually(
            "back again",
            state: {
                "tab \(String(describing: try? await setup.tab(a))), page \(String(describing: try? await setup.renderer.pageHistory(ofTab: a)))"
            }
        ) {
            let tab = try await setup.tab(a)
            return try await setup.renderer.pageHistory(ofTab: a)?.current?.url == pages.url("/a.html") && !tab.loading ? true : nil
        }
        var tab = try await setup.tab(a)
        #expect(tab.historyIndex == 0 && tab.historyCount == 2, "no echo made an entry")

        // The page navigates itself (a link clicked): a new entry, the forward one pruned, as Chromium does.
        // (Scripts that navigate do it from a task of their own: the evaluation's answer comes before the
        // page goes, which Chromium otherwise may answer with "Inspected target navigated or closed".)
        #expect(try await setup.renderer.evaluate("setTimeout(() => document.getElementById('l').click()); 'clicking'", inTab: a) == "clicking")
        tab = try await Self.eventually("the link's entry", state: { await describe(setup, a) }) {
            let tab = try await setup.tab(a)
            return tab.url == pages.url("/b.html") && tab.title == "B late" ? tab : nil
        }
        #expect(tab.historyIndex == 1 && tab.historyCount == 2)

        // A server redirect: the entry holds the final URL, no extra entry.
        _ = try await api.navigateTab(path: .init(tabId: a), body: .json(.init(url: pages.url("/redirect")))).ok
        tab = try await Self.eventually("the redirect's final URL", state: { await describe(setup, a) }) {
            let tab = try await setup.tab(a)
            return tab.url == pages.url("/c.html?from=redirect") && tab.title == "Page C" ? tab : nil
        }
        #expect(tab.historyIndex == 2 && tab.historyCount == 3)

        // pushState: a same-document entry.
        _ = try await api.navigateTab(path: .init(tabId: a), body: .json(.init(url: pages.url("/push.html")))).ok
        tab = try await Self.eventually("the pushed entry", state: { await describe(setup, a) }) {
            let tab = try await setup.tab(a)
            return tab.url == pages.url("/push.html#pushed") ? tab : nil
        }
        #expect(tab.historyIndex == 4 && tab.historyCount == 5)
        let history = try await api.getTabHistory(path: .init(tabId: a)).ok.body.json
        #expect(
            history.entries.map(\.url) == ["/a.html", "/b.html", "/c.html?from=redirect", "/push.html", "/push.html#pushed"].map(pages.url))
        #expect(history.currentIndex == 4)

        // The page replaces its entry (location.replace: reported from its step, no list read), then
        // goes back (a traversal: read from the list).
        _ = try await setup.renderer.evaluate("setTimeout(() => location.replace('/a.html?replaced')); 'replacing'", inTab: a)
        tab = try await Self.eventually("the replaced entry", state: { await describe(setup, a) }) {
            let tab = try await setup.tab(a)
            return tab.url == pages.url("/a.html?replaced") ? tab : nil
        }
        #expect(tab.historyIndex == 4 && tab.historyCount == 5)
        _ = try await setup.renderer.evaluate("setTimeout(() => history.back()); 'back'", inTab: a)
        tab = try await Self.eventually("the page's back", state: { await describe(setup, a) }) {
            let tab = try await setup.tab(a)
            return tab.url == pages.url("/push.html") ? tab : nil
        }
        #expect(tab.historyIndex == 3 && tab.historyCount == 5)
        #expect(
            try await api.getTabHistory(path: .init(tabId: a)).ok.body.json.entries.map(\.url)
                == ["/a.html", "/b.html", "/c.html?from=redirect", "/push.html", "/a.html?replaced"].map(pages.url))

        // A page that closes itself (window.close(): allowed to a page with one history entry) closes its tab.
        let closing = try await setup.open("/c.html")
        _ = try await Self.eventually("page C loaded", state: { await describe(setup, closing) }) {
            try await setup.tab(closing).title == "Page C" ? true : nil
        }
        // The evaluation may end with the page: its answer does not matter.
        _ = try? await setup.renderer.evaluate("window.close(); 'closing'", inTab: closing)
        _ = try await Self.eventually("the tab its page closed is gone", state: { await describe(setup, closing) }) { () async throws -> Bool? in
            do {
                _ = try await setup.tab(closing)
                return nil
            } catch {
                guard BrowserdProblem.from(error)?.status == 404 else { throw error }
                return true
            }
        }
        #expect(try await setup.tab(a).url == pages.url("/push.html#pushed"), "the other tab stays")

        // A popup opened by a click (a mouse event through the protocol: a user's gesture) is a new tab
        // with its opener: right after it, active, its one entry the popup's, its page the popup's own.
        let opener = try await setup.open("/opener.html")
        _ = try await Self.eventually("the opener loaded", state: { await describe(setup, opener) }) {
            try await setup.tab(opener).title == "Opener" ? true : nil
        }
        #expect(try await setup.renderer.click("#p", inTab: opener))
        let (popup, list) = try await Self.eventually(
            "the popup's tab",
            state: { "\(String(describing: try? await api.listTabs(path: .init(browserId: setup.windowID)).ok.body.json.items))" }
        ) { () async throws -> (Components.Schemas.Tab, Components.Schemas.TabList)? in
            let list = try await api.listTabs(path: .init(browserId: setup.windowID)).ok.body.json
            guard let popup = list.items.first(where: { $0.openerTabId == opener }), popup.title == "Popup", !popup.loading else { return nil }
            return (popup, list)
        }
        #expect(popup.url == pages.url("/popup.html") && popup.historyCount == 1 && popup.historyIndex == 0)
        let openerAt = try #require(list.items.firstIndex { $0.id == opener })
        #expect(list.items.firstIndex { $0.id == popup.id } == openerAt + 1, "right after its opener")
        #expect(list.activeIndex == openerAt + 1, "active")
        #expect(try await setup.renderer.pageHistory(ofTab: popup.id)?.entries.map(\.url) == [pages.url("/popup.html")])
        #expect(try await setup.renderer.pageHistory(ofTab: opener)?.entries.count == 1, "the opener stays where it was")
        #expect(try await setup.tab(opener).historyCount == 1)

        // A page whose renderer crashes is shown as crashed (loading ended) until a reload brings it back.
        #expect(await setup.renderer.crashPage(ofTab: popup.id))
        let crashed = try await Self.eventually("the crashed state", state: { await describe(setup, popup.id) }) {
            let tab = try await setup.tab(popup.id)
            return tab.crashed ? tab : nil
        }
        #expect(!crashed.loading && crashed.historyCount == 1)
        _ = try await api.reloadTab(path: .init(tabId: popup.id), body: .json(.init())).ok
        _ = try await Self.eventually("reloaded after the crash", state: { await describe(setup, popup.id) }) {
            let tab = try await setup.tab(popup.id)
            return !tab.crashed && !tab.loading && tab.title == "Popup" ? tab : nil
        }
        #expect(try await setup.renderer.evaluate("document.title", inTab: popup.id)?.string == "Popup", "a new renderer runs the page")
        #expect(try await setup.tab(popup.id).historyCount == 1, "a reload adds no entry")
    }

    func describe(_ setup: Setup, _ tab: String) async -> String {
        "tab \(String(describing: try? await setup.tab(tab))), page \(String(describing: try? await setup.renderer.pageHistory(ofTab: tab)))"
    }

    func livePagesAndRestarts(_ setup: Setup) async throws {
        var tabs: [String] = []
        var mostLive = 0
        for _ in 0..<30 {
            tabs.append(
                try await api(setup).openTab(
                    path: .init(browserId: setup.windowID), body: .json(.init(url: setup.pages.url("/c.html"), activate: false))
                ).created.body.json.id)
            mostLive = max(mostLive, await setup.renderer.livePages()[setup.windowID]?.count ?? 0)
        }
        _ = try await api(setup).activateTab(path: .init(tabId: tabs[1]), body: .json(.init())).ok
        // The active tab and the most recently opened other one: two pages, however many tabs.
        let live = try await Self.eventually("two live pages") {
            let live = await setup.renderer.livePages()[setup.windowID] ?? []
            return live == [tabs[1], tabs[29]] ? live : nil
        }
        #expect(live.count == 2 && mostLive <= 2, "at most --live-tabs + 1 pages (\(mostLive) seen while 30 tabs opened)")
        #expect(try await Self.liveTargets(setup) <= 2, "Chromium holds no other page of the window")
        _ = try await Self.eventually("the active tab's page loaded") { try await setup.tab(tabs[1]).title == "Page C" ? true : nil }

        // Chromium killed: the renderer starts it again and the live tabs load again.
        let pid = try #require(await setup.renderer.chromiumPID)
        // With --chromium-nice 10, every thread of Chromium and of every process it started runs 10 nicer than the renderer
        // (as root too: Chromium cannot set its display threads' -8, nor its others' 0).
        let own = Int(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
        let niceness = Self.niceness(ofGroup: pid)
        #expect(niceness.count > 10 && Set(niceness) == [min(19, own + 10)], "\(niceness)")
        kill(pid, SIGKILL)
        _ = try await Self.eventually("Chromium started again") { await setup.renderer.starts == 2 ? true : nil }
        _ = try await Self.eventually("the live pages back") { () async throws -> Bool? in
            for tab in [tabs[1], tabs[29]] {
                guard try await setup.renderer.pageHistory(ofTab: tab)?.current?.url == setup.pages.url("/c.html") else { return nil }
            }
            return true
        }
        #expect(await setup.renderer.livePages()[setup.windowID] == [tabs[1], tabs[29]])

        // The profile's incognito profile, made now: its windows are followed too, their pages in a
        // browser context of their own (made again in the restarted Chromium), which shares no storage
        // with the regular pages and goes with the profile.
        let incognito = try await api(setup).createIncognitoProfile(path: .init(profileId: setup.profileID)).created.body.json.id
        let otrWindow = try await api(setup).createWindow(body: .json(.init(profileId: incognito))).created.body.json.id
        let otrTab = try await api(setup).openTab(path: .init(browserId: otrWindow), body: .json(.init(url: setup.pages.url("/a.html"))))
            .created.body.json.id
        _ = try await Self.eventually("the incognito tab's page loaded", state: { await describe(setup, otrTab) }) {
            try await setup.tab(otrTab).title == "Page A" ? true : nil
        }
        // Its context is fenced as the regular pages are.
        let healthz = "fetch('\(setup.server.url.absoluteString)/healthz').then(() => 'reached', () => 'refused')"
        #expect(try await setup.renderer.evaluate(healthz, inTab: otrTab)?.string == "refused")
        let context = try #require(try await setup.renderer.browserContext(ofTab: otrTab))
        #expect(try await setup.renderer.browserContext(ofTab: tabs[1]) != context, "not the regular pages' context")
        #expect(try await setup.renderer.evaluate("localStorage.setItem('who', 'incognito'); document.cookie = 'who=incognito'; 'set'", inTab: otrTab) == "set")
        #expect(try await setup.renderer.evaluate("String(localStorage.getItem('who')) + '|' + document.cookie", inTab: tabs[1]) == "null|")
        #expect(try await setup.renderer.browserContexts().contains(context))
        _ = try await api(setup).deleteProfile(path: .init(profileId: incognito)).noContent
        _ = try await Self.eventually("the incognito pages and their context gone") { () async throws -> Bool? in
            let live = await setup.renderer.livePages()
            let contexts = try await setup.renderer.browserContexts()
            return live[otrWindow] == nil && !contexts.contains(context) ? true : nil
        }
        #expect(await setup.renderer.livePages()[setup.windowID] == [tabs[1], tabs[29]], "the regular pages stay")
    }

    private func api(_ setup: Setup) -> Client { setup.client.api }

    /// A JPEG's width and height, from its first frame header (SOF0…SOF15 but DHT, JPG and DAC).
    static func jpegSize(_ data: Data) -> (width: Int, height: Int)? {
        let bytes = [UInt8](data)
        guard bytes.starts(with: [0xFF, 0xD8]) else { return nil }
        var i = 2
        while i + 9 < bytes.count {
            guard bytes[i] == 0xFF else { return nil }
            let marker = bytes[i + 1]
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                return (Int(bytes[i + 7]) << 8 | Int(bytes[i + 8]), Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]))
            }
            i += 2 + length
        }
        return nil
    }

    /// The niceness of every thread of every process in `pid`'s process group (`/proc/*/task/*/stat`).
    static func niceness(ofGroup pid: pid_t) -> [Int] {
        let group = getpgid(pid)
        var values: [Int] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let candidate = pid_t(entry), getpgid(candidate) == group else { continue }
            for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(entry)/task")) ?? [] {
                guard let stat = try? String(contentsOfFile: "/proc/\(entry)/task/\(task)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { continue }
                // After the command's ")": state is field 3, nice field 19.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                if fields.count > 16, let nice = Int(fields[16]) { values.append(nice) }
            }
        }
        return values
    }

    /// How many pages Chromium itself holds showing the test's pages (its own targets, whatever the
    /// renderer thinks it holds).
    static func liveTargets(_ setup: Setup) async throws -> Int {
        try await eventually(
            "Chromium's targets settle",
            state: { "\((try? await setup.renderer.pageTargets()) ?? []), live \(await setup.renderer.livePages())" }
        ) { () async throws -> Int? in
            let count = try await setup.renderer.pageTargets().filter { $0.hasPrefix(setup.pages.origin) }.count
            return count <= 2 ? count : nil
        }
    }
}
