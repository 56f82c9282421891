import BrowserModel
public import BrowserRecords

// After a failed commit, "not acknowledged" must mean "did not happen": every change of the failed
// transaction, and every change made after it (the writer refuses those unwritten), is undone in
// memory by bringing each regular profile back to what storage holds. Windows whose state differs
// are rebuilt in place through the model, so their mediators tell watchers what changes back (the
// stream's state equals the model's again); windows that were never committed close; windows whose
// close was not committed come back. Nothing of this is written: memory equals the disk again.
extension BrowserService {
    /// What a rollback changed.
    public struct RollbackSummary: Sendable, Equatable {
        /// Windows whose tabs were put back as stored.
        public var windowsRebuilt = 0
        /// Windows that were never committed, closed.
        public var windowsClosed = 0
        /// Windows whose close was never committed, open again.
        public var windowsReopened = 0
        /// Profiles that were never committed, removed; and profiles whose delete was not, back.
        public var profilesRemoved = 0
        public var profilesRestored = 0
        /// Stored values the model could not take as they were (see ``RestoreSummary/repairs``).
        public var repairs: [String] = []

        public init() {}

        public var isEmpty: Bool {
            windowsRebuilt == 0 && windowsClosed == 0 && windowsReopened == 0 && profilesRemoved == 0 && profilesRestored == 0
        }
    }

    /// Brings every regular profile back to `stored` (what the database holds). Call while the sink
    /// refuses changes (so no mutation runs meanwhile), with what the writer read after the failure.
    /// Incognito windows are left as they are: nothing of them is ever written.
    public func rollBack(to stored: StoredState) async throws -> RollbackSummary {
        var summary = RollbackSummary()
        let windowsByProfile = Dictionary(grouping: stored.windows, by: \.profileID)
        let storedProfiles = Dictionary(stored.profiles.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let snapshots = self.snapshots
        var present: Set<String> = []
        for executor in snapshots.sessionExecutors() {
            let tabs = stored.tabs
            let (part, profile, removed) = try await executor.perform { session -> (RollbackSummary, ProfileSnapshot?, [ProfileID]) in
                let id = session.browserState.id
                let mediator = ProfileMediator.attach(to: session, snapshots: snapshots)
                var part = RollbackSummary()
                guard storedProfiles[id.rawValue] != nil else {
                    // Never committed: gone, as after a restart.
                    let otr = session.offTheRecord?.id
                    try session.destroyOffTheRecord()
                    for browser in session.browserList.browsers() { try session.closeBrowser(browser, remembering: false) }
                    session.recentlyClosed.removeAll()
                    mediator.publishWindows()
                    mediator.markPersisted()
                    part.profilesRemoved = 1
                    return (part, nil, [id] + (otr.map { [$0] } ?? []))
                }
                mediator.deleted = false
                let records = windowsByProfile[id.rawValue] ?? []
                let kept = Set(records.map(\.id))
                for browser in session.browserList.browsers(.regular) where !kept.contains(browser.id.rawValue) {
                    // Never committed: gone as after a restart, remembered as nothing.
                    try session.closeBrowser(browser, remembering: false)
                    part.windowsClosed += 1
                }
                for record in records {
                    if let browser = session.browser(withID: BrowserID(rawValue: record.id)) {
                        guard let window = browser.userData.get(WindowMediator.self), !window.holds(record, tabs: tabs) else { continue }
                        _ = try browser.webStateList.closeAll(flags: .tabsCleanup)
                        _ = try Self.fill(browser, from: record, tabs: tabs, repairs: &part.repairs)
                        window.markDirtyForPublish()  // openers were restored silently
                        part.windowsRebuilt += 1
                    } else {
                        _ = try Self.restoreWindow(record, tabs: tabs, into: session, repairs: &part.repairs)
                        part.windowsReopened += 1
                    }
                }
                // What is stored is the truth again: close-alls not confirmed are as after a restart.
                session.forgetClosings()
                Self.restoreClosed(stored.recentlyClosed[id.rawValue] ?? [], into: session.recentlyClosed, repairs: &part.repairs)
                mediator.publishWindows()
                mediator.publishProfiles()
                mediator.markPersisted()
                return (part, mediator.snapshot(of: session.browserState), [])
            }
            if let profile { present.insert(profile.id.rawValue) }
            for id in removed { snapshots.removeProfile(id) }
            summary.windowsRebuilt += part.windowsRebuilt
            summary.windowsClosed += part.windowsClosed
            summary.windowsReopened += part.windowsReopened
            summary.profilesRemoved += part.profilesRemoved
            summary.repairs += part.repairs
        }
        // Profiles whose delete was never committed come back as stored (those the directory lists as
        // not in memory, stored but not loaded yet or held elsewhere, stay out).
        var missing = StoredState()
        missing.profiles = stored.profiles.filter { !present.contains($0.id) && !isStoredElsewhere(ProfileID(rawValue: $0.id)) }
        if !missing.profiles.isEmpty {
            let ids = Set(missing.profiles.map(\.id))
            missing.windows = stored.windows.filter { ids.contains($0.profileID) }
            missing.tabs = stored.tabs
            missing.recentlyClosed = stored.recentlyClosed.filter { ids.contains($0.key) }
            let restored = try await restore(missing)
            summary.profilesRestored = restored.profiles
            summary.repairs += restored.repairs
        }
        return summary
    }
}

extension WindowMediator {
    /// Whether the window is exactly as `record` and `tabs` store it (its version aside).
    func holds(_ record: WindowRecord, tabs: [String: TabRecord]) -> Bool {
        var current = windowRecord(includingOrder: true)
        current.version = record.version
        guard current == record else { return false }
        for index in 0..<list.count {
            let tab = tabRecord(at: index)
            guard var stored = tabs[tab.id] else { return false }
            if let summary = tab.summary, stored.summary == nil {
                // An unrealized tab holds what storage holds of its history: the same when its summary
                // agrees (its history is never read for the comparison).
                let storedSummary = HistorySummary(stored.history, index: stored.historyIndex)
                guard storedSummary.count == summary.count, storedSummary.byteCount == summary.byteCount else { return false }
                stored.history = []
                stored.historyIndex = tab.historyIndex
                stored.summary = summary
            }
            guard stored == tab else { return false }
        }
        return true
    }
}
