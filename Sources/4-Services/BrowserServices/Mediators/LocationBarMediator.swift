import BrowserModel

/// Tells a ``LocationBarConsumer`` what the location bar shows.
final class LocationBarMediator: ActiveTabMediator<LocationBarState> {
    private weak var consumer: (any LocationBarConsumer)?

    init(browser: Browser, consumer: any LocationBarConsumer) {
        self.consumer = consumer
        super.init(browser: browser)
        start()
    }

    override func currentState() -> LocationBarState {
        let url = browser.webStateList.activeWebState?.visibleURL ?? ""
        return LocationBarState(displayURL: url, secure: url.lowercased().hasPrefix("https://"))
    }

    override func send(_ state: LocationBarState) { consumer?.update(location: state) }
}
