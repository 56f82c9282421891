import BrowserModel
import Foundation

/// The root of a window's presentation tree, created with the window and stopped with it.
///
/// It always holds the tab content (or new-tab page), the toolbar and the location bar, and at most
/// one modal (tab grid, settings, history, share). It registers the presentation commands and the
/// `route` command, and routes as RouteComposer does (``navigate(to:)``): every step is prepared and
/// every interceptor asked before anything changes; then it finds the deepest step already presented,
/// dismisses what covers it, builds only the missing part, runs context tasks on what it found or
/// built, then post tasks. Anything that changes tabs is dispatched to the window's mediator.
final class BrowserCoordinator: Coordinator, PresentationChanges, WebStateListObserver, WebStateObserver {
    private weak var consumer: (any PresentationConsumer)?
    private let interceptors: [any NavigationInterceptor]
    private var nextID = 1
    private var navigating = false
    /// The changes of the navigation or command being handled.
    private var collecting: [UIChange]?
    let content: ContentCoordinator
    let toolbar: ToolbarCoordinator
    let locationBar: LocationBarCoordinator
    private weak var observedTab: WebState?
    private var lastContent: (kind: String, params: [String: String])

    init(browser: Browser, consumer: (any PresentationConsumer)?, interceptors: [any NavigationInterceptor]) {
        self.consumer = consumer
        self.interceptors = interceptors
        content = ContentCoordinator(id: "u1", browser: browser)
        toolbar = ToolbarCoordinator(id: "u2", browser: browser)
        locationBar = LocationBarCoordinator(id: "u3", browser: browser)
        lastContent = (content.kind, content.params)
        nextID = 4
        super.init(id: "u0", browser: browser)
        changes = self
        for child in [content, toolbar, locationBar] as [Coordinator] { addChild(child) }
    }

    override var kind: String { "browser" }
    override var navigator: [String] {
        ["showTabGrid", "showSettings", "showHistory", "share", "openNewTab", "closeTab", "activateTab", "focusOmnibox",
         "loadURL", "dismissModal"]
    }

    /// The modal shown, if any.
    var modal: Coordinator? { children.first { !($0 === content || $0 === toolbar || $0 === locationBar) } }

    /// The top-most presented screen: the top of the modal chain, or the window itself.
    var topMost: Coordinator {
        guard let modal else { return self }
        if let settings = modal as? SettingsCoordinator, let page = settings.pages.last { return page }
        return modal
    }

    private func makeID() -> String {
        defer { nextID += 1 }
        return "u\(nextID)"
    }

    // MARK: Lifecycle

    override func didStart() {
        for child in children { child.start() }
        browser.webStateList.addObserver(self)
        followActiveTab()
        handle(UICommands.showTabGrid) { [unowned self] args in
            try args.only(["page"], command: "showTabGrid")
            let page = try args.string("page", command: "showTabGrid") ?? (modal as? TabGridCoordinator)?.page.rawValue ?? "regular"
            guard TabGridCoordinator.Page(rawValue: page) != nil else {
                throw ModelError.invalidCommandArguments(command: "showTabGrid", reason: "page must be regular, incognito or recent")
            }
            return .presentation(try navigate(to: .tabGrid(page: page)))
        }
        handle(UICommands.showSettings) { [unowned self] args in
            try args.only(["section"], command: "showSettings")
            let section = try args.string("section", command: "showSettings")
            if let section, SettingsCoordinator.Section(rawValue: section) == nil {
                throw ModelError.invalidCommandArguments(command: "showSettings", reason: "unknown section '\(section)'")
            }
            return .presentation(try navigate(to: .settings(section: section)))
        }
        handle(UICommands.showHistory) { [unowned self] args in
            try args.only([], command: "showHistory")
            return .presentation(try navigate(to: .history))
        }
        handle(UICommands.share) { [unowned self] args in
            try args.only(["tabId"], command: "share")
            let tab = TabID(rawValue: try args.string("tabId", command: "share", required: true)!)
            return .presentation(try navigate(to: shareDestination(tab)))
        }
        handle(UICommands.dismissModal) { [unowned self] args in
            try args.only([], command: "dismissModal")
            return .presentation(collectingChanges { if let modal { dismiss(modal) } })
        }
        browser.dispatcher.install(UICommands.route, owner: self, handlerName: "BrowserCoordinator") { [unowned self] route in
            try navigate(to: route)
        }
    }

    override func didStop() {
        super.didStop()
        browser.webStateList.removeObserver(self)
        observedTab?.removeObserver(self)
        observedTab = nil
    }

    // MARK: PresentationChanges

    private func record(_ op: UIChange.Operation, _ coordinator: Coordinator) {
        collecting?.append(UIChange(op: op, nodeID: coordinator.id, kind: coordinator.kind))
    }

    /// Runs `body`, collecting the tree's changes it makes (a nested call, e.g. `hideTabGrid` sending
    /// `dismissModal`, adds to the outer collection and answers its own part).
    private func collectingChanges(_ body: () throws -> Void) rethrows -> PresentationResult {
        let isOuter = collecting == nil
        if isOuter { collecting = [] }
        defer { if isOuter { collecting = nil } }
        let start = collecting?.count ?? 0
        try body()
        return PresentationResult(tree: node, changes: Array((collecting ?? []).dropFirst(start)))
    }

    func presented(_ coordinator: Coordinator) {
        record(.presented, coordinator)
        consumer?.presented(coordinator.node, parentID: id)
    }

    func dismissed(_ coordinator: Coordinator) {
        record(.dismissed, coordinator)
        consumer?.dismissed(nodeID: coordinator.id, kind: coordinator.kind)
    }

    func pushed(_ coordinator: Coordinator) {
        record(.pushed, coordinator)
        consumer?.pushed(coordinator.node, parentID: modal?.id ?? id)
    }

    func popped(_ coordinator: Coordinator) {
        record(.popped, coordinator)
        consumer?.popped(nodeID: coordinator.id, kind: coordinator.kind)
    }

    func changed(_ coordinator: Coordinator) {
        record(.changed, coordinator)
        consumer?.changed(coordinator.node)
    }

    // MARK: Following the active tab (content / new-tab page, omnibox focus)

    private func followActiveTab() {
        let active = browser.webStateList.activeWebState
        if active !== observedTab {
            observedTab?.removeObserver(self)
            active?.addObserver(self)
            observedTab = active
        }
        let now = (content.kind, content.params)
        if now.0 != lastContent.kind || now.1 != lastContent.params {
            lastContent = now
            if locationBar.focused {
                locationBar.focused = false
                changed(locationBar)
            }
            changed(content)
        }
    }

    func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus) { followActiveTab() }
    func webStateDidChange(_ webState: WebState, change: WebStateChange) {
        if change == .navigation { followActiveTab() }
    }

    // MARK: Routing

    /// Where a route leads: its chain of steps from the root, and what runs after.
    struct Destination {
        var steps: [Step]
        var postTasks: [() throws -> Void] = []
    }

    /// One screen on the way (RouteComposer's step): how to find it in the tree, make it, and attach it.
    struct Step {
        enum Action { case root, presentModally, push }

        var find: () -> Coordinator?
        var make: () -> Coordinator = { fatalError("a found-only step has no factory") }
        var action: Action
        /// Checks, before anything changes, that the step can be taken.
        var prepare: () throws -> Void = {}
        /// Runs on the screen once found or built.
        var contextTask: ((Coordinator) throws -> Void)?
    }

    private var rootStep: Step { Step(find: { [unowned self] in self }, action: .root) }
    private var contentStep: Step { Step(find: { [unowned self] in content }, action: .root) }

    private func modalStep<T: Coordinator>(_ type: T.Type, matches: @escaping (T) -> Bool = { _ in true },
                                           make: @escaping () -> T, contextTask: ((Coordinator) throws -> Void)? = nil) -> Step {
        Step(find: { [unowned self] in (modal as? T).flatMap { matches($0) ? $0 : nil } }, make: make, action: .presentModally,
             contextTask: contextTask)
    }

    func destination(for route: Route) throws -> Destination {
        switch route {
        case .tabGrid(let pageName):
            let page = TabGridCoordinator.Page(rawValue: pageName) ?? .regular
            return Destination(steps: [rootStep, modalStep(TabGridCoordinator.self, make: { [unowned self] in
                TabGridCoordinator(id: makeID(), browser: browser, page: page)
            }, contextTask: { [unowned self] found in
                guard let grid = found as? TabGridCoordinator, grid.page != page else { return }
                grid.page = page
                changed(grid)
            })])
        case .settings(let sectionName):
            var steps = [rootStep, modalStep(SettingsCoordinator.self, make: { [unowned self] in
                SettingsCoordinator(id: makeID(), browser: browser)
            })]
            if let sectionName, let section = SettingsCoordinator.Section(rawValue: sectionName) {
                steps.append(Step(find: { [unowned self] in
                    (modal as? SettingsCoordinator)?.pages.last { $0.section == section }
                }, make: { [unowned self] in
                    SettingsPageCoordinator(id: makeID(), browser: browser, section: section)
                }, action: .push))
            }
            return Destination(steps: steps)
        case .history:
            return Destination(steps: [rootStep, modalStep(HistoryCoordinator.self, make: { [unowned self] in
                HistoryCoordinator(id: makeID(), browser: browser)
            })])
        case .tab(let id):
            var step = contentStep
            step.prepare = { [unowned self] in
                guard browser.webStateList.index(ofTabWithID: id) >= 0 else {
                    throw RoutingError.notHandled("tab \(id) is not in this window")
                }
            }
            step.contextTask = { [unowned self] _ in
                if browser.webStateList.activeWebState?.id != id {
                    _ = try browser.dispatcher.dispatch(TabCommands.activateTab, ["tabId": .string(id.rawValue)])
                }
            }
            return Destination(steps: [rootStep, step])
        case .open(let url, let incognito, let background):
            var step = contentStep
            step.prepare = { _ = try URLNormalizer.normalize(url) }
            return Destination(steps: [rootStep, step], postTasks: [{ [unowned self] in
                var args: CommandArguments = ["url": .string(url), "inBackground": .bool(background)]
                if incognito != browser.isIncognito { args["incognito"] = .bool(incognito) }
                _ = try browser.dispatcher.dispatch(TabCommands.openNewTab, args)
            }])
        case .search(let query):
            let encoded = query.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(["&", "+", "=", "#"])) ?? ""
            let url = "https://www.google.com/search?q=\(encoded)"
            return Destination(steps: [rootStep, contentStep], postTasks: [{ [unowned self] in
                if browser.webStateList.activeWebState != nil {
                    _ = try browser.dispatcher.dispatch(TabCommands.loadURL, ["url": .string(url)])
                } else {
                    _ = try browser.dispatcher.dispatch(TabCommands.openNewTab, ["url": .string(url)])
                }
            }])
        }
    }

    func shareDestination(_ tab: TabID) -> Destination {
        var step = modalStep(ShareCoordinator.self, matches: { $0.tabID == tab }, make: { [unowned self] in
            ShareCoordinator(id: makeID(), browser: browser, tabID: tab)
        })
        step.prepare = { [unowned self] in
            guard browser.webStateList.index(ofTabWithID: tab) >= 0 else { throw ModelError.tabNotFound(tab) }
        }
        return Destination(steps: [rootStep, step])
    }

    /// Takes the window to `route`.
    /// - Throws: ``RoutingError`` (or the model's error of a context or post task); nothing has
    ///   changed when preparation, an interceptor or a dismissal check refuses.
    func navigate(to route: Route) throws -> PresentationResult {
        for interceptor in interceptors { try interceptor.check(.route(route), in: browser) }
        return try navigate(to: try destination(for: route))
    }

    /// Checks a presentation command sent from a screen against that screen's navigator and the
    /// interceptors (REST resource endpoints are not screens' requests and are not checked).
    /// - Parameter from: the sending screen's node id; nil judges against the top-most screen.
    func checkCommand(_ name: String, arguments: CommandArguments, from: String?) throws {
        let sender: Coordinator
        if let from {
            guard let found = find(from) else { throw RoutingError.unknownNode(from) }
            sender = found
        } else {
            sender = topMost
        }
        guard sender.navigator.contains(name) else { throw RoutingError.notInNavigator(command: name, node: sender.id) }
        for interceptor in interceptors { try interceptor.check(.command(name: name, arguments: arguments), in: browser) }
    }

    private func navigate(to destination: Destination) throws -> PresentationResult {
        guard !navigating else { throw RoutingError.navigationInProgress }
        navigating = true
        defer { navigating = false }
        for step in destination.steps { try step.prepare() }
        // The deepest step already presented; the root always is.
        guard let (index, found) = destination.steps.indices.reversed().lazy
            .compactMap({ i in destination.steps[i].find().map { (i, $0) } }).first else {
            throw RoutingError.compositionFailed("no step of the route is presented")
        }
        let covering = coveringScreens(of: found)
        if let stuck = covering.first(where: { !$0.isDismissable }) {
            throw RoutingError.cannotBeDismissed("the \(stuck.kind) screen \(stuck.id) cannot be dismissed by a route; close it first")
        }
        return try collectingChanges {
        for screen in covering.reversed() { dismiss(screen) }
        try destination.steps[index].contextTask?(found)
        var parent = found
        for step in destination.steps[(index + 1)...] {
            let screen = step.make()
            switch step.action {
            case .presentModally:
                addChild(screen)
                screen.start()
                presented(screen)
            case .push:
                parent.addChild(screen)
                screen.start()
                pushed(screen)
            case .root:
                throw RoutingError.compositionFailed("the root step must be found, not built")
            }
            try step.contextTask?(screen)
            parent = screen
        }
        for task in destination.postTasks { try task() }
        }
    }

    /// What a route to `screen` must dismiss first.
    private func coveringScreens(of screen: Coordinator) -> [Coordinator] {
        if screen === self || screen === content || screen === toolbar || screen === locationBar {
            return modal.map { [$0] } ?? []
        }
        if let settings = screen as? SettingsCoordinator { return settings.pages }
        if let page = screen as? SettingsPageCoordinator, let settings = modal as? SettingsCoordinator,
           let position = settings.pages.firstIndex(where: { $0 === page }) {
            return Array(settings.pages[(position + 1)...])
        }
        return []
    }

    /// Takes a screen off: a pushed settings page is popped, a modal dismissed (its pages with it).
    private func dismiss(_ screen: Coordinator) {
        if let page = screen as? SettingsPageCoordinator, let settings = modal as? SettingsCoordinator {
            settings.removeChild(page)
            popped(page)
        } else if screen === modal {
            removeChild(screen)
            dismissed(screen)
        }
    }
}
