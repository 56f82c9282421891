import BrowserModel

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
