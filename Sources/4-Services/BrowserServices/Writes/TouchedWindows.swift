import BrowserModel

/// The windows of a profile that the current operation touched (a model change, or an event to send),
/// in the order they were first touched: the only ones published, flushed and collected when the
/// operation ends, so an operation costs O(what it touched) whatever the profile's window count
/// (Chromium's clean-to-dirty callback of session saving). Lives on the profile's executor.
final class TouchedWindows {
    private(set) var browsers: [Browser] = []
    private var members: Set<ObjectIdentifier> = []

    /// Notes `browser` (once per operation).
    func touch(_ browser: Browser) {
        guard members.insert(ObjectIdentifier(browser)).inserted else { return }
        browsers.append(browser)
    }

    func removeAll() {
        browsers.removeAll(keepingCapacity: true)
        members.removeAll(keepingCapacity: true)
    }
}
