import BrowserModel

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
