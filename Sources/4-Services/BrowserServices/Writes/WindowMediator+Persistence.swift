import BrowserModel
import BrowserRecords

// What of a window must be written: its list-level row whenever anything changed, the tabs that
// changed, and the tabs that left it. Incognito windows are never written.
extension WindowMediator {
    /// Records what a list change makes to write, from the change alone (no scan of the window):
    /// the window row always; a tab's row when it joins, when its group, pinned state or opener
    /// changes, and when it becomes active (its last-active time); a tab that leaves is deleted.
    func noteChange(_ change: WebStateListChange, status: WebStateListStatus) {
        persistence.windowDirty = true
        switch change {
        case .insert, .detach, .replace, .move, .groupCreate, .groupVisualDataUpdate, .groupMove, .groupDelete:
            persistence.layoutDirty = true
        case .statusOnly, .openerChange:
            break
        }
        switch change {
        case .insert(let tab, _, _): persistence.mark(tab)
        case .detach(let detach): persistence.remove(detach.tab)
        case .replace(let replaced, let inserted, _):
            persistence.remove(replaced)
            persistence.mark(inserted)
        case .move:
            break  // its new position marks its row (WindowMediator.place)
        case .statusOnly(let tab, _, let pinnedChanged, let oldGroup, let newGroup):
            if let tab, pinnedChanged || oldGroup !== newGroup { persistence.mark(tab) }
        case .openerChange(let tab, _): persistence.mark(tab)
        case .groupCreate, .groupVisualDataUpdate, .groupMove, .groupDelete: break
        }
        if status.activeChanged, let active = status.newActive { persistence.mark(active) }
    }

    /// Adds this window's pending writes to `change` and starts clean: O(tabs written), plus the
    /// window row (its tab order). An incognito window adds nothing, unless `offTheRecord`: then what it
    /// would write, to be measured and never stored (``ProfileMediator/offTheRecordBytes``).
    func collectChanges(into change: inout ChangeSet, offTheRecord: Bool = false) {
        guard !browser.isIncognito || offTheRecord else { return }
        let state = persistence
        // A window nothing happened to is skipped (this runs for every touched window).
        guard state.windowDirty || !state.dirtyTabs.isEmpty || !state.removedTabs.isEmpty || !state.dirtySnapshots.isEmpty else { return }
        let list = self.list
        if state.layoutDirty {
            change.windows.append(windowRecord())
        } else {
            change.windowHeaders.append(
                WindowHeaderRecord(
                    id: browser.id.rawValue, version: version, activeIndex: list.activeIndex,
                    pinnedCount: list.pinnedCount, lastActiveAt: browser.lastActiveAt))
        }
        change.deletedTabs += state.removedTabs.map(\.rawValue).sorted()
        for (_, tab) in state.dirtyTabs.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where list.contains(tab) {
            change.tabs.append((browser.id.rawValue, tabRecord(of: tab)))
        }
        for (_, tab) in state.dirtySnapshots.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where list.contains(tab) {
            guard let snapshot = tab.snapshot, let bytes = snapshot.bytes else { continue }
            change.snapshots.append(
                SnapshotRecord(
                    tabID: tab.id.rawValue, etag: snapshot.etag, mediaType: snapshot.mediaType, byteCount: snapshot.byteCount,
                    capturedAt: snapshot.capturedAt, bytes: bytes))
        }
        persistence = WindowPersistenceState()
    }

    /// A window just opened: its row is to be written with the operation that opened it.
    func markNew() {
        persistence.windowDirty = true
        persistence.layoutDirty = true
        touches.touch(browser)
    }

    /// Marks everything as written (after a restore or a rollback), without building records.
    func markPersisted() {
        persistence = WindowPersistenceState()
    }

    /// The window's row. Its order is in its tabs' positions, so a record to write leaves `tabOrder`
    /// empty; `includingOrder` fills it (to compare with what a read of the disk gives).
    func windowRecord(includingOrder: Bool = false) -> WindowRecord {
        let list = self.list
        return WindowRecord(
            id: browser.id.rawValue, profileID: browser.browserState.id.rawValue, version: version,
            tabOrder: includingOrder ? list.webStates.map(\.id.rawValue) : [], activeIndex: list.activeIndex, pinnedCount: list.pinnedCount,
            groups: list.groups.sorted { $0.range.start < $1.range.start }.map {
                GroupRecord(
                    id: $0.id.rawValue, title: $0.visualData.title, color: $0.visualData.color.rawValue,
                    collapsed: $0.visualData.collapsed)
            },
            createdAt: browser.createdAt, lastActiveAt: browser.lastActiveAt)
    }

    func tabRecord(at index: Int) -> TabRecord { tabRecord(of: list.webState(at: index)!) }

    /// The row of a tab of this window; O(history window), whatever the window's size. An unrealized
    /// tab's row carries its summary and no history (``TabRecord/summary``): the store keeps the history
    /// it holds, which is the tab's (an unrealized tab's history never changed in memory).
    func tabRecord(of tab: WebState) -> TabRecord {
        let opener = list.opener(of: tab)
        var record = TabRecord(
            id: tab.id.rawValue, groupID: list.group(of: tab)?.id.rawValue, openerID: opener?.webState.id.rawValue,
            openerNavigationIndex: opener?.navigationIndex, title: tab.title, loading: tab.isLoading, progress: tab.progress,
            faviconURL: tab.faviconURL, createdAt: tab.createdAt, lastActiveAt: tab.lastActiveAt, historyIndex: tab.lastCommittedIndex,
            history: [], position: position(of: tab))
        if let metadata = tab.metadata {
            record.summary = HistorySummary(visibleURL: metadata.visibleURL, count: metadata.count, byteCount: metadata.byteCount)
        } else if let (items, current) = try? tab.history.sessionWindow() {
            record.historyIndex = current
            record.history = items.map {
                HistoryEntryRecord(url: $0.url, title: $0.title, transition: $0.transition.rawValue, timestamp: $0.timestamp)
            }
        }
        return record
    }
}

/// A window's writes not yet collected.
struct WindowPersistenceState {
    /// The window row: its header (version, active tab, …) on any change ...
    var windowDirty = false
    /// ... and its tab order and groups when they changed.
    var layoutDirty = false
    /// Tabs whose row must be written, by id.
    var dirtyTabs: [TabID: WebState] = [:]
    /// Tabs that left the window (their rows are deleted unless another window writes them again).
    var removedTabs: Set<TabID> = []
    /// Tabs whose page picture must be written.
    var dirtySnapshots: [TabID: WebState] = [:]

    mutating func mark(_ tab: WebState) {
        dirtyTabs[tab.id] = tab
        removedTabs.remove(tab.id)
    }

    mutating func markSnapshot(_ tab: WebState) {
        dirtySnapshots[tab.id] = tab
    }

    mutating func remove(_ tab: WebState) {
        dirtyTabs[tab.id] = nil
        dirtySnapshots[tab.id] = nil
        removedTabs.insert(tab.id)
    }

    /// A new window: its row is written.
    static var fresh: WindowPersistenceState {
        var state = WindowPersistenceState()
        state.windowDirty = true
        state.layoutDirty = true
        return state
    }
}
