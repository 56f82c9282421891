import TestSupport
import Testing

@testable import BrowserModel

/// A window's bounds: set through the model, told to observers only when they change.
@Suite(.computing) struct WindowBoundsTests {
    final class Recorder: WindowBoundsObserver {
        var seen: [WindowBounds] = []
        func browser(_ browser: Browser, didChangeBounds bounds: WindowBounds) { seen.append(bounds) }
    }

    @Test func boundsChangeOnceAndAreToldOnce() {
        let browser = Browser(browserState: BrowserState(name: "p"))
        let recorder = Recorder()
        browser.addBoundsObserver(recorder)
        #expect(browser.bounds == WindowBounds(x: 0, y: 0, width: 1280, height: 800, state: .normal))
        browser.setBounds(WindowBounds(x: 10, y: 20, width: 1000, height: 700))
        browser.setBounds(WindowBounds(x: 10, y: 20, width: 1000, height: 700))
        browser.setBounds(.maximized)
        #expect(recorder.seen == [WindowBounds(x: 10, y: 20, width: 1000, height: 700), .maximized])
        browser.removeBoundsObserver(recorder)
        browser.setBounds(WindowBounds())
        #expect(recorder.seen.count == 2 && browser.bounds == WindowBounds())
    }
}
