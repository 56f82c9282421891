import BrowserModel

/// A mediator whose state comes from the window's active tab (toolbar, location bar): it follows the
/// active tab and recomputes after every list change and every change of that tab. Subclasses say
/// what to compute and whom to tell; a value equal to the last one is not sent again.
class ActiveTabMediator<State: Equatable>: WebStateListObserver, WebStateObserver {
    unowned let browser: Browser
    private weak var active: WebState?
    private(set) var last: State?

    init(browser: Browser) {
        self.browser = browser
        browser.webStateList.addObserver(self)
    }

    /// Sends the current state (call once the subclass is ready).
    func start() { refresh() }

    func stop() {
        browser.webStateList.removeObserver(self)
        active?.removeObserver(self)
        active = nil
    }

    /// The state to show now.
    func currentState() -> State { fatalError("subclass") }

    /// Tells the consumer.
    func send(_ state: State) {}

    private func refresh() {
        let now = browser.webStateList.activeWebState
        if now !== active {
            active?.removeObserver(self)
            now?.addObserver(self)
            active = now
        }
        let state = currentState()
        guard state != last else { return }
        last = state
        send(state)
    }

    func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus) { refresh() }
    func webStateDidChange(_ webState: WebState, change: WebStateChange) { refresh() }
}
