public import Foundation

/// A window (Chromium's Browser): its profile, its tabs, its own dispatcher and broadcaster.
public final class Browser {
    public enum Kind: String, Sendable {
        case regular, incognito
    }

    public let id: BrowserID
    public let browserState: BrowserState
    public let webStateList: WebStateList
    public let dispatcher = Dispatcher()
    public let broadcaster = Broadcaster()
    /// Per-window attachments (mediators, agents).
    public let userData = UserData()
    public let createdAt: Date
    /// When a tab was last activated in this window (or when it was created); set when restoring.
    public var lastActiveAt: Date
    /// Where the window is on screen and how big, and whether it is maximized or minimized (what
    /// WebDriver's window rect commands read and set). Kept in memory only.
    public private(set) var bounds = WindowBounds()
    private var boundsObservers: [WeakBoundsObserver] = []

    public init(
        id: BrowserID = .make(), browserState: BrowserState, maxTabs: Int = ModelLimits().tabsPerWindow,
        createdAt: Date = Date()
    ) {
        self.id = id
        self.browserState = browserState
        self.webStateList = WebStateList(maxCount: maxTabs)
        self.createdAt = createdAt
        self.lastActiveAt = createdAt
        for key in broadcaster.keys { try? broadcaster.startBroadcasting(key.name) }
    }

    /// Moves or resizes the window.
    /// - Observers: `didChangeBounds`, when the bounds really change.
    public func setBounds(_ new: WindowBounds) {
        guard new != bounds else { return }
        bounds = new
        for box in boundsObservers { box.observer?.browser(self, didChangeBounds: new) }
    }

    public func addBoundsObserver(_ observer: any WindowBoundsObserver) {
        boundsObservers.removeAll { $0.observer == nil || $0.observer === observer }
        boundsObservers.append(WeakBoundsObserver(observer: observer))
    }

    public func removeBoundsObserver(_ observer: any WindowBoundsObserver) {
        boundsObservers.removeAll { $0.observer == nil || $0.observer === observer }
    }

    public var kind: Kind { browserState.isOffTheRecord ? .incognito : .regular }
    public var isIncognito: Bool { browserState.isOffTheRecord }
}

/// A window's place and size on screen (WebDriver's WindowRect) and its state.
public struct WindowBounds: Sendable, Equatable {
    public enum State: String, Sendable {
        case normal, maximized, minimized
    }

    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public var state: State

    public init(x: Int = 0, y: Int = 0, width: Int = 1280, height: Int = 800, state: State = .normal) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.state = state
    }

    /// Maximized on a 1920×1080 screen.
    public static let maximized = WindowBounds(x: 0, y: 0, width: 1920, height: 1080, state: .maximized)
}

/// Watches a window's bounds.
public protocol WindowBoundsObserver: AnyObject {
    func browser(_ browser: Browser, didChangeBounds bounds: WindowBounds)
}

private struct WeakBoundsObserver {
    weak var observer: (any WindowBoundsObserver)?
}
