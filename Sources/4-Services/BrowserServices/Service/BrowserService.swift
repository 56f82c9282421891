public import BrowserModel
import BrowserRecords
import Foundation
import Synchronization

/// The façade the HTTP edge talks to: profiles and windows, and every window command.
///
/// Mutations run on the profile's serial executor through the target window's dispatcher; reads come
/// from the snapshots mediators publish, without waiting for any executor. Everything handed out is a
/// value type.
public final class BrowserService: Sendable {
    public let limits: ModelLimits
    let snapshots: SnapshotIndex
    let sink: (any DurableSink)?
    /// Whether answers wait for the commit (durable) or only for the change to be queued (relaxed).
    let waitsForCommit: Bool
    /// Routes that arrived while the state was being restored, one per window (the newest).
    let savedRoutes = Mutex<[BrowserID: SavedRoute]>([:])
    /// Reads what storage holds of tabs: histories of tabs restored unrealized, stored pictures.
    let storedTabs: any StoredTabReading
    /// Tabs realized so far, and the bursts of them (see ``RealizationLog``).
    let realizations = RealizationLog()
    /// The bytes each profile may write per second (nil: no quota); charged with every change queued.
    public let writeQuota: WriteQuota?
    /// The timer of each pending close-all (it confirms it when its undo window ends): only pending
    /// ones have one, so a profile holds at most ``ModelLimits/pendingClosingsPerProfile``.
    let closingTimers = Mutex<[ClosedTabID: (profile: ProfileID, timer: Task<Void, Never>)]>([:])

    /// - Parameters:
    ///   - limits: the model's caps.
    ///   - sink: where durable changes go; nil keeps everything in memory only.
    ///   - storedTabs: reads what storage holds of tabs (``NothingStored`` when nothing is stored).
    ///   - waitsForCommit: false answers once a change is queued for the next commit (`--durability
    ///     relaxed`): a crash loses at most what was queued, i.e. the changes of the last commit interval.
    ///   - events: bounds of the event streams.
    ///   - framing: the event streams' wire format (the HTTP edge gives server-sent events).
    ///   - onAction: told of every action a window's dispatcher ran, by name and outcome (metrics).
    ///   - writeQuota: the bytes each profile may write per second; nil: no quota.
    public init(
        limits: ModelLimits = ModelLimits(), sink: (any DurableSink)? = nil, storedTabs: any StoredTabReading, waitsForCommit: Bool = true,
        events: EventStreamLimits = EventStreamLimits(), framing: any EventFraming,
        onAction: (@Sendable (_ name: String, _ ok: Bool) -> Void)? = nil, writeQuota: WriteQuota? = nil,
        answerCacheBytes: Int = BrowserService.defaultAnswerCacheBytes
    ) {
        self.writeQuota = writeQuota
        self.limits = limits
        self.snapshots = SnapshotIndex(
            events: EventHub(limits: events, framing: framing), onAction: onAction, answerCacheBytes: answerCacheBytes)
        self.sink = sink
        self.storedTabs = storedTabs
        self.waitsForCommit = waitsForCommit
    }

    /// Runs `body` on a profile's executor, then publishes what changed and queues its durable change
    /// there (so changes queue in executor order); returns once that change is on disk.
    ///
    /// Realization happens here, before the command: when `body` needs the histories of unrealized
    /// tabs, the model throws ``ModelError/historiesNotLoaded(_:)`` before changing anything; they are
    /// read from storage (``realize(_:on:)``) and `body` runs again. The same for the bytes of stored
    /// pictures it must keep (``ModelError/snapshotsNotLoaded(_:)``, ``holdSnapshotBytes(of:on:)``). A read that fails fails the request
    /// with ``ServiceError/storageUnreadable(_:)``: nothing changed, nothing made up.
    /// - Throws: `body`'s error, ``ServiceError/storageFailed(_:)`` when the change could not be saved,
    ///   or ``ServiceError/storageUnreadable(_:)``.
    func run<T: Sendable>(
        _ executor: ProfileExecutor, mutating: Bool = true,
        _ body: @escaping @Sendable (ProfileSession) throws -> T
    ) async throws -> T {
        // Each round realizes what the last one asked for; a command asks for all it needs at once, so
        // more rounds than a few mean the tabs keep changing under it.
        for _ in 0..<Self.realizationRounds {
            do {
                return try await runOnce(executor, mutating: mutating, body)
            } catch ModelError.historiesNotLoaded(let ids) {
                try await realize(ids, on: executor)
            } catch ModelError.snapshotsNotLoaded(let ids) {
                try await holdSnapshotBytes(of: ids, on: executor)
            }
        }
        return try await runOnce(executor, mutating: mutating, body)
    }

    static let realizationRounds = 4

    /// One run of ``run(_:mutating:_:)``'s body.
    private func runOnce<T: Sendable>(
        _ executor: ProfileExecutor, mutating: Bool,
        _ body: @escaping @Sendable (ProfileSession) throws -> T
    ) async throws -> T {
        // While storage is failing, nothing changes, so memory never runs further ahead of the disk.
        if mutating, let reason = sink?.unavailableReason { throw ServiceError.storageFailed(reason) }
        let snapshots = self.snapshots
        let sink = self.sink
        let quota = self.writeQuota
        let request = IdempotentRequest.current
        let (result, waiter) = await executor.perform { session -> (Result<T, any Error>, (@Sendable () async throws -> Void)?) in
            // Checked again here, in executor order: a change must not be applied once a commit has
            // failed, since the rollback that follows runs on this executor and must be the last word.
            if mutating, let reason = sink?.unavailableReason { return (.failure(ServiceError.storageFailed(reason)), nil) }
            if mutating, let sink, !sink.isOpen { return (.failure(ServiceError.storageFailed("storage is not open")), nil) }
            let mediator = ProfileMediator.attach(to: session, snapshots: snapshots)
            var result = Result { try body(session) }
            mediator.publishWindows()
            mediator.publishProfiles()
            var change = mediator.collectChanges()
            // Incognito changes are never stored, but bounded as the regular profile's writes are.
            if mediator.offTheRecordBytes > 0 { quota?.charge(mediator.offTheRecordBytes, profile: session.browserState.id.rawValue) }
            if case .failure(let error as ModelError) = result, let ids = error.notLoaded, !change.isEmpty {
                // The model's rule is that an operation asks before it changes anything: a body that
                // changed something first must not run again (its change stands; it is saved below).
                result = .failure(ServiceError.storageUnreadable("a command asked for what storage holds of \(ids.count) tabs after changing the model"))
            }
            guard !change.isEmpty, let sink else { return (result, nil) }
            change.profileID = session.browserState.id.rawValue
            // An idempotent request's answer goes into the same transaction; the edge gives it next.
            if let request { change.pendingAnswers = [request.attach()] }
            quota?.charge(change.approximateBytes, profile: session.browserState.id.rawValue)
            return (result, sink.enqueue(change))
        }
        if let waiter {
            let durable: @Sendable () async throws -> Void = {
                do { try await waiter() } catch { throw ServiceError.storageFailed("\(error)") }
            }
            if !waitsForCommit {
                // Still waited for, so a failed commit turns storage unhealthy as in durable mode.
                Task { try? await durable() }
            } else if let request {
                // The answer must be given before the commit can happen: the edge waits in `finish`.
                request.setWaiter(durable)
            } else {
                try await durable()
            }
        }
        return try result.get()
    }

    /// Why changes cannot be saved now (a commit failed and storage has not recovered), or nil.
    public var storageUnavailableReason: String? { sink?.unavailableReason }

    // MARK: Event streams

    /// The event stream sources and their caps.
    public var events: EventHub { snapshots.events }

    /// Starts a window's event stream into `sink`: the snapshot, the missed events, or a `reset`.
    /// - Returns: how it started, or nil when the window does not exist.
    public func watchWindow(_ id: BrowserID, sink: any EventSink, lastEventID: String?, filter: TopicFilter) -> EventStreamStart? {
        snapshots.events.window(id)?.subscribe(sink, lastEventID: lastEventID, filter: filter)
    }

    /// Starts the profile directory's stream into `sink`: every profile, then each one that comes,
    /// changes or goes (the administrator's view).
    public func watchDirectory(sink: any EventSink, lastEventID: String?) -> EventStreamStart {
        snapshots.events.directory.subscribe(sink, lastEventID: lastEventID, filter: .all)
    }

    /// Starts a profile's window-list stream into `sink`.
    /// - Returns: how it started, or nil when the profile does not exist.
    public func watchProfile(_ id: ProfileID, sink: any EventSink, lastEventID: String?) -> EventStreamStart? {
        snapshots.events.profile(id)?.subscribe(sink, lastEventID: lastEventID, filter: .all)
    }

    // MARK: Profiles

    /// Creates a regular profile.
    public func createProfile(name: String) async throws -> ProfileSnapshot {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.unicodeScalars.count <= 200 else {
            throw ModelError.invalidArgument("name must be 1 to 200 characters")
        }
        let state = BrowserState(name: trimmed, budget: ByteBudget(limit: limits.profileBytes))
        let id = state.id
        let executor = ProfileExecutor(session: ProfileSession(browserState: state, limits: limits))
        let snapshots = self.snapshots
        let snapshot = try await run(executor) { session in
            ProfileMediator.attach(to: session, snapshots: snapshots).snapshot(of: session.browserState)
        }
        snapshots.putProfile(snapshot, executor: executor, rootID: id)
        return snapshot
    }

    /// Every profile, regular and off-the-record, ordered by creation then id.
    public func profiles() -> [ProfileSnapshot] {
        snapshots.profileSnapshots()
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func profile(_ id: ProfileID) -> ProfileSnapshot? { snapshots.profile(id)?.snapshot }

    /// The regular profile a profile belongs to (itself when regular).
    public func rootProfile(of id: ProfileID) -> ProfileID? { snapshots.profile(id)?.rootID }

    /// The regular profile a window belongs to.
    public func rootProfile(ofWindow id: BrowserID) -> ProfileID? { snapshots.window(id)?.rootID }

    /// Deletes a profile: a regular one with its windows and its off-the-record profile; an
    /// off-the-record one with its incognito windows.
    public func deleteProfile(_ id: ProfileID) async throws {
        guard let entry = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        let snapshots = self.snapshots
        let removed: [ProfileID] = try await run(entry.executor) { session in
            let mediator = ProfileMediator.attach(to: session, snapshots: snapshots)
            if session.browserState.id == id {
                let otr = session.offTheRecord?.id
                try session.destroyOffTheRecord()
                for browser in session.browserList.browsers() { try session.closeBrowser(browser, remembering: false) }
                session.recentlyClosed.removeAll()
                mediator.deleted = true
                return [id] + (otr.map { [$0] } ?? [])
            }
            try session.destroyOffTheRecord()
            return [id]
        }
        for profile in removed { snapshots.removeProfile(profile) }
    }

    /// The off-the-record profile of a regular profile, created when missing.
    public func offTheRecordProfile(of id: ProfileID) async throws -> (profile: ProfileSnapshot, created: Bool) {
        guard let entry = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        guard entry.rootID == id else {
            throw ServiceError.wrongProfileKind("an off-the-record profile has no off-the-record profile of its own")
        }
        let snapshots = self.snapshots
        let (snapshot, created) = try await run(entry.executor) { session in
            let (otr, created) = try session.createOffTheRecord()
            let mediator = ProfileMediator.attach(to: session, snapshots: snapshots)
            mediator.publishProfiles()
            return (mediator.snapshot(of: otr), created)
        }
        if created { snapshots.putProfile(snapshot, executor: entry.executor, rootID: id) }
        return (snapshot, created)
    }

    // MARK: Windows

    /// Opens a window with no tabs in a profile (regular or off-the-record).
    public func createWindow(profile id: ProfileID) async throws -> WindowSnapshot {
        guard let entry = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        let incognito = entry.rootID != id
        let browserID = try await run(entry.executor) { session in
            guard session.profile(withID: id) != nil else { throw ModelError.profileNotFound(id) }
            return try session.createBrowser(incognito: incognito).id
        }
        guard let window = snapshots.window(browserID)?.snapshot else { throw ModelError.browserNotFound(browserID) }
        return window
    }

    /// The windows of a profile (or of every profile), in creation order.
    public func windows(profile: ProfileID? = nil) -> [WindowSnapshot] {
        snapshots.windowSnapshots(profile: profile).sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func window(_ id: BrowserID) -> WindowSnapshot? { snapshots.window(id)?.snapshot }

    /// The windows' answers kept: bytes, entries, hits, misses and evictions (`/metrics`).
    public var answerCache: AnswerCacheStats { snapshots.answerCache }

    /// The bytes of windows' answers kept at most unless told (`--window-answer-cache-bytes`).
    public static let defaultAnswerCacheBytes = SnapshotIndex.defaultAnswerCacheBytes

    /// The window's snapshot with a value made from it (its encoded answer, `bytes(value)` bytes), made
    /// once per version while it stays among the answers kept (at most ``answerCache``'s limit of
    /// bytes, the least recently read leaving first).
    public func cachedWindow<T: Sendable>(_ id: BrowserID, bytes: (T) -> Int, make: (WindowSnapshot) -> T) -> (WindowSnapshot, T)? {
        snapshots.cachedWindow(id, bytes: bytes, make: make)
    }

    /// Closes a window; its tabs go to recently closed unless it is incognito.
    public func closeWindow(_ id: BrowserID, ifMatch: Int? = nil) async throws {
        _ = try await dispatch(TabCommands.closeWindow, id, in: id, ifMatch: ifMatch)
    }

    // MARK: Lookups

    public func window(ofTab id: TabID) -> BrowserID? { snapshots.browser(ofTab: id) }
    public func window(ofGroup id: TabGroupID) -> BrowserID? { snapshots.browser(ofGroup: id) }

    public func tab(_ id: TabID) -> (tab: TabSnapshot, version: Int)? {
        guard let browserID = snapshots.browser(ofTab: id), let window = snapshots.window(browserID)?.snapshot,
            let tab = window.tabs.first(where: { $0.id == id })
        else { return nil }
        return (tab, window.version)
    }

    public func group(_ id: TabGroupID) -> (group: GroupSnapshot, version: Int)? {
        guard let browserID = snapshots.browser(ofGroup: id), let window = snapshots.window(browserID)?.snapshot,
            let group = window.groups.first(where: { $0.id == id })
        else { return nil }
        return (group, window.version)
    }

    /// A tab's navigation history.
    public func history(of id: TabID) async throws -> HistorySnapshot {
        guard let browserID = snapshots.browser(ofTab: id) else { throw ModelError.tabNotFound(id) }
        return try await withWindow(browserID, ifMatch: nil, mutating: false) { _, browser in
            let index = browser.webStateList.index(ofTabWithID: id)
            guard index >= 0 else { throw ModelError.tabNotFound(id) }
            return try browser.webStateList.webState(at: index)!.historySnapshot
        }
    }

    /// The commands a window handles, with their handlers.
    public func commands(of id: BrowserID) async throws -> [(name: String, handler: String)] {
        try await withWindow(id, ifMatch: nil, mutating: false) { _, browser in browser.dispatcher.registeredCommands }
            .map { ($0.name, $0.handler) }
    }

    /// The window's broadcast properties.
    public func broadcasts(of id: BrowserID) async throws -> [BroadcastSnapshot] {
        try await withWindow(id, ifMatch: nil, mutating: false) { _, browser in
            browser.broadcaster.keys.map { BroadcastSnapshot(key: $0.name, type: $0.type, value: browser.broadcaster.value(of: $0.name)) }
        }
    }

    /// A regular profile's recently closed entries, newest first.
    public func recentlyClosed(profile id: ProfileID) async throws -> [ClosedEntrySnapshot] {
        guard let entry = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        guard entry.rootID == id else { return [] }
        return try await run(entry.executor, mutating: false) { session in
            session.recentlyClosed.entries.map(ClosedEntrySnapshot.init)
        }
    }

    /// Restores an entry of a regular profile's recently closed list, through the window it lands in
    /// (a window entry: through a new window made for it).
    public func restoreClosedTab(profile id: ProfileID, entry: ClosedTabID, activate: Bool = true) async throws -> (tab: TabSnapshot, version: Int) {
        guard let profile = snapshots.profile(id), profile.rootID == id else { throw ModelError.profileNotFound(id) }
        return try await run(profile.executor) { session in
            guard let closed = session.recentlyClosed.entries.first(where: { $0.id == entry }) else {
                throw ModelError.closedTabNotFound(entry)
            }
            var newWindow: BrowserID?
            var target = closed.kind == .window ? nil : session.browser(withID: closed.browserID).flatMap { $0.isIncognito ? nil : $0 }
            if target == nil {
                // Its window is gone (or it is a window): the new window it opens carries the command.
                let window = try session.createBrowser()
                newWindow = window.id
                target = window
            }
            let tab: TabSnapshot
            do {
                tab = try target!.dispatcher.dispatch(
                    TabCommands.restoreClosed,
                    RestoreClosedTabRequest(entry: entry, activate: activate, newWindow: newWindow))
            } catch {
                // The restore failed: the window made for it goes too (empty, it is remembered as nothing).
                if newWindow != nil, let window = target { try? session.closeBrowser(window) }
                throw error
            }
            return (tab, session.browser(withID: tab.browserID)?.userData.get(WindowMediator.self)?.version ?? 0)
        }
    }

    // MARK: Close all, undo

    /// Closes every tab (or, with `.regularTabs`, every unpinned tab) of a window, or of every window
    /// of a profile (`window` nil), so that ``undoCloseAll(profile:closing:)`` brings them all back;
    /// confirmed by itself after `undoSeconds` (0: at once), or by ``confirmCloseAll(profile:closing:)``.
    /// Dispatched through the window, or the profile's most recently active one.
    public func closeAllTabs(
        profile id: ProfileID, window: BrowserID?, policy: TabsClosePolicy,
        undoSeconds: Int
    ) async throws -> TabsClosingSnapshot {
        guard let profile = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        let maxPending = limits.pendingClosingsPerProfile
        var (snapshot, pending) = try await run(profile.executor) { session -> (TabsClosingSnapshot, Set<ClosedTabID>) in
            let incognito = id != session.browserState.id
            let windows: [Browser]
            if let window {
                guard let browser = session.browser(withID: window) else { throw ModelError.browserNotFound(window) }
                windows = [browser]
            } else {
                windows = session.browserList.browsers(incognito ? .incognito : .regular).sorted { $0.lastActiveAt > $1.lastActiveAt }
            }
            guard let carrier = windows.first else {
                // No window: nothing to close, and nothing to undo.
                return (TabsClosingSnapshot(id: .make(), profileID: id, policy: policy, state: .confirmed, tabIDs: [], browserIDs: []), [])
            }
            let closed = try carrier.dispatcher.dispatch(
                TabCommands.closeAll,
                CloseAllTabsRequest(windows: windows.map(\.id), policy: policy, maxPending: maxPending))
            return (closed, Set(session.closings.keys))
        }
        // Close-alls the model confirmed meanwhile (past the pending cap, or on these windows) need no timer.
        let ended = closingTimers.withLock { timers -> [Task<Void, Never>] in
            let gone = timers.filter { $0.value.profile == id && !pending.contains($0.key) }
            for key in gone.keys { timers[key] = nil }
            return gone.values.map(\.timer)
        }
        for timer in ended { timer.cancel() }
        guard snapshot.state == .pending else { return snapshot }
        if undoSeconds <= 0 {
            return try await confirmCloseAll(profile: id, closing: snapshot.id)
        }
        snapshot.undoableUntil = Date().addingTimeInterval(TimeInterval(undoSeconds))
        let closing = snapshot.id
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .seconds(undoSeconds))
            guard !Task.isCancelled else { return }
            _ = try? await self?.confirmCloseAll(profile: id, closing: closing)
        }
        closingTimers.withLock { $0[closing] = (id, timer) }
        return snapshot
    }

    /// Brings back every tab a pending close-all closed, as they were (order, pinned state, groups,
    /// openers, the active tab); into a new window where theirs is gone.
    public func undoCloseAll(profile id: ProfileID, closing: ClosedTabID) async throws -> TabsClosingSnapshot {
        guard let profile = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        defer { endTimer(of: closing, profile: id) }
        return try await run(profile.executor) { session in
            let (pending, first) = try Self.pending(closing, of: id, in: session)
            // Through the first of its windows still open; else its first window comes back to carry it.
            let carrier =
                try pending.parts.lazy.compactMap { session.browser(withID: $0.browserID) }.first
                ?? session.createBrowser(incognito: first.incognito, id: first.browserID)
            return try carrier.dispatcher.dispatch(TabCommands.undoCloseAll, closing)
        }
    }

    /// Makes a pending close-all final: its tabs are recorded as recently closed (regular windows).
    public func confirmCloseAll(profile id: ProfileID, closing: ClosedTabID) async throws -> TabsClosingSnapshot {
        guard let profile = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        defer { endTimer(of: closing, profile: id) }
        return try await run(profile.executor) { session in
            let (pending, first) = try Self.pending(closing, of: id, in: session)
            let windows = session.browserList.browsers(first.incognito ? .incognito : .regular)
            guard let carrier = windows.max(by: { $0.lastActiveAt < $1.lastActiveAt }) else {
                // No window left to carry it: confirmed on the profile itself.
                session.confirmClosing(closing)
                return TabsClosingSnapshot(pending, profileID: id, state: .confirmed)
            }
            return try carrier.dispatcher.dispatch(TabCommands.confirmCloseAll, closing)
        }
    }

    /// Stops the timer of a close-all that was undone or confirmed (its profile's own, no other's).
    private func endTimer(of closing: ClosedTabID, profile: ProfileID) {
        let timer = closingTimers.withLock { timers -> Task<Void, Never>? in
            guard timers[closing]?.profile == profile else { return nil }
            return timers.removeValue(forKey: closing)?.timer
        }
        timer?.cancel()
    }

    /// The pending close-all `id` of profile `profile`, and its first window's part.
    private static func pending(
        _ id: ClosedTabID, of profile: ProfileID,
        in session: ProfileSession
    ) throws -> (TabsClosing, TabsClosing.Part) {
        guard let pending = session.closings[id], let first = pending.parts.first,
            (first.incognito ? session.offTheRecord?.id : session.browserState.id) == profile
        else {
            throw ModelError.closingNotFound(id)
        }
        return (pending, first)
    }

    // MARK: Commands

    /// Dispatches a command through a window's dispatcher, on its profile's executor.
    /// - Parameter ifMatch: the window version the client saw; another version → ``ServiceError/versionMismatch(current:)``.
    /// - Returns: the command's result and the window's version afterwards.
    public func dispatch<Payload: Sendable, Result: Sendable>(
        _ command: Command<Payload, Result>, _ payload: Payload, in id: BrowserID, ifMatch: Int? = nil
    ) async throws -> (result: Result, version: Int) {
        try await withWindow(id, ifMatch: ifMatch) { _, browser in
            let result = try browser.dispatcher.dispatch(command, payload)
            return (result, browser.userData.get(WindowMediator.self)?.version ?? 0)
        }
    }

    /// Dispatches a command named at run time with JSON-like arguments, as a screen's request: it must
    /// be registered, in the sending screen's navigator, and let through by the interceptors.
    /// - Parameter from: the sending screen's node id; nil judges against the top-most screen.
    public func dispatch(
        name: String, arguments: CommandArguments, in id: BrowserID,
        from: String? = nil
    ) async throws -> (result: CommandResult, version: Int) {
        try await withWindow(id, ifMatch: nil) { _, browser in
            guard browser.dispatcher.isRegistered(name) else { throw ModelError.commandNotRegistered(name) }
            guard browser.dispatcher.payloadType(of: name) == CommandArguments.self else {
                throw ModelError.invalidCommandArguments(command: name, reason: "this command is reached through its REST endpoint")
            }
            try browser.userData.get(BrowserCoordinator.self)?.checkCommand(name, arguments: arguments, from: from)
            let result = try browser.dispatcher.dispatch(name: name, payload: arguments)
            return (CommandResult(result), browser.userData.get(WindowMediator.self)?.version ?? 0)
        }
    }

    /// The window's version now (after the last published change).
    public func version(of id: BrowserID) -> Int? { snapshots.window(id)?.snapshot.version }

    /// Runs `body` on the window's profile executor, checking `ifMatch`, then publishes what changed.
    func withWindow<T: Sendable>(
        _ id: BrowserID, ifMatch: Int?, mutating: Bool = true,
        _ body: @escaping @Sendable (ProfileSession, Browser) throws -> T
    ) async throws -> T {
        guard let window = snapshots.window(id), let profile = snapshots.profile(window.rootID) else {
            throw ModelError.browserNotFound(id)
        }
        return try await run(profile.executor, mutating: mutating) { session in
            guard let browser = session.browser(withID: id), let mediator = browser.userData.get(WindowMediator.self) else {
                throw ModelError.browserNotFound(id)
            }
            if let ifMatch, ifMatch != mediator.version { throw ServiceError.versionMismatch(current: mediator.version) }
            return try body(session, browser)
        }
    }
}

/// What a command named at run time answered.
public enum CommandResult: Sendable, Equatable {
    case tab(TabSnapshot)
    case tabID(TabID)
    /// A presentation command: the window's tree and what changed.
    case presentation(PresentationResult)
    case none

    init(_ value: Any) {
        switch value {
        case let result as CommandResult: self = result
        case let tab as TabSnapshot: self = .tab(tab)
        case let id as TabID: self = .tabID(id)
        case let presentation as PresentationResult: self = .presentation(presentation)
        default: self = .none
        }
    }
}
