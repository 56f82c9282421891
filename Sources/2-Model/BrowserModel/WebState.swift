public import Foundation

/// A tab: a stable id, its navigation history and the page state renderers report.
///
/// Owned by at most one `WebStateList` at a time. Not `Sendable`: it lives under its profile's
/// serial executor. Every change of its own state is told to the list holding it first (which forwards
/// it to the list's observers: Chromium's `AllWebStateObservationForwarder`, built in, so watching every
/// tab of a window costs no registration per tab), then to the tab's own observers.
///
/// A tab loaded from storage may be **unrealized** (Chromium's `WebState::CreateWithStorage`): it holds
/// only its ``HistoryMetadata`` — what lists, snapshots, events and its stored row need — until
/// something needs its history (navigation, back/forward, a title, the history itself, duplicate,
/// closing). The model does no I/O: an operation that needs the history of an unrealized tab throws
/// ``ModelError/historiesNotLoaded(_:)`` **before it changes anything**; the service reads those
/// histories from storage (which may fail: the request then fails, nothing invented), hands each to
/// ``realize(with:)`` and runs the operation again. Every answer is the same either way; only memory
/// differs.
public final class WebState {
    public let id: TabID
    /// Its history, or (unrealized) what it knows of it: one field, so an unrealized tab costs its
    /// metadata and a realized one its history, never both.
    private var storage: HistoryStorage

    private enum HistoryStorage {
        case realized(NavigationHistory)
        case unrealized(HistoryMetadata)
    }

    private var realizedHistory: NavigationHistory? {
        if case .realized(let history) = storage { history } else { nil }
    }
    /// The page title (renderer-reported); the current history item's title follows it.
    public private(set) var title: String
    public private(set) var isLoading: Bool
    /// Its page's renderer crashed (Chromium's `WebState::IsCrashed`, a sad tab) until a load starts
    /// again (navigate, back, forward, go, reload). A page's live state, never stored: a tab read
    /// from storage has no page.
    public private(set) var isCrashed = false
    /// Load progress, 0…1.
    public private(set) var progress: Double
    public private(set) var faviconURL: String?
    /// The picture of its page its renderer took last (``setSnapshot(_:)``); it stays through
    /// navigations until the next one, as a tab switcher shows it. Counted in its profile's budget.
    public private(set) var snapshot: PageSnapshot?
    /// The navigation a client asked for that the tab's page has not committed yet (spec §6; see
    /// ``PendingNavigation``): only while a renderer's page shows the tab. Never stored.
    public var pendingNavigation: PendingNavigation? { pending?.navigation }
    /// Boxed: a tab without one (nearly all) pays one reference for it, not the value's 57 bytes.
    private var pending: PendingBox?

    private final class PendingBox {
        let navigation: PendingNavigation
        init(_ navigation: PendingNavigation) { self.navigation = navigation }
    }
    public let createdAt: Date
    public private(set) var lastActiveAt: Date
    /// In the order they were added, so every change reaches observers in a known order.
    private var observers: [WeakWebStateObserver] = []
    /// The list holding this tab (set and cleared by the list as the tab joins and leaves it).
    weak var list: WebStateList?
    /// The budget of the profile whose window holds the tab (set while it is in one, or parked by a
    /// pending close-all): each change of its size is charged to it.
    public internal(set) weak var budget: ByteBudget? {
        didSet {
            oldValue?.charge(-byteCount)
            budget?.charge(byteCount)
        }
    }

    /// What the tab costs its profile's budget: the bytes of text its history holds, its favicon
    /// URL's (UTF-8; a `data:` favicon is its picture) and its snapshot's.
    public var byteCount: Int {
        let text =
            switch storage {
            case .realized(let history): history.byteCount
            case .unrealized(let metadata): metadata.byteCount
            }
        return text + (faviconURL?.utf8.count ?? 0) + (snapshot?.byteCount ?? 0) + pendingByteCount
    }

    /// The bytes a pending new entry's URL holds (a move within the history holds an entry's own).
    private var pendingByteCount: Int { pendingNavigation.map { $0.isNewEntry ? $0.url.utf8.count : 0 } ?? 0 }

    /// Whether its history is in memory (a tab made in this run always is).
    public var isRealized: Bool { realizedHistory != nil }

    /// What an unrealized tab knows of its history (nil once realized).
    public var metadata: HistoryMetadata? {
        if case .unrealized(let metadata) = storage { metadata } else { nil }
    }

    /// Its navigation history.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized.
    public var history: NavigationHistory {
        get throws(ModelError) {
            guard let history = realizedHistory else { throw .historiesNotLoaded([id]) }
            return history
        }
    }

    /// Throws ``ModelError/historiesNotLoaded(_:)`` naming every tab of `tabs` that is unrealized:
    /// an operation that needs their histories calls it before it changes anything.
    public static func requireHistories(of tabs: some Sequence<WebState>) throws(ModelError) {
        let missing = tabs.filter { !$0.isRealized }.map(\.id)
        if !missing.isEmpty { throw .historiesNotLoaded(missing) }
    }

    /// Gives an unrealized tab the history storage holds for it (read by the service); nothing for a
    /// realized one. A history that disagrees with the metadata (storage changed under the tab, which
    /// it must not) keeps the metadata's current entry where it can.
    public func realize(with stored: NavigationHistory) {
        guard case .unrealized(let metadata) = storage else { return }
        var history = stored
        if history.currentIndex != metadata.currentIndex || history.count != metadata.count,
            let aligned = try? NavigationHistory(items: history.items, currentIndex: min(metadata.currentIndex, history.count - 1))
        {
            history = aligned
        }
        storage = .realized(history)
        budget?.charge(history.byteCount - metadata.byteCount)
    }

    /// Applies `change` to the history, in place.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized (nothing changes then).
    private func mutateHistory(_ change: (inout NavigationHistory) -> Void) throws(ModelError) {
        guard case .realized(var history) = storage else { throw .historiesNotLoaded([id]) }
        // Left without a reference while it changes, so the items are not copied.
        storage = .realized(NavigationHistory())
        change(&history)
        storage = .realized(history)
    }

    /// Creates a tab.
    /// - Parameters:
    ///   - id: a fresh id unless restoring.
    ///   - history: what it has been; empty for a new tab.
    public init(
        id: TabID = .make(), history: NavigationHistory = NavigationHistory(), title: String? = nil,
        isLoading: Bool = false, progress: Double = 0, faviconURL: String? = nil,
        createdAt: Date = Date(), lastActiveAt: Date? = nil
    ) {
        self.id = id
        self.storage = .realized(history)
        self.title = title ?? history.currentItem?.title ?? ""
        self.isLoading = isLoading
        self.progress = progress
        self.faviconURL = faviconURL
        self.createdAt = createdAt
        self.lastActiveAt = lastActiveAt ?? createdAt
    }

    /// An unrealized tab, as storage describes it: the service realizes it when an operation needs its
    /// history (``realize(with:)``).
    public init(
        id: TabID, metadata: HistoryMetadata, title: String, isLoading: Bool,
        progress: Double, faviconURL: String?, createdAt: Date, lastActiveAt: Date
    ) {
        self.id = id
        self.storage = .unrealized(metadata)
        self.title = title
        self.isLoading = isLoading
        self.progress = progress
        self.faviconURL = faviconURL
        self.createdAt = createdAt
        self.lastActiveAt = lastActiveAt
    }

    /// The URL the tab shows (Chromium's visible entry): a pending new navigation's, else the last
    /// committed entry's, or empty.
    public var visibleURL: String {
        if let pendingNavigation, pendingNavigation.isNewEntry { return pendingNavigation.url }
        return lastCommittedURL
    }

    /// The last committed entry's URL, or empty (what storage keeps: never a pending one's).
    public var lastCommittedURL: String {
        switch storage {
        case .realized(let history): history.currentItem?.url ?? ""
        case .unrealized(let metadata): metadata.visibleURL
        }
    }
    /// The last committed navigation index (the opener bookkeeping of spec §5 records it).
    public var lastCommittedIndex: Int {
        switch storage {
        case .realized(let history): history.currentIndex
        case .unrealized(let metadata): metadata.currentIndex
        }
    }
    /// How many history entries it has.
    public var historyCount: Int {
        switch storage {
        case .realized(let history): history.count
        case .unrealized(let metadata): metadata.count
        }
    }
    public var canGoBack: Bool { lastCommittedIndex > 0 }
    public var canGoForward: Bool { lastCommittedIndex >= 0 && lastCommittedIndex < historyCount - 1 }

    /// A copy with a new id, the same history and page state (Chromium's duplicate-tab).
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized.
    public func duplicate() throws(ModelError) -> WebState {
        WebState(history: try history, title: title, faviconURL: faviconURL)
    }

    // MARK: Navigation

    /// The page pushed an entry within its document (`history.pushState`): a new entry with `url`
    /// after the current one (its own URL too: ``NavigationHistory/commit(_:maxItems:sameDocument:)``),
    /// the forward entries deleted; the document stays, so its title and favicon stay with the new
    /// entry and no load starts.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized (nothing changes then).
    public func navigate(
        pushingWithinDocument url: String, transition: PageTransition, at time: Date = Date(), maxItems: Int = .max
    )
        throws(ModelError)
    {
        let before = byteCount
        let title = self.title
        try mutateHistory { history in
            var item = NavigationItem(url: url, transition: transition, timestamp: time)
            item.title = title
            history.commit(item, maxItems: maxItems, sameDocument: true)
        }
        // The forward entries are gone: a move pending to one of them is too (a new entry's stays: the
        // document stays while it loads).
        if pendingNavigation?.isNewEntry == false { pending = nil }
        budget?.charge(byteCount - before)
        isCrashed = false
        notify(.navigation)
    }

    /// Commits a navigation to `url` at once (pruning forward entries) and starts loading.
    /// - Parameter maxItems: history cap; the oldest entries are dropped past it.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized (nothing changes then).
    public func navigate(to url: String, transition: PageTransition, at time: Date = Date(), maxItems: Int = .max) throws(ModelError) {
        let before = byteCount
        try mutateHistory { $0.commit(NavigationItem(url: url, transition: transition, timestamp: time), maxItems: maxItems) }
        // A new document committed: a navigation still pending is over (Chromium's `DiscardNonCommittedEntries`).
        pending = nil
        faviconURL = nil
        budget?.charge(byteCount - before)
        title = ""
        isLoading = true
        progress = 0
        isCrashed = false
        notify(.navigation)
    }

    /// Replaces the current entry with a navigation to `url` (a renderer's redirect, `location.replace`
    /// or `history.replaceState`: Chromium's `should_replace_current_entry`) and starts loading; the
    /// index and the forward entries stay.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized (nothing changes then).
    public func navigate(replacingCurrentWith url: String, transition: PageTransition, at time: Date = Date()) throws(ModelError) {
        let before = byteCount
        let keepsTitle = url == visibleURL
        try mutateHistory { history in
            var item = NavigationItem(url: url, transition: transition, timestamp: time)
            // The same document (replaceState to the same URL, a reload's redirect to itself) keeps its title.
            if keepsTitle { item.title = history.currentItem?.title ?? "" }
            history.replaceCurrent(with: item)
        }
        if !keepsTitle {
            title = ""
            faviconURL = nil
        }
        budget?.charge(byteCount - before)
        isLoading = true
        progress = 0
        isCrashed = false
        notify(.navigation)
    }

    /// Goes back, forward or to an offset; a no-op at the ends of history.
    /// - Returns: whether the current entry changed.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized (nothing changes then).
    @discardableResult
    public func go(offset: Int) throws(ModelError) -> Bool {
        var moved = false
        try mutateHistory { moved = $0.go(offset: offset) }
        guard moved else { return false }
        setPending(nil)
        title = realizedHistory?.currentItem?.title ?? ""
        isLoading = true
        progress = 0
        isCrashed = false
        notify(.navigation)
        return true
    }

    /// Goes to history entry `index`; a no-op out of range or on the current entry.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized (nothing changes then).
    @discardableResult
    public func go(toIndex index: Int) throws(ModelError) -> Bool {
        try go(offset: index - lastCommittedIndex)
    }

    /// Reloads: the history index stays; loading starts; a pending navigation is over.
    public func reload() {
        guard lastCommittedIndex >= 0 else { return }
        if pendingNavigation != nil {
            setPending(nil)
            notify(.navigation)
        }
        // A tab already loading from the start shows nothing new: no notification, no new version.
        guard !isLoading || progress != 0 else { return }
        isLoading = true
        progress = 0
        // A sad tab's reload brings a new renderer (Chromium's `WebStateImpl::Reload` of a crashed tab).
        let wasCrashed = isCrashed
        isCrashed = false
        if wasCrashed { notify(.crashed) }
        notify(.loading)
    }

    // MARK: Pending navigations (a renderer's page commits them)

    private func setPending(_ pending: PendingNavigation?) {
        let before = pendingByteCount
        self.pending = pending.map(PendingBox.init)
        budget?.charge(pendingByteCount - before)
    }

    /// Starts a navigation to `url` that the tab's page will commit or not (spec §6, "new pending
    /// item"): it replaces any pending one; loading starts; the history is unchanged until
    /// ``commitPending(_:url:at:maxItems:)``. A navigation to the current entry's URL (not a form's
    /// submission) adds no entry when it commits (``NavigationHistory/commit(_:maxItems:sameDocument:)``),
    /// so it pends as a load of that entry, as a reload does.
    /// - Returns: the pending navigation.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized (nothing changes then).
    @discardableResult
    public func startNavigation(to url: String, transition: PageTransition, at time: Date = Date()) throws(ModelError) -> PendingNavigation {
        guard let history = realizedHistory else { throw .historiesNotLoaded([id]) }
        let sameEntry =
            history.currentItem.map { $0.url == url && !(transition == .formSubmit && $0.transition != .formSubmit) } ?? false
        let pending = PendingNavigation(url: url, index: sameEntry ? history.currentIndex : nil, transition: transition, startedAt: time)
        startPending(pending)
        return pending
    }

    /// Starts a move by `offset` (back, forward, go) that the tab's page will commit or not; the
    /// current entry stays until then, and stays the visible one (Chromium shows a pending entry only
    /// for a new navigation). The offset counts from a move still pending, else from the last
    /// committed entry (Chromium's `GetCurrentEntryIndex`: back then forward before back committed
    /// goes back to where it was). Out of range or 0: nothing (nil).
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized (nothing changes then).
    @discardableResult
    public func startMove(offset: Int, at time: Date = Date()) throws(ModelError) -> PendingNavigation? {
        guard let history = realizedHistory else { throw .historiesNotLoaded([id]) }
        let base = pendingNavigation?.index ?? history.currentIndex
        let index = base + offset
        guard offset != 0, history.items.indices.contains(index) else { return nil }
        let pending = PendingNavigation(url: history.items[index].url, index: index, transition: history.items[index].transition, startedAt: time)
        startPending(pending)
        return pending
    }

    /// Starts a reload the tab's page will commit or not (Chromium's reload is a pending entry at the
    /// current index). Nothing with no entry (nil).
    @discardableResult
    public func startReload(at time: Date = Date()) -> PendingNavigation? {
        guard let history = realizedHistory, let current = history.currentItem else {
            // An unrealized tab's reload needs no history: it loads its current entry at once.
            reload()
            return nil
        }
        let pending = PendingNavigation(url: current.url, index: history.currentIndex, transition: .reload, startedAt: time)
        startPending(pending)
        return pending
    }

    private func startPending(_ pending: PendingNavigation) {
        setPending(pending)
        isLoading = true
        progress = 0
        isCrashed = false
        notify(.navigation)
    }

    /// The page committed pending navigation `id`: a new entry is added (its URL `url` when the page
    /// ended elsewhere: a redirect's final URL, as Chromium's entry holds it), or the history moves to
    /// the entry it went to. The page goes on loading.
    /// - Throws: ``ModelError/pendingNavigationGone(_:id:)`` when the tab has no pending navigation
    ///   `id` (nothing changes); ``ModelError/historiesNotLoaded(_:)`` while unrealized.
    public func commitPending(_ id: Int, url: String? = nil, at time: Date = Date(), maxItems: Int = .max) throws(ModelError) {
        guard let pending = pendingNavigation, pending.id == id else { throw .pendingNavigationGone(self.id, id: id) }
        let before = byteCount
        let (oldURL, oldIndex) = (lastCommittedURL, lastCommittedIndex)
        var landed = true
        try mutateHistory { history in
            if let index = pending.index {
                // Its entry may have moved since (the page's own commits): it is gone then.
                guard history.items.indices.contains(index), history.items[index].url == pending.url else {
                    landed = false
                    return
                }
                history.goTo(index: index)
                // It ended elsewhere (a redirect): the entry holds where it ended, as Chromium's does.
                if let url, url != pending.url {
                    history.replaceCurrent(with: NavigationItem(url: url, transition: history.items[index].transition, timestamp: time))
                }
            } else {
                history.commit(NavigationItem(url: url ?? pending.url, transition: pending.transition, timestamp: time), maxItems: maxItems)
            }
        }
        self.pending = nil
        if landed, lastCommittedURL != oldURL || lastCommittedIndex != oldIndex {
            // The entry it landed on shows its own title (none yet for a new one, which loses the favicon too).
            title = realizedHistory?.currentItem?.title ?? ""
            if pending.isNewEntry || lastCommittedURL != oldURL { faviconURL = nil }
        }
        budget?.charge(byteCount - before)
        // Committed: the page loads it now (never progress 0, a command's state).
        isLoading = true
        if progress == 0 { progress = Self.committedProgress }
        notify(.navigation)
    }

    /// The progress of a load whose navigation just committed.
    public static let committedProgress = 0.1

    /// Pending navigation `id` ended without a commit (a 204 or 205, a download, a load cancelled or
    /// failed before it committed): it is discarded and the entry before it stays current
    /// (`DiscardNonCommittedEntries`); loading ends.
    /// - Throws: ``ModelError/pendingNavigationGone(_:id:)`` when the tab has no pending navigation `id`.
    public func discardPending(_ id: Int) throws(ModelError) {
        guard let pending = pendingNavigation, pending.id == id else { throw .pendingNavigationGone(self.id, id: id) }
        setPending(nil)
        isLoading = false
        progress = 1
        notify(.navigation)
    }

    // MARK: Page state (renderer reports)

    /// Applies what a renderer reports; only fields given change. A crash (`isCrashed` true) also ends
    /// loading and discards a pending navigation, as a renderer that is gone loads nothing (Chromium's
    /// `WebStateImpl::OnRenderProcessGone`); while a navigation is pending, loading does not end but
    /// with it (its commit or discard);
    /// `isCrashed` false is a renderer's word that the page runs again.
    /// - Returns: the kinds of change that happened (empty when every value was already so).
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` for a new title while unrealized (the current
    ///   entry takes the title; nothing changes then).
    @discardableResult
    public func updatePageState(
        title: String? = nil, isLoading: Bool? = nil, progress: Double? = nil,
        faviconURL: String?? = nil, isCrashed: Bool? = nil
    ) throws(ModelError) -> Set<WebStateChange> {
        var changes = Set<WebStateChange>()
        var isLoading = isLoading
        // A navigation still pending loads (Chromium's `IsLoading` follows the navigation): a report
        // that the document before it stopped loading, come late, does not end that.
        if isLoading == false, pendingNavigation != nil { isLoading = nil }
        if let isCrashed, isCrashed != self.isCrashed {
            self.isCrashed = isCrashed
            if isCrashed {
                isLoading = false
                // No page is left to commit it.
                if pendingNavigation != nil {
                    setPending(nil)
                    changes.insert(.navigation)
                }
            }
            changes.insert(.crashed)
        }
        if let title, title != self.title {
            guard isRealized else { throw .historiesNotLoaded([id]) }
            self.title = title
            let before = byteCount
            try mutateHistory { $0.setCurrentTitle(title) }
            budget?.charge(byteCount - before)
            changes.insert(.title)
        }
        if let isLoading, isLoading != self.isLoading {
            self.isLoading = isLoading
            if !isLoading { self.progress = 1 }
            changes.insert(.loading)
        }
        if let progress, progress != self.progress {
            self.progress = min(1, max(0, progress))
            changes.insert(.progress)
        }
        if let faviconURL, faviconURL != self.faviconURL {
            let before = byteCount
            self.faviconURL = faviconURL
            budget?.charge(byteCount - before)
            changes.insert(.favicon)
        }
        for change in changes.sorted(by: { $0.rawValue < $1.rawValue }) { notify(change) }
        return changes
    }

    /// Sets the picture of the tab's page, replacing the one it had. Works on an unrealized tab too (the
    /// picture is not its history). A picture is never removed but with its tab (closing it deletes its
    /// row and the picture with it), so there is no removal for storage to miss.
    /// - Throws: ``ModelError/profileFull(used:adding:limit:)`` when the larger picture would pass its
    ///   profile's budget (nothing changed).
    /// - Returns: whether anything changed; when it did, tells `.snapshot`.
    @discardableResult
    public func setSnapshot(_ snapshot: PageSnapshot) throws(ModelError) -> Bool {
        // The same picture again (its tag names its bytes) changes nothing, not even when it was taken.
        guard snapshot.etag != self.snapshot?.etag || snapshot.mediaType != self.snapshot?.mediaType else { return false }
        let delta = snapshot.byteCount - (self.snapshot?.byteCount ?? 0)
        try budget?.check(adding: delta)
        self.snapshot = snapshot
        budget?.charge(delta)
        notify(.snapshot)
        return true
    }

    /// Gives a restored tab the picture storage holds for it (no notification: the tab is being built).
    public func restoreSnapshot(_ snapshot: PageSnapshot) {
        let delta = snapshot.byteCount - (self.snapshot?.byteCount ?? 0)
        self.snapshot = snapshot
        budget?.charge(delta)
    }

    /// Gives the tab the bytes of its picture, as storage holds them (read by the service when an
    /// operation asked for them: ``ModelError/snapshotsNotLoaded(_:)``), so that the tab keeps its
    /// picture where storage will not (a close-all deletes its row; its undo writes it again).
    /// `stored` nil (storage holds none, though the tab knew one) drops the picture: memory follows
    /// the disk. No notification: what a watcher sees of the picture (its tag, size) is unchanged,
    /// or the tab is about to leave its window.
    public func holdSnapshotBytes(_ stored: PageSnapshot?) {
        guard snapshot != nil, snapshot?.bytes == nil else { return }
        let kept = stored?.bytes == nil ? nil : stored
        let delta = (kept?.byteCount ?? 0) - (snapshot?.byteCount ?? 0)
        snapshot = kept
        budget?.charge(delta)
    }

    /// Whether the tab knows a picture whose bytes only storage holds.
    public var snapshotBytesAreStored: Bool { snapshot != nil && snapshot?.bytes == nil }

    /// Records that the tab became the active one.
    public func markActive(at time: Date = Date()) { lastActiveAt = time }

    // MARK: Observers

    /// Adds an observer (once; adding it again keeps its place). Observers are held weakly and told
    /// in the order they were added.
    public func addObserver(_ observer: any WebStateObserver) {
        observers.removeAll { $0.observer == nil }
        guard !observers.contains(where: { $0.observer === observer }) else { return }
        observers.append(WeakWebStateObserver(observer: observer))
    }

    public func removeObserver(_ observer: any WebStateObserver) {
        observers.removeAll { $0.observer === observer || $0.observer == nil }
    }

    private func notify(_ change: WebStateChange) {
        list?.tabDidChange(self, change: change)
        for box in observers { box.observer?.webStateDidChange(self, change: change) }
    }
}

/// What changed in a tab.
public enum WebStateChange: String, Sendable, Hashable {
    case navigation, title, loading, progress, favicon
    /// ``WebState/isCrashed`` changed by itself (a load that clears it is a `navigation` or `loading`).
    case crashed
    /// ``WebState/snapshot`` changed.
    case snapshot
}

/// Watches one tab's own state (navigation and page state).
public protocol WebStateObserver: AnyObject {
    func webStateDidChange(_ webState: WebState, change: WebStateChange)
}

struct WeakWebStateObserver {
    weak var observer: (any WebStateObserver)?
}

/// What an unrealized tab keeps of its history (Chromium's `WebStateMetadataStorage`): enough for the
/// tab list, snapshots, events and its profile's byte budget.
public struct HistoryMetadata: Sendable, Equatable {
    public var visibleURL: String
    public var currentIndex: Int
    public var count: Int
    public var byteCount: Int

    public init(visibleURL: String, currentIndex: Int, count: Int, byteCount: Int) {
        self.visibleURL = visibleURL
        self.currentIndex = currentIndex
        self.count = count
        self.byteCount = byteCount
    }
}
