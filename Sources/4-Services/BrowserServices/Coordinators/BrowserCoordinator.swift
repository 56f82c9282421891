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
    let interceptors: [any NavigationInterceptor]
    private var nextID = 1
    var navigating = false
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
        [
            "showTabGrid", "showSettings", "showHistory", "share", "openNewTab", "closeTab", "activateTab", "focusOmnibox",
            "loadURL", "dismissModal",
        ]
    }

    /// The modal shown, if any.
    var modal: Coordinator? { children.first { !($0 === content || $0 === toolbar || $0 === locationBar) } }

    /// The top-most presented screen: the top of the modal chain, or the window itself.
    var topMost: Coordinator {
        guard let modal else { return self }
        if let settings = modal as? SettingsCoordinator, let page = settings.pages.last { return page }
        return modal
    }

    func makeID() -> String {
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
            let tab = TabID(rawValue: try args.requiredString("tabId", command: "share"))
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
    func collectingChanges(_ body: () throws -> Void) rethrows -> PresentationResult {
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
}
