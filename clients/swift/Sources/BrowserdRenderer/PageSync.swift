/// Keeps one live page and its browserd tab in step, both ways: a pure value state machine (as
/// postgres-nio's), told what happened and answering what to do; the I/O that carries the actions
/// out is ``LivePage``'s.
///
/// - The model drives the page: a state of the tab that asks for a load (``ModelTab/asksForALoad``)
///   and that this renderer did not cause loads its current entry: a move within the history the page
///   still holds goes there (`navigateToHistoryEntry`), the same entry again is a reload, anything else
///   loads the entry's URL.
/// - The page drives the model: a commit the renderer did not ask for is reported as Chromium would
///   record it: a new entry (`navigate`), a move within the history (`go`), a replaced entry
///   (`navigate` with `replace`: a redirect's final URL, `location.replace`, `replaceState`); titles,
///   favicons and loading as page state.
/// - A client's navigation that pends in browserd (``ModelTab/pending``) is loaded the same way, and
///   the page decides: its commit is reported as that navigation's (``Action/reportCommit(id:url:)``,
///   where the page ended: a redirect's final URL, or the error page Chromium commits for a network
///   error), a load that ends without one (a 204, a download, a load another replaced: `Page.navigate`
///   answers `net::ERR_ABORTED`) discards it (``Action/reportDiscard(id:)``). A new navigation replaces
///   a load of ours still under way at once, as Chromium's does.
/// - No echo: every state of the model a report produced is expected back on the tab's stream and
///   is not taken as a command (``reported(_:now:)``); an expectation not met within
///   ``expectationLifetime`` is forgotten, so a lost event cannot mask a later command.
public struct PageSync: Sendable {
    public enum Event: Sendable, Equatable {
        /// The tab's state in browserd (from its window's stream).
        case model(ModelTab)
        /// The page committed a navigation to `url` (`loaderID`: the document's loader, nil for a
        /// same-document commit); its back/forward list as Chromium holds it when asked, which may
        /// already show what the page did next (a `pushState` right after the load).
        case committed(PageHistory, loaderID: String?, url: String? = nil, subframe: Bool = false)
        /// `Page.navigate` of the load numbered `number` (the page's loads in the order its actions
        /// asked for them) answered: its loader, or the error that ended it (`net::ERR_ABORTED`: no
        /// commit follows; any other: Chromium commits an error page).
        case loadAnswered(number: Int, loaderID: String?, errorText: String?)
        /// The page committed a navigation to `url` that it says itself how it made (the Navigation
        /// API's `navigationType`, read in the renderer's own isolated world: the page cannot forge
        /// it): a push or a replace is reported from this alone, with no round trip to Chromium's list
        /// (``followsSteps``); anything else is read from the list (``committed(_:loaderID:url:)``).
        case stepped(url: String, step: Step, sameDocument: Bool, transition: String)
        /// The page's list as Chromium holds it, read because ``Action/readHistory`` asked: its entries'
        /// ids (what a traversal asks Chromium for) take the place of the ones steps made up, and the
        /// load that waited for them is decided; nothing is reported from it.
        case refreshed(PageHistory)
        /// The page's title or favicon as the document at `url` shows them (the events of a new
        /// document may come before its commit's: they wait for it).
        case pageState(title: String, faviconURL: String?, url: String? = nil)
        /// The page started or stopped loading, or made progress (0 < progress ≤ 1).
        case loading(Bool, progress: Double)
        /// A load of ours failed before it committed (`Page.navigate`'s `errorText`).
        case loadFailed
        /// The page's renderer crashed (`Inspector.targetCrashed`): a sad tab until a load.
        case crashed
        /// The page's target went without the renderer asking (`window.close()`, which Chromium allows
        /// a page with one history entry or opened by script).
        case closedByPage
    }

    public enum Action: Sendable, Equatable {
        /// `Page.navigate` to the model's current entry.
        case load(url: String)
        /// `Page.navigateToHistoryEntry`: the model moved to an entry the page still holds.
        case traverse(entryID: Int)
        /// `Page.reload`.
        case reload
        /// `Page.getNavigationHistory`, answered as ``Event/refreshed(_:)``: the model moved to an entry
        /// whose Chromium id no read has given yet (steps report commits without the list), so the
        /// traversal waits for it. Asked only then: never on a commit's path.
        case readHistory
        /// `POST /v1/tabs/{id}/navigate`: the page committed a new entry, or replaced its current one;
        /// `sameDocument`: it pushed the entry within its document (`history.pushState`), which
        /// Chromium adds even to the current URL.
        case reportNavigation(url: String, transition: String, replace: Bool, sameDocument: Bool = false)
        /// `POST /v1/tabs/{id}/go`: the page moved within its history.
        case reportMove(offset: Int)
        /// `POST /v1/tabs/{id}/pending/commit`: the page committed the tab's pending navigation `id`
        /// (at `url` when it ended elsewhere).
        case reportCommit(id: Int, url: String?)
        /// `POST /v1/tabs/{id}/pending/discard`: the page ended the tab's pending navigation `id` without a commit.
        case reportDiscard(id: Int)
        /// `PATCH /v1/tabs/{id}`: only the members given.
        case reportPageState(title: String?, loading: Bool?, progress: Double?, faviconURL: String??)
        /// `PATCH /v1/tabs/{id}` with `crashed: true` (loading ends with it).
        case reportCrash
        /// `DELETE /v1/tabs/{id}`: the page closed itself, and its tab closes with it, as Chromium's
        /// `WebStateDelegate::CloseWebState`.
        case reportClosed
        /// Take the page's picture (a tab switcher's): a new document has loaded, or a same-document
        /// one (pushState) and the last picture is ``pictureInterval`` old.
        case takePicture
    }

    /// How a commit moved within the page's list (the Navigation API's `NavigationType`).
    public enum Step: String, Sendable, Equatable {
        case push, replace, reload, traverse
    }

    /// How often a page whose document stays (pushState) gets a new picture at most (seconds).
    public static let pictureInterval: Double = 2
    /// Whether the page closed itself (its target is gone: nothing more is sent to it).
    public private(set) var closedByPage = false
    /// A new document committed since the last picture.
    private var pictureDue = false
    private var lastPictureAt: Double?

    /// How long a state a report produced is awaited on the stream.
    public static let expectationLifetime: Double = 10

    /// The tab's state in browserd, as last seen or produced.
    public private(set) var model: ModelTab
    /// The page's list as last seen.
    public private(set) var page: PageHistory?
    /// A load this renderer started to follow the model, not yet committed.
    public struct OwnLoad: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case navigate(url: String)
            case traverse(entryID: Int)
            case reload(entryID: Int?)
        }
        public var kind: Kind
        /// `Page.navigate`'s loader: its commit carries the same (nil until it answered, and for a
        /// same-document navigation).
        public var loaderID: String?
        /// The model's state it brings the page to.
        public var serves: ModelTab
        /// Its number among the loads sent (``loadSent(url:)``), which its answer carries
        /// (``Event/loadAnswered(number:loaderID:errorText:)``); nil until it is sent.
        public var number: Int?
        /// `Page.navigate` answered an error after which Chromium commits an error page.
        public var failed = false

        init(kind: Kind, serves: ModelTab, number: Int? = nil) {
            self.kind = kind
            self.serves = serves
            self.number = number
        }
    }

    /// How many loads of ours were sent (`Page.navigate`).
    public private(set) var loadsSent = 0

    private mutating func load(_ url: String, own: Bool) -> Action {
        if own { ownLoad = OwnLoad(kind: .navigate(url: url), serves: model) }
        return .load(url: url)
    }

    /// The page is about to send a ``Action/load(url:)``: its number when it is the load of ours under
    /// way (its answer carries it), nil for a placeholder's. `stale` when a newer load took its place
    /// before it went (an action performed after the reports before it were answered): it is not
    /// sent, as it would replace the newer one in Chromium.
    public mutating func loadSent(url: String) -> (number: Int?, stale: Bool) {
        guard case .navigate(let ours) = ownLoad?.kind else { return (nil, false) }
        guard ours == url, ownLoad?.number == nil else { return (nil, Self.pageCanShow(url)) }
        loadsSent += 1
        ownLoad?.number = loadsSent
        return (loadsSent, false)
    }

    public private(set) var ownLoad: OwnLoad?
    /// The model asked for another load while ``ownLoad`` was under way: it follows once that one commits
    /// (Chromium may drop a traversal asked for while another is pending).
    public private(set) var loadPending = false
    /// An entry both lists hold at once: the model's index and count then, and the page's index. A move
    /// within the model's history is a move within the page's from it.
    private var anchor: (model: Int, count: Int, page: Int)?
    private var expected: [(position: ModelTab.Position, until: Double)] = []
    /// What a document showed last (its URL, title, favicon), reported once it is the tab's.
    private var shown: (url: String?, title: String, faviconURL: String?)?
    /// What was reported of it last, so that a report goes out only on a change.
    private var told: (title: String, faviconURL: String?)?
    /// The loading state reported last and not answered yet (a report may wait to go out with the
    /// next: ``PageStateBatch``): a change is judged against it, not against a model that has not
    /// seen it. Nil once browserd's answer or a change of the model's own says where it stands.
    private var toldLoading: (loading: Bool, progress: Double)?

    /// A page for `model` just made (about:blank): its first action loads the tab's current entry.
    public init(model: ModelTab) {
        self.model = model
    }

    /// A page Chromium made by itself (a popup) for `model`, the tab made for it: the page loads on
    /// its own, so nothing is loaded (``start()`` is not called), and its first commit is the tab's
    /// one entry (it replaces the entry the tab was made with, when its URL was not known yet).
    public init(adopting model: ModelTab) {
        self.model = model
        adoptedFirstCommit = true
    }

    /// An adopted page has not committed yet.
    private var adoptedFirstCommit = false
    /// No document of the page's has committed yet (the blank one it was made with aside).
    private var awaitingFirstCommit = true

    /// What to do with the list Chromium answered for a commit of `url` (`Page.getNavigationHistory`).
    public enum HistoryReading: Sendable, Equatable {
        /// Take it (its current entry given the committed URL when Chromium had not filled it in yet).
        case use(PageHistory)
        /// Ask again after a moment: the commit is under way in Chromium and the list lacks its URL.
        case askAgain
    }

    /// Judges a list read after a commit (attempt `attempt`, from 0): asked while the commit is under
    /// way, Chromium may answer with the entry not filled in yet (a popup's first entry with an empty
    /// URL, seen about once in ten popups); asked again it shows the URL. A newer commit waiting makes
    /// this list stale anyway (the next one counts), and past `attempts` the last list is used.
    public static func reading(_ history: PageHistory, committed url: String?, attempt: Int, attempts: Int, newerCommitWaits: Bool) -> HistoryReading {
        guard let url, pageCanShow(url), !history.holds(url) else { return .use(history) }
        if !newerCommitWaits, attempt + 1 < attempts { return .askAgain }
        return .use(filled(history, committed: url))
    }

    /// Judges a list read after a subframe's commit: Chromium records a subframe's entry (or its move)
    /// a moment after the frame's commit event, so a list that shows no change from `before` (the
    /// same current entry, as many entries) is asked for again, up to `attempts` (a subframe commit
    /// that makes no entry, such as an iframe's `location.replace`, costs that wait, off every other
    /// page's path); a newer commit waiting reads it anyway.
    public static func subframeReading(_ history: PageHistory, before: PageHistory?, attempt: Int, attempts: Int, newerCommitWaits: Bool) -> HistoryReading {
        guard let before, history.current?.id == before.current?.id, history.entries.count == before.entries.count,
            !newerCommitWaits, attempt + 1 < attempts
        else { return .use(history) }
        return .askAgain
    }

    /// The list with its current entry given the committed URL when Chromium left it empty.
    public static func filled(_ history: PageHistory, committed url: String?) -> PageHistory {
        guard let url, pageCanShow(url), !history.holds(url), history.current?.url == "" else { return history }
        var filled = history
        filled.entries[filled.currentIndex].url = url
        return filled
    }

    /// Whether the page's first commit left the blank document's entry before it (`[about:blank, X]`):
    /// the page is made blank so that its policy is in place before its first request, and a new tab's
    /// initial empty document leaves no entry in Chromium (`history.back()` cannot reach it, and
    /// `window.close()` is allowed as to a page with one entry) — so that entry goes
    /// (`Page.resetNavigationHistory`). Asked once per page: only its first commit counts.
    public mutating func firstCommitLeavesBlankEntry(_ history: PageHistory) -> Bool {
        guard awaitingFirstCommit else { return false }
        awaitingFirstCommit = false
        return !adoptedFirstCommit && history.entries.count == 2 && history.currentIndex == 1 && history.entries[0].url == "about:blank"
    }

    /// Whether the page's next commit of its own may be reported from its step alone (``Event/stepped``):
    /// no load of the renderer's is under way (its commit is matched by its loader, in the list), the
    /// page's first document has committed (its list is read once: ``firstCommitLeavesBlankEntry(_:)``),
    /// and the list was read once since.
    public var followsSteps: Bool { ownLoad == nil && !awaitingFirstCommit && !adoptedFirstCommit && page?.current != nil }

    /// Whether a commit to `url` made by `step` is reported from the step alone (else the page's list
    /// is read): a push or a replace to a URL the renderer shows, while ``followsSteps``.
    public func follows(_ step: Step, to url: String) -> Bool { followsSteps && Self.pageCanShow(url) && (step == .push || step == .replace) }

    /// The step a new navigation of the top frame carries as it starts (`Page.frameStartedNavigating`
    /// of `kind`, to `url`), so that its commit is reported at once: the page's `intent` when the page
    /// asked for it (`requested`); a push when nobody in the page did (a client's `Page.navigate`,
    /// which cannot replace), unless to the URL it shows (Chromium may make that a reload); none for
    /// any other kind (a reload, a traversal, a same-document one).
    public static func startedStep(kind: String?, to url: String?, requested: Bool, intent: Step?, showing current: String?) -> Step? {
        guard kind == "differentDocument" else { return nil }
        if requested { return intent }
        guard let url, url != current else { return nil }
        return .push
    }

    /// Chromium's transition for a navigation the page asked for (`Page.frameRequestedNavigation`'s
    /// reason): a form's submission, else a link (a script's, a refresh, a click).
    public static func transition(forReason reason: String) -> String {
        reason.hasPrefix("formSubmission") ? "form_submit" : "link"
    }

    /// Chromium's own limit on a page's list (`kMaxSessionHistoryEntries`): past it, the oldest entry goes.
    static let maximumPageEntries = 50

    /// A step the page made: reported as it is (a push: a new entry; a replace: the current entry
    /// replaced), and the page's list as last read updated as Chromium updates its own, with ids made
    /// up (negative) until the list is read again (``Event/refreshed``). Nil unless
    /// ``follows(_:to:)`` (a traversal, a reload, a URL the renderer does not show, a load of its own
    /// under way): the list is read instead.
    private mutating func stepped(url: String, step: Step, sameDocument: Bool, transition: String) -> [Action]? {
        guard follows(step, to: url), var list = page else { return nil }
        // A list read for an earlier commit showed this one already, and it was reported from it.
        if reportedAhead > 0 {
            reportedAhead -= 1
            return []
        }
        madeUpIDs -= 1
        let entry = PageHistory.Entry(id: madeUpIDs, url: url, transition: transition)
        let previousURL = list.current?.url
        switch step {
        case .push:
            list.entries = Array(list.entries[...list.currentIndex]) + [entry]
            if list.entries.count > Self.maximumPageEntries { list.entries.removeFirst(list.entries.count - Self.maximumPageEntries) }
            list.currentIndex = list.entries.count - 1
        default:
            list.entries[list.currentIndex] = entry
        }
        page = list
        if !sameDocument { pictureDue = true }
        if sameDocument, shown != nil {
            shown?.url = url
            told = nil
        }
        // The same entry again (replaceState of its own URL): nothing new for the model.
        if step == .replace, url == previousURL || url == model.url { return [] }
        return [.reportNavigation(url: url, transition: transition, replace: step == .replace, sameDocument: sameDocument && step == .push)]
    }

    /// The last id ``stepped(url:step:sameDocument:transition:)`` made up.
    private var madeUpIDs = 0
    /// A load waits for the list's ids (``Action/readHistory``); they were just read.
    private var idsAsked = false
    private var idsRead = false
    /// How many commits still to come a list read showed and reported already (a list read for a
    /// commit that waited for its step may show the commits after it).
    private var reportedAhead = 0

    /// The list as read, with the ids it now gives to entries a step made up: an entry at the same
    /// place with the same URL is the same entry.
    private func resolvingMadeUpIDs(in history: PageHistory) -> PageHistory? {
        guard var before = page, before.entries.contains(where: { $0.id < 0 }) else { return page }
        let offset = Self.alignment(of: before, with: history)
        for index in before.entries.indices where before.entries[index].id < 0 {
            let there = index + offset
            if history.entries.indices.contains(there), history.entries[there].url == before.entries[index].url {
                before.entries[index].id = history.entries[there].id
            }
        }
        return before
    }

    /// A commit that the list read with it has already moved past: `first` (this commit's list) is
    /// reported, then `later` (the list as read), where this commit's entry stands at `position` (-1:
    /// before its first entry, dropped from it). The commits of the entries after it are reported now,
    /// so their steps, still to come, are not reported again.
    private mutating func committed(_ first: PageHistory, loaderID: String?, thenAhead later: PageHistory, from position: Int) -> [Action] {
        let own = committed(first, loaderID: loaderID)
        let rest = committed(later, loaderID: nil)
        reportedAhead = later.currentIndex - position
        return own + rest
    }

    /// How far `history` (read later) is shifted from `list` (Chromium dropped the oldest entries as
    /// the page pushed past its 50: a storm's later commits, not yet told): by the last entry of
    /// Chromium's own both hold, else by the shift under which most of the entries steps made have
    /// the URL read there (the least shift among equals: none when every entry has one URL).
    static func alignment(of list: PageHistory, with history: PageHistory) -> Int {
        for index in list.entries.indices.reversed() where list.entries[index].id >= 0 {
            if let there = history.index(of: list.entries[index].id) { return there - index }
        }
        let madeUp = list.entries.indices.filter { list.entries[$0].id < 0 }
        var best = (offset: 0, matches: -1)
        for offset in (-list.entries.count)...history.entries.count {
            let matches = madeUp.count { index in
                history.entries.indices.contains(index + offset) && history.entries[index + offset].url == list.entries[index].url
            }
            if matches > best.matches || (matches == best.matches && abs(offset) < abs(best.offset)) { best = (offset, matches) }
        }
        return best.offset
    }

    /// Whether the renderer loads `url`: `http:` and `https:` only. A tab's URL of any other scheme
    /// (`file:`, `chrome:`, `devtools:`, `view-source:`, `data:`, `javascript:`, …) is never loaded: the
    /// page shows ``placeholder(for:)`` and nothing of it is reported (no title, favicon or picture of
    /// this machine's files). browserd holds such URLs all the same (sessions import them).
    public static func pageCanShow(_ url: String) -> Bool {
        let scheme = url.prefix { $0 != ":" }.lowercased()
        return (scheme == "http" || scheme == "https") && url.count > scheme.count + 1
    }

    /// What the page shows for a URL it does not load: blank for an empty tab (`about:`) and browserd's
    /// own pages (`browserd:`: the UI draws them), else an error page of the renderer's own that names
    /// no part of the URL.
    public static func placeholder(for url: String) -> String {
        let lowered = url.lowercased()
        return url.isEmpty || lowered.hasPrefix("about:") || lowered.hasPrefix("browserd:") ? "about:blank" : notLoadedPage
    }

    /// The error page (a `data:` document the renderer navigates to; a page cannot).
    public static let notLoadedPage =
        "data:text/html;charset=utf-8,%3C!doctype%20html%3E%3Ctitle%3ENot%20loaded%3C/title%3E"
        + "%3Cp%20style=%22font:16px%20sans-serif;margin:2em%22%3EThis%20tab%27s%20address%20is%20not%20loaded:%20"
        + "browserd-renderer%20loads%20http%20and%20https%20pages%20only.%3C/p%3E"

    /// The model's limits on what a page reports: a title's first 1,024 characters (Unicode code
    /// points, as browserd counts them; Chromium truncates a long title too), and a favicon URL of at
    /// most 64 KiB (`data:` favicons included; a longer one is not sent: the tab shows none).
    public static let maximumTitleLength = 1_024
    public static let maximumFaviconURLBytes = 64 * 1024

    static func fitted(title: String) -> String {
        title.unicodeScalars.count <= maximumTitleLength ? title : String(String.UnicodeScalarView(title.unicodeScalars.prefix(maximumTitleLength)))
    }

    static func fitted(favicon: String?) -> String? {
        guard let favicon, favicon.utf8.count <= maximumFaviconURLBytes else { return nil }
        return favicon
    }

    /// What the page does first: load the tab's current entry (or the placeholder of one it does not load).
    public mutating func start() -> [Action] { nextLoad() }

    public mutating func event(_ event: Event, now: Double) -> [Action] {
        switch event {
        case .model(let tab): return modelChanged(tab, now: now)
        case .committed(let history, let loaderID, let url, let subframe):
            // The list already shows later entries: this commit first (the list up to its entry), then the rest.
            if let url, history.current?.url != url, history.currentIndex >= 0,
                let at = history.entries[...history.currentIndex].lastIndex(where: { $0.url == url })
            {
                return committed(PageHistory(currentIndex: at, entries: Array(history.entries[...at])), loaderID: loaderID, thenAhead: history, from: at)
            }
            // A load of ours committed at `url`, and the page pushed past Chromium's 50 entries before the
            // list was read: its entry is gone from the list. It committed where it says (no
            // redirect), and the list's entries came after it (Chromium dropped it: the first of them
            // takes its place).
            if let url, !subframe, Self.pageCanShow(url), history.currentIndex >= 0, !history.holds(url),
                case .navigate(let ours)? = ownLoad?.kind, ours == url, ownLoad?.loaderID.map({ $0 == loaderID }) ?? true
            {
                madeUpIDs -= 1
                return committed(
                    PageHistory(currentIndex: 0, entries: [.init(id: madeUpIDs, url: url)]), loaderID: loaderID, thenAhead: history, from: -1)
            }
            reportedAhead = 0
            return committed(history, loaderID: loaderID, subframe: subframe)
        case .loadAnswered(let number, let loaderID, let errorText):
            guard let own = ownLoad, own.number == number else { return [] }
            guard let errorText else {
                if ownLoad?.loaderID == nil { ownLoad?.loaderID = loaderID }
                return []
            }
            // Chromium commits an error page for a network error (its entry holds the URL): that commit
            // is this load's. An aborted load (a 204, a download, a load another replaced) commits nothing.
            guard errorText == Self.abortedError else {
                ownLoad?.failed = true
                if ownLoad?.loaderID == nil { ownLoad?.loaderID = loaderID }
                return []
            }
            return self.event(.loadFailed, now: now)
        case .stepped(let url, let step, let sameDocument, let transition):
            return stepped(url: url, step: step, sameDocument: sameDocument, transition: transition) ?? []
        case .refreshed(let history):
            // Only the ids: what the list shows beyond the steps is the news of events still to come.
            page = resolvingMadeUpIDs(in: history)
            guard idsAsked else { return tellShown() }
            idsAsked = false
            // The load that waited for them, unless one started meanwhile; an id still unnamed (the
            // list moved on) loads the URL (``nextLoad()`` asks no second time).
            guard ownLoad == nil, model.asksForALoad else { return tellShown() }
            idsRead = true
            defer { idsRead = false }
            return nextLoad()
        case .pageState(let title, let favicon, let url):
            shown = (url, Self.fitted(title: title), Self.fitted(favicon: favicon))
            return tellShown()
        case .loading(let loading, let progress):
            let reports = loadingChanged(loading, progress: progress)
            guard !loading, pictureDue || lastPictureAt.map({ now - $0 > Self.pictureInterval }) ?? true else { return reports }
            pictureDue = false
            lastPictureAt = now
            return reports + [.takePicture]
        case .closedByPage:
            guard !closedByPage else { return [] }
            closedByPage = true
            return [.reportClosed]
        case .crashed:
            // Nothing of ours loads in a renderer that is gone; the model's next load (a reload) brings
            // a new one, from the page's list as Chromium still holds it.
            ownLoad = nil
            loadPending = false
            return model.crashed ? [] : [.reportCrash]
        case .loadFailed:
            let pending = ownLoad?.serves.pending
            ownLoad = nil
            // The pending navigation it served is discarded, if browserd still holds it.
            let discard: [Action] = pending.flatMap { $0.id == model.pending?.id ? [.reportDiscard(id: $0.id)] : nil } ?? []
            if loadPending {
                loadPending = false
                return discard + nextLoad()
            }
            if !discard.isEmpty { return discard }
            return model.loading ? [.reportPageState(title: nil, loading: false, progress: 1, faviconURL: nil)] : []
        }
    }

    /// `Page.navigate`'s error for a load that never commits.
    public static let abortedError = "net::ERR_ABORTED"

    /// `Page.navigate` answered: its commit will carry `loaderID`.
    public mutating func loadStarted(loaderID: String?) {
        guard case .navigate = ownLoad?.kind else { return }
        ownLoad?.loaderID = loaderID
    }

    /// The top frame started a new document's navigation to `url` with `loaderID`
    /// (`Page.frameStartedNavigating`): a load of ours to that URL not answered yet is this one (its
    /// commit may come before `Page.navigate`'s answer).
    public mutating func navigationStarted(loaderID: String?, url: String?) {
        guard case .navigate(let ours) = ownLoad?.kind, ownLoad?.loaderID == nil, let url, url == ours else { return }
        ownLoad?.loaderID = loaderID
    }

    /// The model's answer to `report`: its stream will show this state, which is no command. The
    /// page shows the tab's current entry then. An answer that shows another change as well (a
    /// client moved the tab while the report was under way) is taken as that change: the page follows it.
    public mutating func reported(_ report: Action, answer tab: ModelTab, now: Double) -> [Action] {
        let before = model
        let foreseen: Bool =
            switch report {
            case .reportPageState: tab.url == before.url && tab.historyIndex == before.historyIndex && tab.historyCount == before.historyCount
            case .reportNavigation(let url, _, let replace, _):
                tab.url == url
                    && (replace
                        ? tab.historyIndex == before.historyIndex && tab.historyCount == before.historyCount
                        : tab.historyIndex <= before.historyIndex + 1)
            case .reportMove(let offset): tab.historyIndex == before.historyIndex + offset && tab.historyCount == before.historyCount
            case .reportCommit, .reportDiscard: tab.pending == nil
            default: true
            }
        // A client's navigation pending since (its move keeps the tab's URL and place) is a command.
        let newPending = tab.pending != nil && tab.pending?.id != before.pending?.id
        guard foreseen, !newPending else { return modelChanged(tab, now: now) }
        expected.append((tab.position, now + Self.expectationLifetime))
        model = tab
        toldLoading = nil
        if ownLoad == nil, let page, page.current?.url == tab.url {
            anchor = (tab.historyIndex, tab.historyCount, page.currentIndex)
        }
        return tellShown()
    }

    private mutating func modelChanged(_ tab: ModelTab, now: Double) -> [Action] {
        expected.removeAll { $0.until < now }
        if let match = expected.firstIndex(where: { $0.position == tab.position }) {
            expected.removeFirst(match + 1)
            model = tab
            return []
        }
        // A change of the model's own (a client's): where loading stands is its word now.
        toldLoading = nil
        let before = model
        model = tab
        guard tab.asksForALoad, tab.position != before.position || !before.asksForALoad else { return [] }
        // One load at a time: the next follows the commit of the one under way, but a new navigation
        // replaces a new document's load under way at once (Chromium cancels it: its `Page.navigate`
        // answers `net::ERR_ABORTED`, and its pending navigation was replaced in browserd already).
        if let own = ownLoad {
            guard case .navigate = own.kind, let pending = tab.pending, pending.index == nil else {
                loadPending = true
                return []
            }
            ownLoad = nil
            loadPending = false
        }
        return nextLoad()
    }

    /// The load that brings the page to the model's current entry, from where the page stands: the
    /// entry it shows again (a reload), an entry it holds at the model's offset (a traversal), or the URL.
    private mutating func nextLoad() -> [Action] {
        let url = model.targetURL
        guard Self.pageCanShow(url) else {
            ownLoad = nil
            let placeholder = Self.placeholder(for: url)
            // Nothing of the page's decides a navigation it does not load: it commits at once.
            let commit: [Action] = model.pending.map { [.reportCommit(id: $0.id, url: nil)] } ?? []
            // A page is made blank: it shows that placeholder until its first commit.
            return commit + ((page?.current?.url ?? "about:blank") == placeholder ? [] : [load(placeholder, own: false)])
        }
        let index = model.pending.map { $0.index } ?? model.historyIndex
        if let index, let page, let anchor, anchor.count == model.historyCount {
            let target = anchor.page + (index - anchor.model)
            if target == page.currentIndex, page.current?.url == url {
                // An id a step made up (negative) is no entry of Chromium's: its reload's commit is
                // matched by any entry.
                ownLoad = OwnLoad(kind: .reload(entryID: page.current.flatMap { $0.id < 0 ? nil : $0.id }), serves: model)
                return [.reload]
            }
            // Chromium's entry by its own id only: one a step made up is named by a read first.
            if page.entries.indices.contains(target), page.entries[target].url == url {
                let id = page.entries[target].id
                if id >= 0 {
                    ownLoad = OwnLoad(kind: .traverse(entryID: id), serves: model)
                    return [.traverse(entryID: id)]
                }
                if !idsRead {
                    idsAsked = true
                    return [.readHistory]
                }
            }
        }
        return [load(url, own: true)]
    }

    private mutating func committed(_ history: PageHistory, loaderID: String?, subframe: Bool = false) -> [Action] {
        let before = resolvingMadeUpIDs(in: history)
        if loaderID != nil { pictureDue = true }
        page = history
        guard let current = history.current else { return [] }
        // The same document under a new URL (pushState, a fragment): what it shows is the new entry's too.
        if loaderID == nil, shown != nil {
            shown?.url = current.url
            told = nil
        }
        if let own = ownLoad {
            // While a load of ours is under way, only its own commit counts; an earlier one that
            // committed late (the model moved again meanwhile) is no news of the page's.
            var actions: [Action] = []
            switch own.kind {
            case .navigate(let url):
                let ours = own.loaderID.map { $0 == loaderID } ?? (current.url == url)
                guard ours else { return [] }
                if let pending = own.serves.pending {
                    // The pending navigation it served committed, where the page ended (Chromium's
                    // entry holds a redirect's final URL, and a failed load's own URL).
                    let landed = current.url != url && Self.pageCanShow(current.url) ? current.url : nil
                    actions.append(.reportCommit(id: pending.id, url: landed))
                } else if current.url != url, current.url != model.url, Self.pageCanShow(current.url), !loadPending {
                    // It ended elsewhere: a redirect (Chromium's entry holds the final URL).
                    actions.append(.reportNavigation(url: current.url, transition: current.modelTransition, replace: true))
                }
            case .traverse(let id):
                guard current.id == id else { return [] }
                if let pending = own.serves.pending { actions.append(.reportCommit(id: pending.id, url: nil)) }
            case .reload(let id):
                guard id == nil || current.id == id else { return [] }
                if let pending = own.serves.pending { actions.append(.reportCommit(id: pending.id, url: nil)) }
            }
            ownLoad = nil
            // The entry the page shows is the model's entry the load served: a pending move's, or a
            // new one after the current entry (its count checked before use: browserd's cap may have
            // dropped the oldest). It maps one list onto the other even when browserd answers that a
            // newer navigation replaced this one.
            if let pending = own.serves.pending {
                anchor =
                    pending.index.map { ($0, own.serves.historyCount, history.currentIndex) }
                    ?? (own.serves.historyIndex + 1, own.serves.historyIndex + 2, history.currentIndex)
            } else {
                anchor = (own.serves.historyIndex, own.serves.historyCount, history.currentIndex)
            }
            // A move a subframe made (back across a subframe entry): the top document did not load,
            // so no stop of its loading follows.
            if subframe { actions += loadingChanged(false, progress: 1) }
            if loadPending {
                loadPending = false
                actions += nextLoad()
            }
            return actions + tellShown()
        }
        let adopted = adoptedFirstCommit
        adoptedFirstCommit = false
        guard Self.pageCanShow(current.url) else { return [] }
        guard let before, let previous = before.current else {
            if current.url == model.url {
                if adopted { anchor = (model.historyIndex, model.historyCount, history.currentIndex) }
                return tellShown()
            }
            return [.reportNavigation(url: current.url, transition: current.modelTransition, replace: adopted && model.historyCount == 1)]
        }
        if let oldIndex = before.index(of: current.id) {
            if oldIndex != before.currentIndex { return [.reportMove(offset: history.currentIndex - before.currentIndex)] }
            // The same entry: replaceState, or a fragment set in place.
            return current.url == previous.url || current.url == model.url
                ? [] : [.reportNavigation(url: current.url, transition: current.modelTransition, replace: true)]
        }
        // New entries (several when commits were coalesced: a pushState storm), each reported in order:
        // after the entry shown before, or the first in its place (location.replace: it is gone).
        // A same-document commit (no loader) of the URL before it is a pushState of it: the model adds
        // that entry only when told (a navigation to the current URL otherwise adds none).
        if let at = history.index(of: previous.id), at < history.currentIndex {
            let fresh = history.entries[at...history.currentIndex]
            // A subframe's commit (a link in an iframe) that made an entry is Chromium's manual subframe
            // navigation: the top-level URL stays, the document too.
            return zip(fresh, fresh.dropFirst()).filter { Self.pageCanShow($0.1.url) }.map { earlier, entry in
                .reportNavigation(
                    url: entry.url, transition: subframe ? "manual_subframe" : entry.modelTransition, replace: false,
                    sameDocument: (loaderID == nil || subframe) && entry.url == earlier.url)
            }
        }
        if history.index(of: previous.id) == nil {
            // Replaced, or (a storm past Chromium's 50 entries) pruned with every entry known before:
            // then every entry up to the current one is new.
            let known = Set(before.entries.map(\.id))
            let lastKnown = history.entries[..<history.currentIndex].lastIndex { known.contains($0.id) }
            let replaces = lastKnown != nil || before.entries.count == 1
            let fresh = history.entries[((lastKnown ?? -1) + 1)...history.currentIndex].filter { Self.pageCanShow($0.url) }
            return fresh.enumerated().map { index, entry in
                .reportNavigation(url: entry.url, transition: entry.modelTransition, replace: index == 0 && replaces)
            }
        }
        let replaced = history.entries.count == before.entries.count && history.currentIndex == before.currentIndex
        let pushedItself = loaderID == nil && !replaced && current.url == previous.url
        return [.reportNavigation(url: current.url, transition: current.modelTransition, replace: replaced, sameDocument: pushedItself)]
    }

    /// Reports what the page shows once the document showing it is the tab's current entry and no
    /// load of ours is under way (before, it may be the document being left, or one not committed yet).
    private mutating func tellShown() -> [Action] {
        guard ownLoad == nil, let shown, let current = page?.current, Self.pageCanShow(current.url), current.url == model.url,
            shown.url == nil || shown.url == current.url
        else { return [] }
        let newTitle = shown.title != model.title && shown.title != told?.title ? shown.title : nil
        let newFavicon: String?? =
            shown.faviconURL != model.faviconURL && shown.faviconURL != told?.faviconURL ? .some(shown.faviconURL) : nil
        told = (shown.title, shown.faviconURL)
        guard newTitle != nil || newFavicon != nil else { return [] }
        return [.reportPageState(title: newTitle, loading: nil, progress: nil, faviconURL: newFavicon)]
    }

    private mutating func loadingChanged(_ loading: Bool, progress: Double) -> [Action] {
        guard Self.pageCanShow(model.url) else { return [] }
        // The end of the load a load of ours replaced is not the end of ours.
        guard loading || ownLoad == nil else { return [] }
        // Never progress 0 while loading: that state is a command's (``ModelTab/asksForALoad``).
        let progress = loading ? min(max(progress, 0.1), 0.9) : 1
        let standing = toldLoading ?? (model.loading, model.progress)
        guard loading != standing.loading || progress != standing.progress else { return [] }
        toldLoading = (loading, progress)
        return [.reportPageState(title: nil, loading: loading, progress: progress, faviconURL: nil)]
    }
}

extension PageSync.Action: CustomStringConvertible {
    /// The action without the page's values (a title or favicon may be megabytes a page chose): their
    /// lengths only, for logs.
    public var description: String {
        switch self {
        case .load(let url): "load (\(url.utf8.count)-byte URL)"
        case .traverse(let entryID): "traverse to entry \(entryID)"
        case .reload: "reload"
        case .readHistory: "read the page's list"
        case .reportNavigation(let url, let transition, let replace, let sameDocument):
            "report a navigation (\(url.utf8.count)-byte URL, \(transition), replace: \(replace), same document: \(sameDocument))"
        case .reportMove(let offset): "report a move by \(offset)"
        case .reportCommit(let id, let url): "report pending navigation \(id) committed" + (url.map { " at a \($0.utf8.count)-byte URL" } ?? "")
        case .reportDiscard(let id): "report pending navigation \(id) discarded"
        case .reportPageState(let title, let loading, let progress, let favicon):
            "report page state (title: \(title.map { "\($0.unicodeScalars.count) characters" } ?? "-"), loading: \(loading.map(String.init) ?? "-"), "
                + "progress: \(progress.map { String($0) } ?? "-"), favicon: \(favicon.map { $0.map { "\($0.utf8.count) bytes" } ?? "none" } ?? "-"))"
        case .reportCrash: "report a crash"
        case .reportClosed: "report the page closed itself"
        case .takePicture: "take a picture"
        }
    }
}
