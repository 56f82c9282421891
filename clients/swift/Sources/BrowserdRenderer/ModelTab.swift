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

    public init(
        id: String, url: String, title: String = "", loading: Bool = false, progress: Double = 1, faviconURL: String? = nil,
        historyIndex: Int, historyCount: Int, crashed: Bool = false
    ) {
        self.crashed = crashed
        self.id = id
        self.url = url
        self.title = title
        self.loading = loading
        self.progress = progress
        self.faviconURL = faviconURL
        self.historyIndex = historyIndex
        self.historyCount = historyCount
    }

    /// A load the model asks for: every command that moves a tab (navigate, back, forward, go,
    /// reload) leaves it loading from the start (progress 0). A renderer never reports progress 0
    /// while loading, so this state always comes from a command.
    public var asksForALoad: Bool { loading && progress == 0 }

    /// What tells one of the model's states from another, for a renderer: its place in its history
    /// and whether a load was asked for.
    public struct Position: Sendable, Equatable {
        var url: String
        var historyIndex: Int
        var historyCount: Int
        var asksForALoad: Bool
    }

    public var position: Position { Position(url: url, historyIndex: historyIndex, historyCount: historyCount, asksForALoad: asksForALoad) }
}

extension ModelTab {
    /// From a window stream's tab item.
    public init(_ item: Components.Schemas.TabItem) {
        self.init(
            id: item.id, url: item.url, title: item.title, loading: item.loading, progress: item.progress, faviconURL: item.faviconUrl,
            historyIndex: item.historyIndex, historyCount: item.historyCount, crashed: item.crashed)
    }

    /// From a tab answer of the REST API.
    public init(_ tab: Components.Schemas.Tab) {
        self.init(
            id: tab.id, url: tab.url, title: tab.title, loading: tab.loading, progress: tab.progress, faviconURL: tab.faviconUrl,
            historyIndex: tab.historyIndex, historyCount: tab.historyCount, crashed: tab.crashed)
    }
}
