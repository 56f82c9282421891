import BrowserModel
import Foundation

// Routing as RouteComposer does it: a route becomes a destination (a chain of steps from the root);
// every step is prepared and every interceptor asked before anything changes; then the deepest step
// already presented is found, what covers it is dismissed, only the missing part is built, context
// tasks run on what was found or built, then post tasks.
extension BrowserCoordinator {

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

    private func modalStep<T: Coordinator>(
        _ type: T.Type, matches: @escaping (T) -> Bool = { _ in true },
        make: @escaping () -> T, contextTask: ((Coordinator) throws -> Void)? = nil
    ) -> Step {
        Step(
            find: { [unowned self] in (modal as? T).flatMap { matches($0) ? $0 : nil } }, make: make, action: .presentModally,
            contextTask: contextTask)
    }

    func destination(for route: Route) throws -> Destination {
        switch route {
        case .tabGrid(let pageName):
            let page = TabGridCoordinator.Page(rawValue: pageName) ?? .regular
            return Destination(steps: [
                rootStep,
                modalStep(
                    TabGridCoordinator.self,
                    make: { [unowned self] in
                        TabGridCoordinator(id: makeID(), browser: browser, page: page)
                    },
                    contextTask: { [unowned self] found in
                        guard let grid = found as? TabGridCoordinator, grid.page != page else { return }
                        grid.page = page
                        changed(grid)
                    }),
            ])
        case .settings(let sectionName):
            var steps = [
                rootStep,
                modalStep(
                    SettingsCoordinator.self,
                    make: { [unowned self] in
                        SettingsCoordinator(id: makeID(), browser: browser)
                    }),
            ]
            if let sectionName, let section = SettingsCoordinator.Section(rawValue: sectionName) {
                steps.append(
                    Step(
                        find: { [unowned self] in
                            (modal as? SettingsCoordinator)?.pages.last { $0.section == section }
                        },
                        make: { [unowned self] in
                            SettingsPageCoordinator(id: makeID(), browser: browser, section: section)
                        }, action: .push))
            }
            return Destination(steps: steps)
        case .history:
            return Destination(steps: [
                rootStep,
                modalStep(
                    HistoryCoordinator.self,
                    make: { [unowned self] in
                        HistoryCoordinator(id: makeID(), browser: browser)
                    }),
            ])
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
            return Destination(
                steps: [rootStep, step],
                postTasks: [
                    { [unowned self] in
                        var args: CommandArguments = ["url": .string(url), "inBackground": .bool(background)]
                        if incognito != browser.isIncognito { args["incognito"] = .bool(incognito) }
                        _ = try browser.dispatcher.dispatch(TabCommands.openNewTab, args)
                    }
                ])
        case .search(let query):
            let encoded = query.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(["&", "+", "=", "#"])) ?? ""
            let url = "https://www.google.com/search?q=\(encoded)"
            return Destination(
                steps: [rootStep, contentStep],
                postTasks: [
                    { [unowned self] in
                        if browser.webStateList.activeWebState != nil {
                            _ = try browser.dispatcher.dispatch(TabCommands.loadURL, ["url": .string(url)])
                        } else {
                            _ = try browser.dispatcher.dispatch(TabCommands.openNewTab, ["url": .string(url)])
                        }
                    }
                ])
        }
    }

    func shareDestination(_ tab: TabID) -> Destination {
        var step = modalStep(
            ShareCoordinator.self, matches: { $0.tabID == tab },
            make: { [unowned self] in
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

    func navigate(to destination: Destination) throws -> PresentationResult {
        guard !navigating else { throw RoutingError.navigationInProgress }
        navigating = true
        defer { navigating = false }
        for step in destination.steps { try step.prepare() }
        // The deepest step already presented; the root always is.
        guard
            let (index, found) = destination.steps.indices.reversed().lazy
                .compactMap({ i in destination.steps[i].find().map { (i, $0) } }).first
        else {
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
            let position = settings.pages.firstIndex(where: { $0 === page })
        {
            return Array(settings.pages[(position + 1)...])
        }
        return []
    }

    /// Takes a screen off: a pushed settings page is popped, a modal dismissed (its pages with it).
    func dismiss(_ screen: Coordinator) {
        if let page = screen as? SettingsPageCoordinator, let settings = modal as? SettingsCoordinator {
            settings.removeChild(page)
            popped(page)
        } else if screen === modal {
            removeChild(screen)
            dismissed(screen)
        }
    }
}
