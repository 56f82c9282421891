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

    public init(id: BrowserID = .make(), browserState: BrowserState, maxTabs: Int = ModelLimits().tabsPerWindow,
                createdAt: Date = Date()) {
        self.id = id
        self.browserState = browserState
        self.webStateList = WebStateList(maxCount: maxTabs)
        self.createdAt = createdAt
        self.lastActiveAt = createdAt
        for key in broadcaster.keys { try? broadcaster.startBroadcasting(key.name) }
    }

    public var kind: Kind { browserState.isOffTheRecord ? .incognito : .regular }
    public var isIncognito: Bool { browserState.isOffTheRecord }
}
