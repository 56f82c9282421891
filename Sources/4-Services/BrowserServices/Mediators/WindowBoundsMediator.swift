import BrowserModel

/// Tells a ``WindowBoundsConsumer`` when the window moves, resizes, maximizes or minimizes.
final class WindowBoundsMediator: WindowBoundsObserver {
    private unowned let browser: Browser
    private weak var consumer: (any WindowBoundsConsumer)?

    init(browser: Browser, consumer: any WindowBoundsConsumer) {
        self.browser = browser
        self.consumer = consumer
        browser.addBoundsObserver(self)
    }

    func stop() {
        browser.removeBoundsObserver(self)
        consumer = nil
    }

    func browser(_ browser: Browser, didChangeBounds bounds: WindowBounds) { consumer?.update(bounds: bounds) }
}
