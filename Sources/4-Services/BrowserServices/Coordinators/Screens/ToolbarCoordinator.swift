import BrowserModel

final class ToolbarCoordinator: Coordinator {
    override var kind: String { "toolbar" }
    override var navigator: [String] { ["showTabGrid", "showSettings", "showHistory", "share", "openNewTab"] }
}
