/// Every window of a profile and its off-the-record profile (spec §7, one shared list for both).
public final class BrowserList {
    /// Which windows to list.
    public enum Filter: Sendable {
        case regular, incognito, all
    }

    private var browsers: [Browser] = []
    private var observers: [WeakBrowserListObserver] = []

    public init() {}

    /// Adds a window.
    /// - Throws: when it is already in the list (a programming error in Chromium).
    /// - Observers: `didAdd`.
    public func add(_ browser: Browser) throws {
        guard !browsers.contains(where: { $0 === browser }) else {
            throw ModelError.invalidArgument("window \(browser.id) is already in the browser list")
        }
        browsers.append(browser)
        for box in observers { box.observer?.browserList(self, didAdd: browser) }
    }

    /// Removes a window; a no-op, with no notification, when it is not in the list.
    /// - Observers: `didRemove`, after removal.
    public func remove(_ browser: Browser) {
        guard let index = browsers.firstIndex(where: { $0 === browser }) else { return }
        browsers.remove(at: index)
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

    public func browser(withID id: BrowserID) -> Browser? { browsers.first { $0.id == id } }

    public var count: Int { browsers.count }

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
