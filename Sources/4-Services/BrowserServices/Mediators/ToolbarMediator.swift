import BrowserModel

/// Tells a ``ToolbarConsumer`` what the toolbar shows.
final class ToolbarMediator: ActiveTabMediator<ToolbarState> {
    private weak var consumer: (any ToolbarConsumer)?

    init(browser: Browser, consumer: any ToolbarConsumer) {
        self.consumer = consumer
        super.init(browser: browser)
        start()
    }

    override func currentState() -> ToolbarState {
        let tab = browser.webStateList.activeWebState
        return ToolbarState(
            canGoBack: tab?.canGoBack ?? false, canGoForward: tab?.canGoForward ?? false,
            loading: tab?.isLoading ?? false, progress: tab?.progress ?? 0,
            tabCount: browser.webStateList.count, incognito: browser.isIncognito)
    }

    override func send(_ state: ToolbarState) { consumer?.update(toolbar: state) }
}
