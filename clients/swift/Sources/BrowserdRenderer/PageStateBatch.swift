/// A page's state reports (``PageSync/Action/reportPageState(title:loading:progress:faviconURL:)``)
/// held for a moment and sent as one `PATCH`, with the latest value of each member: a load tells its
/// title, its progress and its loading state within a few milliseconds of each other, and each report
/// is a request to browserd and an event at every watcher. A value: ``LivePage`` holds one, arms its
/// timer (``RendererPolicy/pageStateDelay``) and sends what ``take(before:)`` answers.
///
/// Order with the commits stays: before any other report of the page's, what is held goes first
/// (a title belongs to the document it was read from), except loading and progress before a commit
/// that starts a new load in the model (a new entry, a replaced one, a move: browserd sets loading
/// and progress itself then), which that commit makes stale.
struct PageStateBatch: Sendable, Equatable {
    private(set) var title: String?
    private(set) var loading: Bool?
    private(set) var progress: Double?
    private(set) var faviconURL: String??

    var isEmpty: Bool { title == nil && loading == nil && progress == nil && faviconURL == nil }

    /// Holds `report`'s members (later values replace earlier ones); false for any other action.
    mutating func hold(_ report: PageSync.Action) -> Bool {
        guard case .reportPageState(let title, let loading, let progress, let favicon) = report else { return false }
        if let title { self.title = title }
        if let loading { self.loading = loading }
        if let progress { self.progress = progress }
        if let favicon { self.faviconURL = .some(favicon) }
        return true
    }

    /// What is held as one report, to send before `next` (nil: the timer's flush), and nothing held
    /// after; nil when nothing is left to send.
    mutating func take(before next: PageSync.Action? = nil) -> PageSync.Action? {
        defer { self = PageStateBatch() }
        var loading = loading
        var progress = progress
        if let next, Self.startsALoad(next) {
            loading = nil
            progress = nil
        }
        guard title != nil || loading != nil || progress != nil || faviconURL != nil else { return nil }
        return .reportPageState(title: title, loading: loading, progress: progress, faviconURL: faviconURL)
    }

    /// Whether browserd's answer to `report` sets the tab loading from the start (`WebState`'s
    /// `navigate(to:)`, `navigate(replacingCurrentWith:)`, `go(offset:)`): a push within the document
    /// does not, nor does a pending navigation's commit (loading went on while it was pending).
    static func startsALoad(_ report: PageSync.Action) -> Bool {
        switch report {
        case .reportNavigation(_, _, _, let sameDocument): !sameDocument
        case .reportMove: true
        default: false
        }
    }
}
