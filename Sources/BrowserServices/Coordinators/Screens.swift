import BrowserModel

// The screens a window presents. Always there: tab content (or the new-tab page), toolbar and
// location bar. Presentable, one modal at a time: tab grid, settings (a stack of pages), history,
// share sheet.

/// The active tab's content, or the new-tab page when the active tab shows the new-tab URL.
final class ContentCoordinator: Coordinator {
    override var kind: String { showsNewTabPage ? "ntp" : "content" }
    override var params: [String: String] {
        guard let tab = browser.webStateList.activeWebState else { return [:] }
        return ["tabId": tab.id.rawValue]
    }
    override var navigator: [String] {
        showsNewTabPage ? ["loadURL", "openNewTab", "focusOmnibox", "showHistory"] : ["loadURL", "openNewTab", "share"]
    }
    var showsNewTabPage: Bool { browser.webStateList.activeWebState?.visibleURL == WindowMediator.newTabURL }
}

final class ToolbarCoordinator: Coordinator {
    override var kind: String { "toolbar" }
    override var navigator: [String] { ["showTabGrid", "showSettings", "showHistory", "share", "openNewTab"] }
}

final class LocationBarCoordinator: Coordinator {
    var focused = false

    override var kind: String { "locationBar" }
    override var params: [String: String] { ["focused": focused ? "true" : "false"] }
    override var navigator: [String] { ["focusOmnibox", "loadURL"] }

    override func didStart() {
        handle(UICommands.focusOmnibox) { [unowned self] args in
            try args.only([], command: "focusOmnibox")
            if !focused {
                focused = true
                changes?.changed(self)
            }
            return .none
        }
    }
}

/// The tab grid, on one of its pages.
final class TabGridCoordinator: Coordinator {
    enum Page: String, CaseIterable, Sendable {
        case regular, incognito, recent
    }

    var page: Page

    init(id: String, browser: Browser, page: Page) {
        self.page = page
        super.init(id: id, browser: browser)
    }

    override var kind: String { "tabGrid" }
    override var params: [String: String] { ["page": page.rawValue] }
    override var navigator: [String] { ["showTabGrid", "hideTabGrid", "openNewTab", "closeTab", "activateTab", "dismissModal"] }

    override func didStart() {
        handle(UICommands.hideTabGrid) { [unowned self] args in
            try args.only([], command: "hideTabGrid")
            // It asks for its own dismissal the way any screen does: through the dispatcher.
            return try browser.dispatcher.dispatch(UICommands.dismissModal, [:])
        }
    }
}

/// Settings: its root page, with sections pushed on it in order (its children).
final class SettingsCoordinator: Coordinator {
    enum Section: String, CaseIterable, Sendable {
        case privacy, searchEngine = "search-engine", clearBrowsingData = "clear-browsing-data", appearance
    }

    override var kind: String { "settings" }
    override var navigator: [String] { ["showSettings", "popSettings", "dismissModal"] }

    var pages: [SettingsPageCoordinator] { children.compactMap { $0 as? SettingsPageCoordinator } }

    override func didStart() {
        handle(UICommands.popSettings) { [unowned self] args in
            try args.only([], command: "popSettings")
            // Its pages are its own children; with none left, it asks to be dismissed.
            guard let top = pages.last else { return try browser.dispatcher.dispatch(UICommands.dismissModal, [:]) }
            removeChild(top)
            changes?.popped(top)
            return .none
        }
    }
}

final class SettingsPageCoordinator: Coordinator {
    let section: SettingsCoordinator.Section

    init(id: String, browser: Browser, section: SettingsCoordinator.Section) {
        self.section = section
        super.init(id: id, browser: browser)
    }

    override var kind: String { "settings.page" }
    override var params: [String: String] { ["section": section.rawValue] }
    override var navigator: [String] { ["showSettings", "popSettings", "dismissModal"] }
}

final class HistoryCoordinator: Coordinator {
    override var kind: String { "history" }
    override var navigator: [String] { ["dismissModal", "openNewTab", "loadURL"] }
}

/// The share sheet of one tab; only its user closes it (`dismissModal` from it), never a route.
final class ShareCoordinator: Coordinator {
    let tabID: TabID

    init(id: String, browser: Browser, tabID: TabID) {
        self.tabID = tabID
        super.init(id: id, browser: browser)
    }

    override var kind: String { "share" }
    override var params: [String: String] { ["tabId": tabID.rawValue] }
    override var navigator: [String] { ["dismissModal"] }
    override var isDismissable: Bool { false }
}
