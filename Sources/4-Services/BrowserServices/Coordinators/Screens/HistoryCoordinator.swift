import BrowserModel

final class HistoryCoordinator: Coordinator {
    override var kind: String { "history" }
    override var navigator: [String] { ["dismissModal", "openNewTab", "loadURL"] }
}
