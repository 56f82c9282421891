public import Foundation

// What the database holds, as plain values. The persistence layer knows these and SQLite; it does
// not know the model's objects. Mediators turn model changes into these records.

/// One history entry as saved.
public struct HistoryEntryRecord: Sendable, Equatable {
    public var url: String
    public var title: String
    public var transition: String
    public var timestamp: Date

    public init(url: String, title: String, transition: String, timestamp: Date) {
        self.url = url
        self.title = title
        self.transition = transition
        self.timestamp = timestamp
    }
}

/// A regular profile.
public struct ProfileRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    public var createdAt: Date
    /// Its web state as stored (Playwright's storageState JSON), when loaded; a change writes it
    /// through ``ChangeSet/webStates``, never through this.
    public var webState: [UInt8]?

    public init(id: String, name: String, createdAt: Date, webState: [UInt8]? = nil) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.webState = webState
    }
}

/// A regular profile's web state written (issue 52): its storageState JSON, or nil (none: the row goes).
public struct WebStateRecord: Sendable, Equatable {
    public var profileID: String
    public var json: [UInt8]?

    public init(profileID: String, json: [UInt8]?) {
        self.profileID = profileID
        self.json = json
    }
}

/// A tab: page state, opener, group, and the saved window of its history (spec §6, at most 75 entries).
public struct TabRecord: Sendable, Equatable {
    /// The distance between the positions of neighbouring tabs when a window's order is written whole
    /// (both stores and the window mediator use it).
    public static let positionStep = 1024.0

    public var id: String
    public var groupID: String?
    public var openerID: String?
    public var openerNavigationIndex: Int?
    public var title: String
    public var loading: Bool
    public var progress: Double
    public var faviconURL: String?
    public var createdAt: Date
    public var lastActiveAt: Date
    public var historyIndex: Int
    public var history: [HistoryEntryRecord]
    /// The tab's place in its window: windows are ordered by it, so a tab that moves or joins writes
    /// its own row only, never the whole window's order.
    public var position: Double
    /// Read without its history (an unrealized tab): what the row says of it, `history` is empty.
    public var summary: HistorySummary?
    /// The picture of its page storage holds (read without its bytes); never written through this
    /// record (``ChangeSet/snapshots`` writes pictures).
    public var snapshot: SnapshotRecord?

    public init(
        id: String, groupID: String?, openerID: String?, openerNavigationIndex: Int?, title: String, loading: Bool,
        progress: Double, faviconURL: String?, createdAt: Date, lastActiveAt: Date, historyIndex: Int,
        history: [HistoryEntryRecord], position: Double = 0
    ) {
        self.position = position
        self.id = id
        self.groupID = groupID
        self.openerID = openerID
        self.openerNavigationIndex = openerNavigationIndex
        self.title = title
        self.loading = loading
        self.progress = progress
        self.faviconURL = faviconURL
        self.createdAt = createdAt
        self.lastActiveAt = lastActiveAt
        self.historyIndex = historyIndex
        self.history = history
    }
}

/// The picture of a tab's page (``TabRecord/snapshot``): written with its bytes, read back with or
/// without them. A tab's picture goes with its row.
public struct SnapshotRecord: Sendable, Equatable {
    public var tabID: String
    /// A digest of the bytes (an HTTP entity tag).
    public var etag: String
    public var mediaType: String
    public var byteCount: Int
    public var capturedAt: Date
    /// Nil when read without them (a profile's load).
    public var bytes: [UInt8]?

    public init(tabID: String, etag: String, mediaType: String, byteCount: Int, capturedAt: Date, bytes: [UInt8]?) {
        self.tabID = tabID
        self.etag = etag
        self.mediaType = mediaType
        self.byteCount = byteCount
        self.capturedAt = capturedAt
        self.bytes = bytes
    }
}

/// A tab group.
public struct GroupRecord: Sendable, Equatable {
    public var id: String
    public var title: String
    public var color: String
    public var collapsed: Bool

    public init(id: String, title: String, color: String, collapsed: Bool) {
        self.id = id
        self.title = title
        self.color = color
        self.collapsed = collapsed
    }
}

/// A window's list-level state: order, active index, pinned count, groups, version.
/// The values of a window row that change without its tab order or groups (version, active tab,
/// pinned count, last-active time): written alone when nothing else of the window changed, so a
/// page-state update does not rewrite a 10,000-tab order.
public struct WindowHeaderRecord: Sendable, Equatable {
    public var id: String
    public var version: Int
    public var activeIndex: Int
    public var pinnedCount: Int
    public var lastActiveAt: Date

    public init(id: String, version: Int, activeIndex: Int, pinnedCount: Int, lastActiveAt: Date) {
        self.id = id
        self.version = version
        self.activeIndex = activeIndex
        self.pinnedCount = pinnedCount
        self.lastActiveAt = lastActiveAt
    }
}

public struct WindowRecord: Sendable, Equatable {
    public var id: String
    public var profileID: String
    public var version: Int
    /// The window's tabs in order. Read back from the tabs' positions; on write, empty leaves the
    /// order to the tabs' positions (what the mediators send), and a non-empty list sets the
    /// positions of those tabs to follow it (a whole order, for tools and tests).
    public var tabOrder: [String]
    public var activeIndex: Int
    public var pinnedCount: Int
    public var groups: [GroupRecord]
    public var createdAt: Date
    public var lastActiveAt: Date

    public init(
        id: String, profileID: String, version: Int, tabOrder: [String], activeIndex: Int, pinnedCount: Int,
        groups: [GroupRecord], createdAt: Date, lastActiveAt: Date
    ) {
        self.id = id
        self.profileID = profileID
        self.version = version
        self.tabOrder = tabOrder
        self.activeIndex = activeIndex
        self.pinnedCount = pinnedCount
        self.groups = groups
        self.createdAt = createdAt
        self.lastActiveAt = lastActiveAt
    }
}

/// A recently closed tab of a regular profile (an entry by itself, or one tab of a window or group entry).
public struct ClosedTabRecord: Sendable, Equatable {
    public var id: String
    public var tabID: String
    public var windowID: String
    public var index: Int
    public var groupID: String?
    /// The visual data of its group when it closed (title, colour name, collapsed), so a restore can
    /// rebuild the group; nil when it was in none.
    public var group: ClosedGroupRecord?
    public var wasActive: Bool
    public var wasPinned: Bool
    public var title: String
    public var faviconURL: String?
    public var closedAt: Date
    public var historyIndex: Int
    public var history: [HistoryEntryRecord]

    public init(
        id: String, tabID: String, windowID: String, index: Int, groupID: String?, group: ClosedGroupRecord? = nil,
        wasActive: Bool, wasPinned: Bool, title: String, faviconURL: String?, closedAt: Date, historyIndex: Int,
        history: [HistoryEntryRecord]
    ) {
        self.id = id
        self.tabID = tabID
        self.windowID = windowID
        self.index = index
        self.groupID = groupID
        self.group = group
        self.wasActive = wasActive
        self.wasPinned = wasPinned
        self.title = title
        self.faviconURL = faviconURL
        self.closedAt = closedAt
        self.historyIndex = historyIndex
        self.history = history
    }
}

/// The visual data of a closed tab's group.
public struct ClosedGroupRecord: Sendable, Equatable {
    public var title: String
    public var color: String
    public var collapsed: Bool

    public init(title: String, color: String, collapsed: Bool) {
        self.title = title
        self.color = color
        self.collapsed = collapsed
    }
}

/// One entry of a regular profile's recently-closed list: a tab, a closed window's tabs, a closed
/// group's tabs, or the tabs a close-all parked until it is confirmed or undone (`closing`).
///
/// Stored as one row per tab: a tab entry's row has the entry's id; the rows of the other kinds name
/// their entry (`entry_id`) and its kind, so removing an entry removes every row of it.
public struct ClosedEntryRecord: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case tab, window, group, closing
    }

    public var id: String
    public var kind: Kind
    /// In window order (their `index`); exactly one for a tab entry, whose id is the entry's.
    public var tabs: [ClosedTabRecord]

    public init(id: String, kind: Kind, tabs: [ClosedTabRecord]) {
        self.id = id
        self.kind = kind
        self.tabs = tabs
    }

    /// A tab entry.
    public init(tab: ClosedTabRecord) {
        self.init(id: tab.id, kind: .tab, tabs: [tab])
    }

    /// One stored row: a tab, and the entry it belongs to when that is not itself.
    public struct Row: Sendable {
        public var entryID: String?
        public var kind: String?
        public var tab: ClosedTabRecord

        public init(entryID: String?, kind: String?, tab: ClosedTabRecord) {
            self.entryID = entryID
            self.kind = kind
            self.tab = tab
        }
    }

    /// The entries a profile's rows make, in the rows' order (newest first), each entry's tabs in window order.
    public static func assemble(_ rows: [Row]) -> [ClosedEntryRecord] {
        var entries: [ClosedEntryRecord] = []
        var positions: [String: Int] = [:]
        for row in rows {
            guard let entryID = row.entryID else {
                entries.append(ClosedEntryRecord(tab: row.tab))
                continue
            }
            if let at = positions[entryID] {
                entries[at].tabs.append(row.tab)
            } else {
                positions[entryID] = entries.count
                entries.append(ClosedEntryRecord(id: entryID, kind: row.kind.flatMap(Kind.init(rawValue:)) ?? .window, tabs: [row.tab]))
            }
        }
        for at in positions.values { entries[at].tabs.sort { $0.index < $1.index } }
        return entries
    }
}

/// Which renderer holds a profile, under which fence (issue 55): a report that carries an older
/// fence is refused. The last fence handed out is stored too, so fences only go up across restarts.
public struct RendererAssignmentRecord: Sendable, Equatable {
    public var profileID: String
    public var renderer: String
    public var fence: UInt64

    public init(profileID: String, renderer: String, fence: UInt64) {
        self.profileID = profileID
        self.renderer = renderer
        self.fence = fence
    }
}

/// How a profile is rendered (issue 55): the renderer it is pinned to (it gets that one when it next
/// needs a renderer and that one has room), and whether it is excluded from rendering.
public struct RenderingRecord: Sendable, Equatable {
    public var profileID: String
    public var pin: String?
    public var excluded: Bool

    public init(profileID: String, pin: String?, excluded: Bool) {
        self.profileID = profileID
        self.pin = pin
        self.excluded = excluded
    }

    /// Nothing set: the row goes.
    public var isDefault: Bool { pin == nil && !excluded }
}

/// An API token of a profile, stored only as a hash.
public struct TokenRecord: Sendable, Equatable {
    public var id: String
    public var profileID: String
    public var hash: [UInt8]
    public var createdAt: Date

    public init(id: String, profileID: String, hash: [UInt8], createdAt: Date) {
        self.id = id
        self.profileID = profileID
        self.hash = hash
        self.createdAt = createdAt
    }
}

/// One durable change: everything a mutation changed, committed in one transaction with it.
public struct ChangeSet: Sendable, Equatable {
    public var profiles: [ProfileRecord] = []
    public var deletedProfiles: [String] = []
    public var windows: [WindowRecord] = []
    /// Windows whose order and groups did not change: only their header is written.
    public var windowHeaders: [WindowHeaderRecord] = []
    public var deletedWindows: [String] = []
    /// Tabs written, with the window that holds them.
    public var tabs: [(windowID: String, tab: TabRecord)] = []
    public var deletedTabs: [String] = []
    /// Pictures of tabs' pages written (with their bytes), after the tabs: a picture whose tab is not
    /// stored once the change is written (it closed in the same commit) is not written.
    public var snapshots: [SnapshotRecord] = []
    /// Recently closed entries added, with their profile.
    public var closedAdded: [(profileID: String, entry: ClosedEntryRecord)] = []
    /// Recently closed entries gone (restored, or dropped past the cap).
    public var closedRemoved: [String] = []
    /// API tokens issued and revoked.
    public var tokens: [TokenRecord] = []
    public var deletedTokens: [String] = []
    /// Renderers' assignments made (or moved) and released (by profile), and the last fence handed
    /// out (nil: unchanged).
    public var rendererAssignments: [RendererAssignmentRecord] = []
    public var releasedRendererAssignments: [String] = []
    public var rendererFence: UInt64?
    /// Profiles' pins and exclusions written (a default one deletes the row).
    public var renderings: [RenderingRecord] = []
    /// Profiles' web states written (after the profiles).
    public var webStates: [WebStateRecord] = []
    /// Replace everything stored with this change (a full resynchronisation after a failed commit).
    public var replacesAll = false
    /// The regular profile whose executor made this change (nil: not one profile's, e.g. a full
    /// resynchronisation). With several instances on one database, the commit checks that this
    /// instance still holds that profile's lease (fencing).
    public var profileID: String?
    /// Answers to idempotent requests, stored with this change.
    public var idempotency: [IdempotencyRecord] = []
    /// Answers still being made when the change was queued; the writer waits for them and stores them
    /// in ``idempotency`` before it commits.
    public var pendingAnswers: [any AwaitedAnswer] = []

    public init() {}

    /// Adds `other`'s writes after this one's.
    public mutating func append(_ other: ChangeSet) {
        profiles += other.profiles
        deletedProfiles += other.deletedProfiles
        windows += other.windows
        windowHeaders += other.windowHeaders
        deletedWindows += other.deletedWindows
        tabs += other.tabs
        deletedTabs += other.deletedTabs
        snapshots += other.snapshots
        closedAdded += other.closedAdded
        closedRemoved += other.closedRemoved
        tokens += other.tokens
        deletedTokens += other.deletedTokens
        rendererAssignments += other.rendererAssignments
        releasedRendererAssignments += other.releasedRendererAssignments
        if let fence = other.rendererFence { rendererFence = max(rendererFence ?? 0, fence) }
        renderings += other.renderings
        webStates += other.webStates
        idempotency += other.idempotency
        pendingAnswers += other.pendingAnswers
        replacesAll = replacesAll || other.replacesAll
        profileID = profileID ?? other.profileID
    }

    public var isEmpty: Bool {
        !replacesAll && idempotency.isEmpty && tokens.isEmpty && deletedTokens.isEmpty && !touchesRenderers && profiles.isEmpty
            && deletedProfiles.isEmpty && windows.isEmpty
            && windowHeaders.isEmpty && deletedWindows.isEmpty && tabs.isEmpty
            && deletedTabs.isEmpty && snapshots.isEmpty && closedAdded.isEmpty && closedRemoved.isEmpty && webStates.isEmpty
    }

    public static func == (lhs: ChangeSet, rhs: ChangeSet) -> Bool {
        lhs.profiles == rhs.profiles && lhs.deletedProfiles == rhs.deletedProfiles && lhs.windows == rhs.windows
            && lhs.windowHeaders == rhs.windowHeaders
            && lhs.deletedWindows == rhs.deletedWindows && lhs.deletedTabs == rhs.deletedTabs
            && lhs.tabs.map(\.windowID) == rhs.tabs.map(\.windowID) && lhs.tabs.map(\.tab) == rhs.tabs.map(\.tab)
            && lhs.closedAdded.map(\.profileID) == rhs.closedAdded.map(\.profileID)
            && lhs.closedAdded.map(\.entry) == rhs.closedAdded.map(\.entry) && lhs.closedRemoved == rhs.closedRemoved
            && lhs.replacesAll == rhs.replacesAll && lhs.tokens == rhs.tokens && lhs.deletedTokens == rhs.deletedTokens
            && lhs.idempotency == rhs.idempotency && lhs.snapshots == rhs.snapshots
            && lhs.rendererAssignments == rhs.rendererAssignments && lhs.releasedRendererAssignments == rhs.releasedRendererAssignments
            && lhs.rendererFence == rhs.rendererFence && lhs.renderings == rhs.renderings && lhs.webStates == rhs.webStates
    }

    /// Whether it changes renderers' assignments.
    public var touchesRenderers: Bool {
        !rendererAssignments.isEmpty || !releasedRendererAssignments.isEmpty || rendererFence != nil || !renderings.isEmpty
    }
}

/// Everything loaded at start.
public struct StoredState: Sendable, Equatable {
    public var profiles: [ProfileRecord] = []
    public var windows: [WindowRecord] = []
    public var tabs: [String: TabRecord] = [:]
    /// Each regular profile's entries, newest first.
    public var recentlyClosed: [String: [ClosedEntryRecord]] = [:]
    public var tokens: [TokenRecord] = []
    /// Which renderer holds which profile, and the last fence handed out.
    public var rendererAssignments: [RendererAssignmentRecord] = []
    public var rendererFence: UInt64 = 0
    /// Profiles' pins and exclusions.
    public var renderings: [RenderingRecord] = []
    /// Stored answers of idempotent requests that have not expired.
    public var idempotency: [IdempotencyRecord] = []

    public init() {}
}

extension ChangeSet {
    /// About how many bytes committing this change writes: the text of the tabs and closed tabs it
    /// saves (their histories' URLs and titles), the answers it stores, and a little per row. What a
    /// profile's write quota is charged with.
    public var approximateBytes: Int {
        func history(_ entries: [HistoryEntryRecord]) -> Int {
            entries.reduce(0) { $0 + $1.url.utf8.count + $1.title.utf8.count + 32 }
        }
        var bytes =
            64
            * (profiles.count + windows.count + windowHeaders.count + deletedTabs.count + deletedWindows.count
                + closedRemoved.count + tokens.count + deletedTokens.count + deletedProfiles.count)
        for (_, tab) in tabs { bytes += 128 + tab.title.utf8.count + (tab.faviconURL?.utf8.count ?? 0) + history(tab.history) }
        for (_, entry) in closedAdded {
            for tab in entry.tabs { bytes += 128 + history(tab.history) }
        }
        for answer in idempotency { bytes += 128 + answer.body.count }
        for snapshot in snapshots { bytes += 128 + snapshot.byteCount }
        for state in webStates { bytes += 64 + (state.json?.count ?? 0) }
        return bytes
    }
}

/// What a tab's row says of its history without it (the SQLite store keeps it beside the history, so
/// a tab can load unrealized): the visible entry's URL, how many entries, their bytes of text.
public struct HistorySummary: Sendable, Equatable {
    public var visibleURL: String
    public var count: Int
    public var byteCount: Int

    public init(visibleURL: String, count: Int, byteCount: Int) {
        self.visibleURL = visibleURL
        self.count = count
        self.byteCount = byteCount
    }

    /// The summary of `history` with `index` current.
    public init(_ history: [HistoryEntryRecord], index: Int) {
        self.init(
            visibleURL: history.indices.contains(index) ? history[index].url : "", count: history.count,
            byteCount: history.reduce(0) { $0 + $1.url.utf8.count + $1.title.utf8.count })
    }
}
