import BrowserModel
import BrowserRecords

// What of a window must be written: its list-level row whenever anything changed, the tabs that
// changed, and the tabs that left it. Incognito windows are never written.
extension WindowMediator {
    /// Records what changed for the next change set (called from observation).
    func noteChange(_ change: WebStateListChange) {
        persistence.windowDirty = true
        switch change {
        case .insert(let tab, _, _): persistence.dirtyTabs.insert(tab.id)
        case .detach(let detach): persistence.removedTabs.insert(detach.tab.id)
        case .replace(let replaced, let inserted, _):
            persistence.removedTabs.insert(replaced.id)
            persistence.dirtyTabs.insert(inserted.id)
        case .move(let tab, _, _, _, _, _): persistence.dirtyTabs.insert(tab.id)
        case .statusOnly(let tab, _, _, _, _): if let tab { persistence.dirtyTabs.insert(tab.id) }
        case .openerChange(let tab, _): persistence.dirtyTabs.insert(tab.id)
        case .groupCreate, .groupVisualDataUpdate, .groupMove, .groupDelete: break
        }
    }

    /// Adds this window's pending writes to `change` and starts clean.
    func collectChanges(into change: inout ChangeSet) {
        guard !browser.isIncognito else { return }
        var state = persistence
        // A window nothing happened to is skipped without looking at its tabs (this runs after
        // every operation on the profile).
        guard state.windowDirty || !state.dirtyTabs.isEmpty || !state.removedTabs.isEmpty else { return }
        let list = self.list
        // Openers and groups can change without a notification of their own tab (an opener is
        // cleared when its tab leaves): compare with what was last written.
        let signatures = currentSignatures()
        for tab in list.webStates where state.savedSignatures[ObjectIdentifier(tab)] != signatures[ObjectIdentifier(tab)] {
            state.dirtyTabs.insert(tab.id)
        }
        change.windows.append(windowRecord())
        change.deletedTabs += state.removedTabs.filter { list.index(ofTabWithID: $0) < 0 }.map(\.rawValue).sorted()
        for index in 0..<list.count where state.dirtyTabs.contains(list.webState(at: index)!.id) {
            change.tabs.append((browser.id.rawValue, tabRecord(at: index)))
        }
        persistence = WindowPersistenceState(savedSignatures: signatures)
    }

    /// Marks everything as written (after a restore), without building records.
    func markPersisted() {
        persistence = WindowPersistenceState(savedSignatures: currentSignatures())
    }

    /// Each tab's opener and group now, keyed by tab identity.
    private func currentSignatures() -> [ObjectIdentifier: TabSignature] {
        let list = self.list
        var signatures: [ObjectIdentifier: TabSignature] = [:]
        signatures.reserveCapacity(list.count)
        for index in 0..<list.count {
            let opener = list.opener(at: index)
            signatures[ObjectIdentifier(list.webState(at: index)!)] = TabSignature(
                opener: opener.map { ObjectIdentifier($0.webState) }, navigationIndex: opener?.navigationIndex ?? -1,
                group: list.group(at: index).map(ObjectIdentifier.init))
        }
        return signatures
    }

    func windowRecord() -> WindowRecord {
        let list = self.list
        return WindowRecord(
            id: browser.id.rawValue, profileID: browser.browserState.id.rawValue, version: version,
            tabOrder: list.webStates.map(\.id.rawValue), activeIndex: list.activeIndex, pinnedCount: list.pinnedCount,
            groups: list.groups.sorted { $0.range.start < $1.range.start }.map {
                GroupRecord(id: $0.id.rawValue, title: $0.visualData.title, color: $0.visualData.color.rawValue,
                            collapsed: $0.visualData.collapsed)
            },
            createdAt: browser.createdAt, lastActiveAt: browser.lastActiveAt)
    }

    func tabRecord(at index: Int) -> TabRecord {
        let tab = list.webState(at: index)!
        let opener = list.opener(at: index)
        let (items, current) = tab.history.sessionWindow()
        return TabRecord(
            id: tab.id.rawValue, groupID: list.group(at: index)?.id.rawValue, openerID: opener?.webState.id.rawValue,
            openerNavigationIndex: opener?.navigationIndex, title: tab.title, loading: tab.isLoading, progress: tab.progress,
            faviconURL: tab.faviconURL, createdAt: tab.createdAt, lastActiveAt: tab.lastActiveAt, historyIndex: current,
            history: items.map { HistoryEntryRecord(url: $0.url, title: $0.title, transition: $0.transition.rawValue, timestamp: $0.timestamp) })
    }
}

/// A window's writes not yet collected.
struct WindowPersistenceState {
    var windowDirty = true
    var dirtyTabs: Set<TabID> = []
    var removedTabs: Set<TabID> = []
    var savedSignatures: [ObjectIdentifier: TabSignature] = [:]

    init(savedSignatures: [ObjectIdentifier: TabSignature] = [:], windowDirty: Bool = false) {
        self.savedSignatures = savedSignatures
        self.windowDirty = windowDirty
    }

    static let fresh = WindowPersistenceState(windowDirty: true)
}

/// What of a tab can change without its own notification: its opener and group.
struct TabSignature: Equatable {
    let opener: ObjectIdentifier?
    let navigationIndex: Int
    let group: ObjectIdentifier?
}
