import BrowserModel

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
