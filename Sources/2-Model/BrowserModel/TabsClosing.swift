public import Foundation

/// Which tabs a close-all closes (Chromium iOS `TabsCloser::ClosePolicy`).
public enum TabsClosePolicy: String, Sendable, CaseIterable {
    /// Every tab, pinned ones too.
    case allTabs
    /// Every tab that is not pinned.
    case regularTabs
}

/// One close-all that can still be undone (Chromium iOS `TabsCloser`): the tabs it took out of each
/// window, with everything one call needs to bring them back as they were — order, pinned state,
/// groups, openers and the active tab. Until it is confirmed (or undone), the tabs of regular windows
/// are parked in the recently-closed list under ``id`` (saved, not listed).
///
/// Its tabs stay charged to their profile's ``ByteBudget`` while it is pending — histories, pictures
/// and favicons, incognito ones too — as they are still held: closing and undoing can never take a
/// profile past its budget. Confirming (or forgetting) it gives their bytes back.
public final class TabsClosing {
    /// A tab taken out, and where it was.
    public struct Parked {
        public let webState: WebState
        public let index: Int
        public let pinned: Bool
        public let group: ClosedTabGroup?
        public let opener: WebState?
        public let wasActive: Bool
    }

    /// The tabs taken out of one window, in the order they had.
    public struct Part {
        public let browserID: BrowserID
        public let incognito: Bool
        public let tabs: [Parked]
    }

    public let id: ClosedTabID
    public let policy: TabsClosePolicy
    public let parts: [Part]
    public let closedAt: Date

    init(id: ClosedTabID, policy: TabsClosePolicy, parts: [Part], closedAt: Date) {
        self.id = id
        self.policy = policy
        self.parts = parts
        self.closedAt = closedAt
    }

    /// Every tab it closed, window by window in order.
    public var tabs: [WebState] { parts.flatMap { $0.tabs.map(\.webState) } }
}

// Close-all and its undo (Chromium iOS `TabsCloser`: CloseTabs / UndoCloseTabs / ConfirmDeletion).
extension ProfileSession {
    /// Closes the tabs `policy` names in each of `browsers` so that ``undoClosing(_:)`` can bring them
    /// all back. Each window's tabs leave in one batch (a detach per tab: the tabs are kept, not
    /// destroyed). Regular windows' remembered tabs are parked in ``recentlyClosed`` until
    /// ``confirmClosing(_:)``, which records them as recently closed.
    /// - Precondition: every browser is a window of this session (the caller checked).
    /// - Throws: what ``requireClosable(_:policy:)`` throws (nothing changes then).
    /// - Returns: the closing (also kept in ``closings`` until confirmed or undone, unless it closed
    ///   nothing: then there is nothing to undo, and it is not kept).
    /// - Observers: per window a batch with a `detach` per tab; `didRecord(parked: true)` on the recently-closed list.
    @discardableResult
    public func closeTabs(in browsers: [Browser], policy: TabsClosePolicy, id: ClosedTabID = .make(), closedAt: Date = Date()) throws -> TabsClosing {
        try requireClosable(browsers, policy: policy)
        var parts: [TabsClosing.Part] = []
        var remembered: [ClosedTab] = []
        for browser in browsers {
            let list = browser.webStateList
            let first = policy == .allTabs ? 0 : list.pinnedCount
            guard first < list.count else { continue }
            let indices = Array(first..<list.count)
            let active = list.activeWebState
            let tabs = indices.map { index -> TabsClosing.Parked in
                let tab = list.webState(at: index)!
                let group = list.group(at: index).map { ClosedTabGroup(id: $0.id, visualData: $0.visualData) }
                return TabsClosing.Parked(
                    webState: tab, index: index, pinned: list.isPinned(at: index), group: group,
                    opener: list.opener(at: index)?.webState, wasActive: tab === active)
            }
            if !browser.isIncognito {
                for parked in tabs {
                    // `requireClosable` above: every tab of a regular window is realized.
                    if let closed = try ClosedTab(
                        closing: parked.webState, at: parked.index, in: list, of: browser,
                        group: list.group(at: parked.index), wasActive: parked.wasActive, closedAt: closedAt)
                    {
                        remembered.append(closed)
                    }
                }
            }
            try list.detachAll(atIndices: Set(indices))
            parts.append(TabsClosing.Part(browserID: browser.id, incognito: browser.isIncognito, tabs: tabs))
        }
        let closing = TabsClosing(id: id, policy: policy, parts: parts, closedAt: closedAt)
        guard !parts.isEmpty else { return closing }
        // Left their windows (which gave their bytes back), still held: charged until confirmed or undone.
        for tab in closing.tabs { tab.budget = browserState.budget }
        closings[id] = closing
        if !remembered.isEmpty { recentlyClosed.park(ClosedEntry(id: id, kind: .window, tabs: remembered)) }
        return closing
    }

    /// Checks that a close-all of `policy` over `browsers` has in memory all it must keep: the
    /// histories of the tabs of regular windows (they are remembered), and the bytes of their pictures
    /// (their rows leave storage with the close, and an undo writes them again). A caller that changes
    /// something before closing (confirming older close-alls) asks this first.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` naming every unrealized tab, else
    ///   ``ModelError/snapshotsNotLoaded(_:)`` naming every tab whose picture's bytes only storage holds.
    public func requireClosable(_ browsers: [Browser], policy: TabsClosePolicy) throws(ModelError) {
        let closed = browsers.filter { !$0.isIncognito }.flatMap { browser in
            let list = browser.webStateList
            let first = policy == .allTabs ? 0 : list.pinnedCount
            return (min(first, list.count)..<list.count).map { list.webState(at: $0)! }
        }
        try WebState.requireHistories(of: closed)
        let pictures = closed.filter(\.snapshotBytesAreStored).map(\.id)
        if !pictures.isEmpty { throw .snapshotsNotLoaded(pictures) }
    }

    /// Brings back every tab of a close-all: into its window when it is still open (else a new window
    /// of the same kind), at its old index, pinned if it was, in its group (rebuilt with its visual
    /// data; the old id unless taken), with its opener when that came back too, and the active tab
    /// active again. The parked entry is dropped.
    /// - Returns: the windows the tabs are in, with the tabs.
    /// - Throws: when the closing is unknown (confirmed, undone, or never made), or a window is full.
    @discardableResult
    public func undoClosing(_ id: ClosedTabID) throws -> [(browser: Browser, tabs: [WebState])] {
        guard let closing = closings[id] else { throw ModelError.closingNotFound(id) }
        var targets: [(part: TabsClosing.Part, browser: Browser)] = []
        for part in closing.parts {
            if let browser = browserList.browser(withID: part.browserID) {
                guard browser.webStateList.count + part.tabs.count <= browser.webStateList.maxCount else {
                    throw ModelError.limitReached(what: "tabs per window", limit: browser.webStateList.maxCount)
                }
                targets.append((part, browser))
            } else {
                if part.incognito, offTheRecord == nil { continue }  // its profile is gone, and its tabs with it
                targets.append((part, try createBrowser(incognito: part.incognito)))
            }
        }
        closings[id] = nil
        // Their windows charge them again as they join (a part whose incognito profile is gone stays out).
        for tab in closing.tabs { tab.budget = nil }
        var result: [(browser: Browser, tabs: [WebState])] = []
        for (part, browser) in targets {
            let list = browser.webStateList
            for parked in part.tabs {
                let index = parked.pinned ? min(parked.index, list.pinnedCount) : max(parked.index, list.pinnedCount)
                try list.insert(parked.webState, InsertionParams(index: min(index, list.count), pinned: parked.pinned))
            }
            var seen: Set<TabGroupID> = []
            for parked in part.tabs {
                guard let group = parked.group, seen.insert(group.id).inserted else { continue }
                let members = part.tabs.filter { $0.group?.id == group.id }.map { list.index(of: $0.webState) }
                if let live = list.group(withID: group.id) {
                    try list.moveToGroup(indices: Set(members), group: live)
                } else {
                    try list.createGroup(indices: Set(members), visualData: group.visualData, id: freeGroupID(group.id))
                }
            }
            for parked in part.tabs {
                if let opener = parked.opener, list.contains(opener) {
                    try list.setOpener(opener, at: list.index(of: parked.webState))
                }
            }
            if let active = part.tabs.first(where: \.wasActive) {
                try list.activate(at: list.index(of: active.webState))
            }
            result.append((browser, part.tabs.map(\.webState)))
        }
        recentlyClosed.unpark(id)
        return result
    }

    /// Confirms a close-all: its remembered tabs become recently-closed tab entries and the tabs are
    /// released (their bytes given back to the budget). Nothing happens for an unknown id.
    public func confirmClosing(_ id: ClosedTabID) {
        guard let closing = closings.removeValue(forKey: id) else { return }
        for tab in closing.tabs { tab.budget = nil }
        recentlyClosed.confirm(id)
    }

    /// Forgets every close-all without undoing or confirming it (what is stored is being reloaded); their
    /// tabs' bytes are given back.
    public func forgetClosings() {
        for tab in closings.values.flatMap(\.tabs) { tab.budget = nil }
        closings = [:]
    }
}
