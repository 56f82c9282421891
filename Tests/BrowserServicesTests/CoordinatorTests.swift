import BrowserModel
import TestSupport
import Testing

@testable import BrowserServices

/// Records what a coordinator's lifecycle did, in order.
final class LifecycleProbe: Coordinator {
    let log: (String) -> Void
    init(_ id: String, browser: Browser, log: @escaping (String) -> Void) {
        self.log = log
        super.init(id: id, browser: browser)
    }
    override var kind: String { "probe" }
    override func didStart() { log("start \(id)") }
    override func didStop() {
        super.didStop()
        log("stop \(id)")
    }
}

@Suite(.computing) struct CoordinatorTests {
    private func browser() throws -> (ProfileSession, Browser) {
        let session = ProfileSession(browserState: BrowserState(name: "c"))
        return (session, try session.createBrowser())
    }

    @Test func startAndStopAreIdempotentAndStopStopsChildrenFirst() throws {
        let (_, window) = try browser()
        var log: [String] = []
        let root = LifecycleProbe("root", browser: window) { log.append($0) }
        let a = LifecycleProbe("a", browser: window) { log.append($0) }
        let b = LifecycleProbe("b", browser: window) { log.append($0) }
        root.addChild(a)
        root.addChild(b)
        root.start()
        root.start()
        a.start()
        b.start()
        root.stop()
        root.stop()
        #expect(log == ["start root", "start a", "start b", "stop b", "stop a", "stop root"])
        // A removed child is stopped; removing a stranger does nothing.
        log = []
        root.start()
        a.start()
        root.removeChild(a)
        root.removeChild(a)
        #expect(log == ["start root", "start a", "stop a"])
        #expect(root.children.map(\.id) == ["b"])
    }

    @Test func coordinatorsStoppedWithTheirWindowUnregisterTheirCommands() throws {
        let session = ProfileSession(browserState: BrowserState(name: "w"))
        let snapshots = SnapshotIndex(events: EventHub(framing: TestFraming()))
        _ = ProfileMediator.attach(to: session, snapshots: snapshots)
        let window = try session.createBrowser()
        let registered = Set(window.dispatcher.registeredCommands.map(\.name))
        #expect(
            registered.isSuperset(of: [
                "showTabGrid", "showSettings", "showHistory", "share", "dismissModal", "focusOmnibox", "route",
                "openNewTab", "closeTab", "activateTab", "loadURL",
            ]))
        #expect(!registered.contains("hideTabGrid"), "registered only while the grid is shown")
        _ = try window.dispatcher.dispatch(UICommands.route, .tabGrid(page: "regular"))
        #expect(window.dispatcher.isRegistered("hideTabGrid"))
        try session.closeBrowser(window)
        #expect(window.dispatcher.registeredCommands.isEmpty, "\(window.dispatcher.registeredCommands.map(\.name))")
    }

    @Test func aNavigationStartedDuringANavigationIsRefused() throws {
        let (_, window) = try browser()
        let coordinator = BrowserCoordinator(browser: window, consumer: nil, interceptors: [])
        coordinator.start()
        // A handler that, while the route's post task runs, asks for another route.
        let owner = LifecycleProbe("owner", browser: window) { _ in }
        try window.dispatcher.register(TabCommands.openNewTab, owner: owner, handlerName: "test") { _ in
            _ = try window.dispatcher.dispatch(UICommands.route, .history)
            throw ModelError.invalidArgument("unreachable")
        }
        #expect(throws: RoutingError.navigationInProgress) {
            try coordinator.navigate(to: .open(url: "https://a.example/", incognito: false, background: false))
        }
        // Preparation failures change nothing.
        let before = coordinator.node
        #expect(throws: RoutingError.self) { try coordinator.navigate(to: .tab(TabID(rawValue: "tnope"))) }
        #expect(throws: ModelError.self) { try coordinator.navigate(to: .open(url: "javascript:alert(1)", incognito: false, background: false)) }
        #expect(coordinator.node == before)
    }

    @Test func routesParseStrictly() throws {
        #expect(try RouteBuilder.route(from: "browserd://tab-grid") == .tabGrid(page: "regular"))
        #expect(try RouteBuilder.route(from: "browserd://tab-grid?page=recent") == .tabGrid(page: "recent"))
        #expect(try RouteBuilder.route(from: "browserd://settings/search-engine") == .settings(section: "search-engine"))
        #expect(try RouteBuilder.route(from: "BROWSERD://history") == .history)
        #expect(try RouteBuilder.route(from: "browserd://tab/t1") == .tab(TabID(rawValue: "t1")))
        #expect(
            try RouteBuilder.route(from: "browserd://open?url=https%3A%2F%2Fa.example&incognito=1&background=0")
                == .open(url: "https://a.example", incognito: true, background: false))
        #expect(try RouteBuilder.route(from: "browserd://search?q=a%20b") == .search(query: "a b"))
        for bad in [
            "browserd://tab-grid/x", "browserd://tab-grid?page=1&page=2", "browserd://settings/a/b", "browserd://tab",
            "browserd://open?url=x&incognito=maybe", "http://tab-grid", "browserd://search", "not a url at all %%",
        ] {
            #expect(throws: RoutingError.self, "\(bad)") { try RouteBuilder.route(from: bad) }
        }
    }
}
