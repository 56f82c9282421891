/// Every window of a profile and its off-the-record profile (spec §7, one shared list for both).
public final class BrowserList {
    /// Which windows to list.
    public enum Filter: Sendable {
        case regular, incognito, all
    }

    private var browsers: [Browser] = []
    /// The windows by id, and how many are incognito: O(1) lookups and counts.
    private var byID: [BrowserID: Browser] = [:]
    private var incognitoCount = 0
    private var observers: [WeakBrowserListObserver] = []

    public init() {}

    /// Adds a window.
    /// - Throws: when it is already in the list (a programming error in Chromium).
    /// - Observers: `didAdd`.
    public func add(_ browser: Browser) throws {
        guard byID[browser.id] == nil else {
            throw ModelError.invalidArgument("window \(browser.id) is already in the browser list")
        }
        browsers.append(browser)
        byID[browser.id] = browser
        if browser.isIncognito { incognitoCount += 1 }
        for box in observers { box.observer?.browserList(self, didAdd: browser) }
    }

    /// Removes a window; a no-op, with no notification, when it is not in the list.
    /// - Observers: `didRemove`, after removal.
    public func remove(_ browser: Browser) {
        guard byID[browser.id] === browser, let index = browsers.firstIndex(where: { $0 === browser }) else { return }
        browsers.remove(at: index)
        byID[browser.id] = nil
        if browser.isIncognito { incognitoCount -= 1 }
        for box in observers { box.observer?.browserList(self, didRemove: browser) }
    }

    /// A snapshot of the windows of one kind, in the order they were added.
    public func browsers(_ filter: Filter = .all) -> [Browser] {
        switch filter {
        case .all: browsers
        case .regular: browsers.filter { !$0.isIncognito }
        case .incognito: browsers.filter(\.isIncognito)
        }
    }

    public func browser(withID id: BrowserID) -> Browser? { byID[id] }

    public var count: Int { browsers.count }

    /// How many windows of one kind there are; O(1).
    public func count(_ filter: Filter) -> Int {
        switch filter {
        case .all: browsers.count
        case .regular: browsers.count - incognitoCount
        case .incognito: incognitoCount
        }
    }

    public func addObserver(_ observer: any BrowserListObserver) {
        observers.removeAll { $0.observer == nil || $0.observer === observer }
        observers.append(WeakBrowserListObserver(observer: observer))
    }

    public func removeObserver(_ observer: any BrowserListObserver) {
        observers.removeAll { $0.observer == nil || $0.observer === observer }
    }

    /// Tells observers the list is going away.
    public func shutdown() {
        for box in observers { box.observer?.browserListWillShutdown(self) }
    }
}

/// Watches windows come and go.
public protocol BrowserListObserver: AnyObject {
    func browserList(_ list: BrowserList, didAdd browser: Browser)
    func browserList(_ list: BrowserList, didRemove browser: Browser)
    func browserListWillShutdown(_ list: BrowserList)
}

extension BrowserListObserver {
    public func browserList(_ list: BrowserList, didAdd browser: Browser) {}
    public func browserList(_ list: BrowserList, didRemove browser: Browser) {}
    public func browserListWillShutdown(_ list: BrowserList) {}
}

struct WeakBrowserListObserver {
    weak var observer: (any BrowserListObserver)?
}
