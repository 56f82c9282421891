import BrowserModel

/// The consumer-facing mediators of one window (tab collection, groups, toolbar, location bar,
/// broadcasts), all telling the window's event recorder. Started with the window, stopped with it.
final class WindowEventMediators {
    let recorder: WindowEventRecorder
    private let hub: EventHub
    private var tabs: TabCollectionMediator?
    private var groups: TabGroupMediator?
    private var toolbar: ToolbarMediator?
    private var location: LocationBarMediator?
    private var broadcasts: BroadcastMediator?
    private var bounds: WindowBoundsMediator?

    init(browser: Browser, hub: EventHub, window: WindowSnapshot) {
        self.hub = hub
        let first = WindowStreamSnapshot(
            window: window, toolbar: ToolbarState(canGoBack: false, canGoForward: false, loading: false, progress: 0, tabCount: 0, incognito: false),
            location: LocationBarState(displayURL: "", secure: false), broadcasts: [], tree: nil)
        let recorder = WindowEventRecorder(browserID: browser.id, channel: hub.openWindow(browser.id, snapshot: first))
        self.recorder = recorder
        tabs = TabCollectionMediator(list: browser.webStateList, consumer: recorder)
        groups = TabGroupMediator(list: browser.webStateList, consumer: recorder)
        toolbar = ToolbarMediator(browser: browser, consumer: recorder)
        location = LocationBarMediator(browser: browser, consumer: recorder)
        broadcasts = BroadcastMediator(broadcaster: browser.broadcaster, consumer: recorder)
        bounds = WindowBoundsMediator(browser: browser, consumer: recorder)
    }

    /// Makes the window as it is now the stream's first state: what the mediators (and the
    /// coordinator, given as `tree`) said on starting is not news.
    func begin(_ window: WindowSnapshot, tree: @escaping () -> UINode?) {
        recorder.tree = tree
        recorder.discardPending()
        recorder.channel.setSnapshot(recorder.snapshot(window))
    }

    /// Sends the operation's events (the snapshot is read only when there are some).
    func flush(_ window: () -> WindowSnapshot?) {
        guard recorder.hasPending, let window = window() else { return }
        recorder.flush(window)
    }

    /// Stops the mediators and ends the window's stream with `browser.closed`.
    func stop(_ window: WindowSnapshot?) {
        tabs?.stop()
        groups?.stop()
        toolbar?.stop()
        location?.stop()
        broadcasts?.stop()
        bounds?.stop()
        bounds = nil
        tabs = nil
        groups = nil
        toolbar = nil
        location = nil
        broadcasts = nil
        recorder.close(window)
        hub.closeWindow(recorder.browserID)
    }
}
