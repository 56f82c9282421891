import BrowserdClient

/// A tab as browserd holds it, in what a renderer follows: where it is in its history and its page state.
public struct ModelTab: Sendable, Equatable {
    public var id: String
    public var url: String
    public var title: String
    public var loading: Bool
    public var progress: Double
    public var faviconURL: String?
    public var historyIndex: Int
    public var historyCount: Int
    /// Its page's renderer crashed (a sad tab) until a load starts again.
    public var crashed: Bool
    /// A client's navigation its page has not committed yet (browserd's `pending`): the page loads it,
    /// then commits or discards it.
    public var pending: Pending?

    /// A navigation waiting for the page (browserd's `PendingNavigation`).
    public struct Pending: Sendable, Equatable {
        public var id: Int
        /// Where it goes: a new entry's URL, or the URL of the entry it moves to.
        public var url: String
        /// The entry it moves to (back, forward, go, reload); nil for a new entry.
        public var index: Int?

        public init(id: Int, url: String, index: Int?) {
            self.id = id
            self.url = url
            self.index = index
        }
    }

    public init(
        id: String, url: String, title: String = "", loading: Bool = false, progress: Double = 1, faviconURL: String? = nil,
        historyIndex: Int, historyCount: Int, crashed: Bool = false, pending: Pending? = nil
    ) {
        self.crashed = crashed
        self.pending = pending
        self.id = id
        self.url = url
        self.title = title
        self.loading = loading
        self.progress = progress
        self.faviconURL = faviconURL
        self.historyIndex = historyIndex
        self.historyCount = historyCount
    }

    /// A load the model asks for: a pending navigation, or (committed at once, with no live page when
    /// it was asked for) every command that moves a tab (navigate, back, forward, go, reload) leaves it
    /// loading from the start (progress 0). A renderer never reports progress 0 while loading, so this
    /// state always comes from a command.
    public var asksForALoad: Bool { pending != nil || (loading && progress == 0) }

    /// The URL the page is to show: a pending navigation's, else the current entry's.
    public var targetURL: String { pending?.url ?? url }

    /// What tells one of the model's states from another, for a renderer: its place in its history
    /// and whether a load was asked for.
    public struct Position: Sendable, Equatable {
        var url: String
        var historyIndex: Int
        var historyCount: Int
        var asksForALoad: Bool
        var pendingID: Int?
    }

    public var position: Position {
        Position(url: url, historyIndex: historyIndex, historyCount: historyCount, asksForALoad: asksForALoad, pendingID: pending?.id)
    }
}

extension ModelTab {
    /// From a window stream's tab item.
    public init(_ item: Components.Schemas.TabItem) {
        self.init(
            id: item.id, url: item.url, title: item.title, loading: item.loading, progress: item.progress, faviconURL: item.faviconUrl,
            historyIndex: item.historyIndex, historyCount: item.historyCount, crashed: item.crashed,
            pending: item.pending.map { Pending(id: $0.id, url: $0.url, index: $0.historyIndex) })
    }

    /// From a tab answer of the REST API.
    public init(_ tab: Components.Schemas.Tab) {
        self.init(
            id: tab.id, url: tab.url, title: tab.title, loading: tab.loading, progress: tab.progress, faviconURL: tab.faviconUrl,
            historyIndex: tab.historyIndex, historyCount: tab.historyCount, crashed: tab.crashed,
            pending: tab.pending.map { Pending(id: $0.id, url: $0.url, index: $0.historyIndex) })
    }
}
