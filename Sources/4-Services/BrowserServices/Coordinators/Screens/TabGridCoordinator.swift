import BrowserModel

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
