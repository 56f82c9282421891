import BrowserModel
import BrowserRecords

/// Watches a profile session's windows: gives each new window its `WindowMediator` and retires it
/// when the window goes; publishes the profile snapshots.
final class ProfileMediator: BrowserListObserver, RecentlyClosedTabsObserver, BrowserStateObserver {
    unowned let session: ProfileSession
    let snapshots: SnapshotIndex
    /// Whether the profile row must be written.
    var profileDirty = true
    /// Regular windows closed since the last change set.
    var deletedWindows: [BrowserID] = []
    /// Recently-closed entries recorded since the last change set (oldest first) and the ids of
    /// written entries that left the list since then: what the next change set writes.
    var closedAdded: [(entry: ClosedEntry, parked: Bool)] = []
    var closedRemoved: [ClosedTabID] = []
    /// Whether the regular profile's web state must be written.
    var storageStateDirty = false
    /// Set when the profile is deleted: the next change set deletes it (and, by cascade, its data).
    var deleted = false
    /// What the incognito windows' changes in the last change set would have written, were they stored
    /// (they never are): charged to the profile's write quota like its regular windows' changes, so an
    /// off-the-record profile's updates (and the events each one sends) are bounded per second alike.
    private(set) var offTheRecordBytes = 0
    /// While set, new windows get only their tab mediator; ``attachConsumers(to:)`` follows.
    var isRestoring = false
    /// The windows the current operation touched: the only ones published, flushed and collected.
    let touches = TouchedWindows()
    /// The incognito lock of the profile (the interceptor of every window's coordinator reads it).
    let incognitoLock = IncognitoLock()
    /// The window-list consumers of the regular profile and its off-the-record one (event streams).
    private var browserLists: [ProfileID: ProfileEventRecorder] = [:]

    init(session: ProfileSession, snapshots: SnapshotIndex) {
        self.session = session
        self.snapshots = snapshots
        session.browserList.addObserver(self)
        session.recentlyClosed.addObserver(self)
        session.browserState.addObserver(self)
        updateBrowserListConsumers()
    }

    private static func item(_ browser: Browser) -> BrowserItem {
        BrowserItem(id: browser.id, profileID: browser.browserState.id, incognito: browser.isIncognito, createdAt: browser.createdAt)
    }

    /// Opens the stream source of each profile of the session that has none, and ends those of
    /// profiles that are gone (a destroyed off-the-record profile, a deleted profile).
    private func updateBrowserListConsumers() {
        // The common case (runs after every operation): the same profiles as last time.
        if !deleted, browserLists[session.browserState.id] != nil {
            if let otr = session.offTheRecord {
                if browserLists.count == 2 && browserLists[otr.id] != nil { return }
            } else if browserLists.count == 1 {
                return
            }
        }
        var live: [BrowserState] = deleted ? [] : [session.browserState]
        if !deleted, let otr = session.offTheRecord { live.append(otr) }
        for state in live where browserLists[state.id] == nil {
            let browsers = session.browserList.browsers(state.isOffTheRecord ? .incognito : .regular).map(Self.item)
            let incognito: ProfileID?? = state.isOffTheRecord ? nil : .some(session.offTheRecord?.id)
            let snapshot = ProfileStreamSnapshot(profileID: state.id, browsers: browsers, incognitoProfileID: incognito)
            let recorder = ProfileEventRecorder(
                profileID: state.id, channel: snapshots.events.openProfile(state.id, snapshot: snapshot), incognitoProfileID: incognito)
            recorder.populate(browsers: browsers)
            browserLists[state.id] = recorder
            state.addObserver(self)
        }
        let ids = Set(live.map(\.id))
        for (id, recorder) in browserLists where !ids.contains(id) {
            recorder.close()
            snapshots.events.closeProfile(id)
            browserLists[id] = nil
        }
        if !deleted { browserLists[session.browserState.id]?.incognitoChanged(to: session.offTheRecord?.id) }
    }

    /// A profile's web state was replaced: the regular one's is written with the next change, and the
    /// profile's watchers are told (`profile.webState`: counts, never values).
    func browserStateDidReplaceStorageState(_ state: BrowserState) {
        if !state.isOffTheRecord { storageStateDirty = true }
        browserLists[state.id]?.webStateChanged(state.storageState)
    }

    /// Attaches a mediator to a session (once).
    static func attach(to session: ProfileSession, snapshots: SnapshotIndex) -> ProfileMediator {
        if let existing = session.userData.get(ProfileMediator.self) { return existing }
        let mediator = ProfileMediator(session: session, snapshots: snapshots)
        session.userData.set(mediator)
        return mediator
    }

    func browserList(_ list: BrowserList, didAdd browser: Browser) {
        let mediator = WindowMediator(browser: browser, session: session, snapshots: snapshots, touches: touches)
        browser.userData.set(mediator)
        // A new window is written at once, tabs or not: its creation was acknowledged, so it survives a
        // crash, and other instances find it by its id.
        if !isRestoring { mediator.markNew() }
        mediator.publish()
        if !isRestoring { attachConsumers(to: browser) }
        updateBrowserListConsumers()
        browserLists[browser.browserState.id]?.browserAdded(Self.item(browser))
        publishProfiles()
    }

    /// Lets every window go without closing it (the profile leaves memory; it is all stored): what is
    /// attached to a window, and holds it, is detached. Nothing is published, written or announced.
    /// - Returns: the detached mediators, coordinators and logs, for the caller to free where it
    ///   frees the session (see ``ProfileRemains``): they hold a copy of every tab's state.
    func releaseWindows() -> [AnyObject] {
        var detached: [AnyObject] = []
        for browser in session.browserList.browsers() {
            if let mediator = browser.userData.get(WindowMediator.self) {
                mediator.stop()
                detached.append(mediator)
            }
            if let coordinator = browser.userData.get(BrowserCoordinator.self) { detached.append(coordinator) }
            if let log = browser.userData.get(ActionLog.self) {
                log.stop()
                detached.append(log)
            }
            if let mediators = browser.userData.get(WindowEventMediators.self) { detached.append(mediators) }
            browser.userData.set(WindowMediator?.none)
            browser.userData.set(BrowserCoordinator?.none)
            browser.userData.set(ActionLog?.none)
            browser.userData.set(WindowEventMediators?.none)
        }
        return detached
    }

    func browserList(_ list: BrowserList, didRemove browser: Browser) {
        if !browser.isIncognito { deletedWindows.append(browser.id) }
        browser.userData.get(WindowMediator.self)?.stop()
        browser.userData.set(WindowMediator?.none)
        browser.userData.get(BrowserCoordinator.self)?.stop()
        browser.userData.set(BrowserCoordinator?.none)
        browser.userData.get(ActionLog.self)?.stop()
        browser.userData.set(ActionLog?.none)
        browser.userData.get(WindowEventMediators.self)?.stop(snapshots.window(browser.id)?.snapshot)
        browser.userData.set(WindowEventMediators?.none)
        browserLists[browser.browserState.id]?.browserRemoved(id: browser.id)
        snapshots.removeWindow(browser.id)
        publishProfiles()
    }

    /// Gives a window its consumer-facing mediators, event recorder, action log and root coordinator
    /// (after a restore, once its tabs are back: nobody can watch it before).
    func attachConsumers(to browser: Browser) {
        guard browser.userData.get(BrowserCoordinator.self) == nil, let window = snapshots.window(browser.id)?.snapshot else { return }
        let events = WindowEventMediators(browser: browser, hub: snapshots.events, window: window)
        browser.userData.set(events)
        let recorder = events.recorder
        recorder.onFirstPending = { [touches, unowned browser] in touches.touch(browser) }
        browser.userData.set(ActionLog(browser: browser, consumer: recorder, onAction: snapshots.onAction))
        let coordinator = BrowserCoordinator(
            browser: browser, consumer: recorder,
            interceptors: [IncognitoLockInterceptor(lock: incognitoLock)])
        coordinator.start()
        browser.userData.set(coordinator)
        events.begin(window) { [weak coordinator] in coordinator?.node }
    }

    /// Publishes every window the operation touched, and hands each one's events to its stream.
    /// (A window closed meanwhile has no mediators left: skipped.)
    func publishWindows() {
        for browser in touches.browsers {
            browser.userData.get(WindowMediator.self)?.publish()
            browser.userData.get(WindowEventMediators.self)?.flush { snapshots.window(browser.id)?.snapshot }
        }
    }

    func snapshot(of state: BrowserState) -> ProfileSnapshot {
        let windows = session.browserList.count(state.isOffTheRecord ? .incognito : .regular)
        return ProfileSnapshot(
            id: state.id, name: state.name, incognito: state.isOffTheRecord, parentID: state.original?.id,
            offTheRecordID: state.offTheRecord?.id, windowCount: windows, createdAt: state.createdAt)
    }

    func publishProfiles() {
        snapshots.updateProfile(snapshot(of: session.browserState))
        if let otr = session.offTheRecord {
            if snapshots.profile(otr.id) == nil, let root = snapshots.profile(session.browserState.id) {
                // Made by a command (an incognito tab opened from a regular window): list it too.
                snapshots.putProfile(snapshot(of: otr), executor: root.executor, rootID: root.snapshot.id)
            } else {
                snapshots.updateProfile(snapshot(of: otr))
            }
        }
        updateBrowserListConsumers()
        for recorder in browserLists.values { recorder.flush() }
    }
}

// What of the profile must be written: its row, closed windows, every regular window's changes and
// the recently-closed list. Nothing of the off-the-record profile is ever written.
extension ProfileMediator {
    func collectChanges() -> ChangeSet {
        var change = ChangeSet()
        let state = session.browserState
        defer { touches.removeAll() }
        offTheRecordBytes = 0
        if deleted {
            change.deletedProfiles = [state.id.rawValue]
            return change
        }
        if profileDirty {
            change.profiles = [ProfileRecord(id: state.id.rawValue, name: state.name, createdAt: state.createdAt)]
            profileDirty = false
        }
        if storageStateDirty {
            let json = state.storageState.isEmpty ? nil : StorageStateJSON.encode(state.storageState)
            change.webStates = [WebStateRecord(profileID: state.id.rawValue, json: json)]
            storageStateDirty = false
        }
        change.deletedWindows = deletedWindows.map(\.rawValue)
        deletedWindows = []
        for browser in touches.browsers where !browser.isIncognito {
            browser.userData.get(WindowMediator.self)?.collectChanges(into: &change)
        }
        var unstored = ChangeSet()
        for browser in touches.browsers where browser.isIncognito {
            browser.userData.get(WindowMediator.self)?.collectChanges(into: &unstored, offTheRecord: true)
        }
        offTheRecordBytes = unstored.isEmpty ? 0 : unstored.approximateBytes
        if !closedRemoved.isEmpty {
            change.closedRemoved = closedRemoved.map(\.rawValue)
            closedRemoved = []
        }
        if !closedAdded.isEmpty {
            // Oldest first, so rows inserted in one commit keep their order by rowid among equal times.
            change.closedAdded = closedAdded.map { (state.id.rawValue, Self.record($0.entry, parked: $0.parked)) }
            closedAdded = []
        }
        return change
    }

    static func record(_ entry: ClosedEntry, parked: Bool) -> ClosedEntryRecord {
        let kind: ClosedEntryRecord.Kind
        switch entry.kind {
        case _ where parked: kind = .closing
        case .tab: kind = .tab
        case .window: kind = .window
        case .group: kind = .group
        }
        return ClosedEntryRecord(id: entry.id.rawValue, kind: kind, tabs: entry.tabs.map(record))
    }

    static func record(_ tab: ClosedTab) -> ClosedTabRecord {
        let (items, current) = tab.history.sessionWindow()
        return ClosedTabRecord(
            id: tab.id.rawValue, tabID: tab.tabID.rawValue, windowID: tab.browserID.rawValue, index: tab.index,
            groupID: tab.groupID?.rawValue,
            group: tab.group.map {
                ClosedGroupRecord(
                    title: $0.visualData.title, color: $0.visualData.color.rawValue,
                    collapsed: $0.visualData.collapsed)
            },
            wasActive: tab.wasActive, wasPinned: tab.wasPinned, title: tab.title,
            faviconURL: tab.faviconURL, closedAt: tab.closedAt, historyIndex: current,
            history: items.map { HistoryEntryRecord(url: $0.url, title: $0.title, transition: $0.transition.rawValue, timestamp: $0.timestamp) })
    }

    /// Marks everything as written (after a restore).
    func markPersisted() {
        profileDirty = false
        storageStateDirty = false
        deletedWindows = []
        closedAdded = []
        closedRemoved = []
        for browser in session.browserList.browsers(.regular) { browser.userData.get(WindowMediator.self)?.markPersisted() }
        touches.removeAll()
    }
}

// The recently-closed list's changes, kept until the next change set: O(entries that came or went).
extension ProfileMediator {
    func recentlyClosedTabs(_ list: RecentlyClosedTabs, didRecord entry: ClosedEntry, parked: Bool) {
        closedAdded.append((entry, parked))
    }

    func recentlyClosedTabs(_ list: RecentlyClosedTabs, didRemove ids: [ClosedTabID]) {
        for id in ids {
            // An entry that came and went within one change set was never written.
            if let index = closedAdded.lastIndex(where: { $0.entry.id == id }) {
                closedAdded.remove(at: index)
            } else {
                closedRemoved.append(id)
            }
        }
    }
}
