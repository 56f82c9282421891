import BrowserModel

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
