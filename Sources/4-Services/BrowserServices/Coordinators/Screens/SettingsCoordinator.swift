import BrowserModel

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
