import Foundation

/// The ordered tabs of one window, with the active tab, the pinned section and tab groups: Chromium's
/// `WebStateList` (spec §1–§5).
///
/// Indices are 0-based over the whole list, pinned tabs first (`[0, pinnedCount)`). Every mutator
/// checks its preconditions and throws ``ModelError`` without changing anything when one is broken;
/// then it changes the list and tells observers synchronously (the change types of spec §4). Calling a
/// mutator from inside an observer callback is a programming error (a precondition), as in Chromium.
public final class WebStateList {
    /// One slot of the list.
    final class Entry {
        let webState: WebState
        var opener: Opener? {
            didSet { openerKey = opener.map { ObjectIdentifier($0.webState) } }
        }
        /// The opener's identity, for scans that must not retain it.
        private(set) var openerKey: ObjectIdentifier?
        var group: TabGroup?
        /// Set by an inherit-opener insert: the opener is dropped when the active tab changes away.
        var resetOpenerOnActiveChange = false
        /// The entry's index when it was last numbered; true while it is below ``indexedPrefix``.
        var indexHint = 0

        init(_ webState: WebState) { self.webState = webState }
    }

    /// The tab that opened another, and the opener's last committed navigation index at that time.
    struct Opener {
        let webState: WebState
        let navigationIndex: Int
    }

    /// The slots in order. Every change to it calls ``invalidateIndexes(from:)`` with the first index
    /// it shifted or replaced.
    var entries: [Entry] = []
    /// How many leading entries have a true ``Entry/indexHint``: an index lookup is O(1) below it,
    /// and numbers the entries from it up to the one asked for otherwise (so after an insert or
    /// removal at index i, the next lookups renumber only from i, once).
    private var indexedPrefix = 0
    /// The entry of every tab in the list, by tab identity: constant-time membership, opener and group.
    private var members: [ObjectIdentifier: Entry] = [:]
    /// The same entries by tab id: a lookup by id hashes once, then finds the entry by identity.
    private var membersByID: [TabID: Entry] = [:]
    /// Each opener's children (the entries whose opener it is), so the tabs to clear when it leaves
    /// are found without scanning the list. Kept by ``assignOpener(_:to:)``, the one writer of openers.
    private var children: [ObjectIdentifier: [ObjectIdentifier: Entry]] = [:]

    /// Whether the opener-to-children index matches the entries (checked with the invariants).
    var childrenIndexIsConsistent: Bool {
        let withOpener = entries.filter { $0.openerKey != nil }
        return children.values.reduce(0) { $0 + $1.count } == withOpener.count
            && withOpener.allSatisfy { children[$0.openerKey!]?[ObjectIdentifier($0)] === $0 }
    }
    /// The active tab's index, −1 when none.
    public internal(set) var activeIndex = -1
    /// How many tabs are pinned; they occupy `[0, pinnedCount)`.
    public internal(set) var pinnedCount = 0
    /// The groups, in creation order.
    public internal(set) var groups: [TabGroup] = []
    /// The same groups by id (kept with `groups`: a group is found in O(1), so building a window of
    /// many groups costs what its tabs do).
    var groupsByID: [TabGroupID: TabGroup] = [:]
    /// Whether a batch operation is running.
    public private(set) var isBatchInProgress = false
    /// Whether a mutation is in progress (observers are being told).
    public private(set) var isMutating = false
    /// The most tabs this list holds.
    public let maxCount: Int
    private var observers: [WeakListObserver] = []
    /// Tabs still in the list whose opener the current mutation changed as a side effect (cleared
    /// because their opener left, an inherit-opener insert, or the active tab moving on) or on
    /// purpose (``setOpener(_:at:)``): each gets an `openerChange` once the mutation's own change is told.
    private var openerChanges: [WebState] = []

    /// Creates an empty list.
    /// - Parameter maxCount: the cap on tabs; inserts past it throw ``ModelError/limitReached(what:limit:)``.
    public init(maxCount: Int = ModelLimits().tabsPerWindow) {
        self.maxCount = maxCount
    }

    deinit {
        for box in observers { box.observer?.webStateListDestroyed(self) }
    }

    // MARK: Queries

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    public func containsIndex(_ index: Int) -> Bool { index >= 0 && index < entries.count }
    public var activeWebState: WebState? { activeIndex >= 0 ? entries[activeIndex].webState : nil }
    public var webStates: [WebState] { entries.map(\.webState) }

    public func webState(at index: Int) -> WebState? { containsIndex(index) ? entries[index].webState : nil }

    /// Whether `webState` is in this list.
    public func contains(_ webState: WebState) -> Bool { members[ObjectIdentifier(webState)] != nil }

    /// The opener of `webState` (in this list) and its navigation index then; O(1).
    public func opener(of webState: WebState) -> (webState: WebState, navigationIndex: Int)? {
        members[ObjectIdentifier(webState)]?.opener.map { ($0.webState, $0.navigationIndex) }
    }

    /// The group of `webState` (in this list); O(1).
    public func group(of webState: WebState) -> TabGroup? { members[ObjectIdentifier(webState)]?.group }

    /// The index of `webState`, or −1. O(1) unless the list shifted since the entry was last
    /// numbered (see ``indexedPrefix``).
    public func index(of webState: WebState) -> Int {
        guard let entry = members[ObjectIdentifier(webState)] else { return -1 }
        return position(of: entry)
    }

    /// The index of the tab with `id`, or −1 (a hash lookup, then as ``index(of:)``).
    public func index(ofTabWithID id: TabID) -> Int {
        guard let entry = membersByID[id] else { return -1 }
        return position(of: entry)
    }

    /// The index of `entry`, a member.
    private func position(of entry: Entry) -> Int {
        let hint = entry.indexHint
        if hint < indexedPrefix, entries[hint] === entry { return hint }
        var index = indexedPrefix
        while index < entries.count {
            let next = entries[index]
            next.indexHint = index
            index += 1
            if next === entry {
                indexedPrefix = index
                return index - 1
            }
        }
        indexedPrefix = entries.count
        // Not found after the prefix: only if a change to `entries` skipped `invalidateIndexes`.
        assertionFailure("entry \(entry.webState.id) is a member but was not found after the numbered prefix")
        return entries.firstIndex { $0 === entry } ?? -1
    }

    /// Marks the index hints from `index` on as stale (entries were inserted, removed, replaced or
    /// moved there).
    func invalidateIndexes(from index: Int) {
        if index < indexedPrefix { indexedPrefix = max(0, index) }
    }

    /// Whether every numbered entry's hint is its index (checked with the invariants).
    var indexHintsAreConsistent: Bool {
        indexedPrefix <= entries.count && (0..<indexedPrefix).allSatisfy { entries[$0].indexHint == $0 }
    }

    public func isPinned(at index: Int) -> Bool { index >= 0 && index < pinnedCount }
    public func group(at index: Int) -> TabGroup? { containsIndex(index) ? entries[index].group : nil }
    public func containsGroup(_ group: TabGroup) -> Bool { groups.contains { $0 === group } }
    public func group(withID id: TabGroupID) -> TabGroup? { groupsByID[id] }

    /// The opener of the tab at `index` and the opener's navigation index when it opened the tab.
    public func opener(at index: Int) -> (webState: WebState, navigationIndex: Int)? {
        guard containsIndex(index), let opener = entries[index].opener else { return nil }
        return (opener.webState, opener.navigationIndex)
    }

    // MARK: Observers

    public func addObserver(_ observer: any WebStateListObserver) {
        observers.removeAll { $0.observer == nil || $0.observer === observer }
        observers.append(WeakListObserver(observer: observer))
    }

    public func removeObserver(_ observer: any WebStateListObserver) {
        observers.removeAll { $0.observer == nil || $0.observer === observer }
    }

    func notifyDidChange(_ change: WebStateListChange, status: WebStateListStatus) {
        for box in observers { box.observer?.webStateListDidChange(self, change: change, status: status) }
    }

    /// Forwards a member's own change to the observers (``WebState`` calls it).
    func tabDidChange(_ webState: WebState, change: WebStateChange) {
        for box in observers { box.observer?.webStateList(self, tabDidChange: webState, change: change) }
    }

    func notifyWillDetach(_ change: DetachChange, status: WebStateListStatus) {
        for box in observers { box.observer?.webStateListWillChange(self, detach: change, status: status) }
    }

    func unchangedStatus() -> WebStateListStatus {
        WebStateListStatus(oldActive: activeWebState, newActive: activeWebState)
    }

    /// Runs a mutation under the lock that forbids re-entrant mutation from observers.
    func mutate<T>(_ body: () throws -> T) rethrows -> T {
        precondition(!isMutating, "WebStateList mutated from inside an observer callback")
        isMutating = true
        defer {
            notifyOpenerChanges()
            isMutating = false
        }
        return try body()
    }

    /// Sets `entry`'s opener, keeping the opener-to-children index.
    func assignOpener(_ opener: Opener?, to entry: Entry) {
        let child = ObjectIdentifier(entry)
        if let old = entry.openerKey {
            children[old]?[child] = nil
            if children[old]?.isEmpty == true { children[old] = nil }
        }
        entry.opener = opener
        if let new = entry.openerKey { children[new, default: [:]][child] = entry }
    }

    /// Drops `entry`'s opener, noting the change for observers when it had one.
    func dropOpener(of entry: Entry) {
        guard entry.opener != nil else { return }
        assignOpener(nil, to: entry)
        openerChanges.append(entry.webState)
    }

    /// Tells observers of every tab (still in the list) whose opener the mutation changed, once each.
    private func notifyOpenerChanges() {
        guard !openerChanges.isEmpty else { return }
        let changed = openerChanges
        openerChanges = []
        var told = Set<ObjectIdentifier>()
        var changes: [(index: Int, tab: WebState)] = []
        for tab in changed where told.insert(ObjectIdentifier(tab)).inserted {
            let index = index(of: tab)
            if index >= 0 { changes.append((index, tab)) }
        }
        // In list order, whatever order the openers were dropped in.
        for change in changes.sorted(by: { $0.index < $1.index }) {
            notifyDidChange(.openerChange(tab: change.tab, index: change.index), status: unchangedStatus())
        }
    }

    // MARK: Insert

    /// Makes room for `count` more tabs at once (a window restored from storage, tab by tab): no
    /// index grows and rehashes on the way. Changes nothing else and notifies nobody.
    public func reserveCapacity(forMore count: Int) {
        entries.reserveCapacity(entries.count + count)
        members.reserveCapacity(members.count + count)
        membersByID.reserveCapacity(membersByID.count + count)
    }

    /// Inserts a tab (spec §1 InsertWebState).
    ///
    /// Opener: `inheritOpener` clears every tab's opener and uses the active tab; the group is the
    /// requested one or else the opener's; pinned only if no group was deduced. Placement: the explicit
    /// index, else after the opener's last child (spec §2), clamped to the allowed range (the group, the
    /// pinned section or the regular section) by using its end. A tab inserted between two tabs of one
    /// group joins that group.
    /// - Returns: the index where the tab landed.
    /// - Throws: when the tab is already in the list, pinned and group are both asked, the group or
    ///   opener is not in this list, the index is outside `0…count`, or the list is full.
    /// - Observers: `insert(tab, index, group)` with the old and new active tab.
    @discardableResult
    public func insert(_ webState: WebState, _ params: InsertionParams = .automatic()) throws -> Int {
        guard !contains(webState) else { throw ModelError.tabAlreadyInList(webState.id) }
        guard entries.count < maxCount else { throw ModelError.limitReached(what: "tabs per window", limit: maxCount) }
        if params.pinned && params.group != nil {
            throw ModelError.groupInvariant("a tab cannot be inserted both pinned and in a group")
        }
        if let group = params.group, !containsGroup(group) { throw ModelError.groupNotFound(group.id) }
        if let opener = params.opener, !contains(opener) { throw ModelError.openerNotInList(opener.id) }
        if let index = params.index, index < 0 || index > entries.count {
            throw ModelError.indexOutOfRange(index: index, validRange: 0...entries.count)
        }
        return mutate {
            let oldActive = activeWebState
            var opener = params.opener.map { Opener(webState: $0, navigationIndex: $0.lastCommittedIndex) }
            if params.inheritOpener || params.forgetsOtherOpeners {
                for entry in children.values.flatMap(\.values) { dropOpener(of: entry) }
            }
            if params.inheritOpener {
                opener = activeWebState.map { Opener(webState: $0, navigationIndex: $0.lastCommittedIndex) }
            }
            var group = params.group
            if group == nil, let opener { group = entries[index(of: opener.webState)].group }
            let pinned = params.pinned && group == nil
            let allowed: ClosedRange<Int> =
                if let group { group.range.start...group.range.end } else if pinned { 0...pinnedCount } else { pinnedCount...entries.count }
            var target = params.index
            if target == nil, let opener { target = insertionIndex(forOpener: opener) }
            let index = target.flatMap { allowed.contains($0) ? $0 : nil } ?? allowed.upperBound

            if group == nil, index > 0, index < entries.count, let left = entries[index - 1].group,
                left === entries[index].group
            {
                group = left
            }
            let entry = Entry(webState)
            entry.group = group
            insertEntry(entry, at: index)
            members[ObjectIdentifier(webState)] = entry
            membersByID[webState.id] = entry
            webState.list = self
            if pinned { pinnedCount += 1 }
            if activeIndex >= index { activeIndex += 1 }
            if params.inheritOpener { entry.resetOpenerOnActiveChange = true }
            if params.activate { setActiveIndex(index) }
            if let opener {
                assignOpener(opener, to: entry)
                entry.resetOpenerOnActiveChange = false
            }
            notifyDidChange(
                .insert(tab: webState, index: index, group: entry.group),
                status: WebStateListStatus(oldActive: oldActive, newActive: activeWebState))
            return index
        }
    }

    // MARK: Activate

    /// Makes the tab at `index` active, or none with −1 (spec §1 ActivateWebStateAt).
    /// - Throws: when `index` is neither −1 nor in the list.
    /// - Observers: `statusOnly(tab, index)` with old ≠ new active; nothing when already active.
    public func activate(at index: Int) throws {
        guard index == -1 || containsIndex(index) else {
            throw ModelError.indexOutOfRange(index: index, validRange: entries.isEmpty ? nil : 0...(entries.count - 1))
        }
        guard index != activeIndex else { return }
        mutate {
            let oldActive = activeWebState
            setActiveIndex(index)
            let tab = activeWebState
            let group = index >= 0 ? entries[index].group : nil
            notifyDidChange(
                .statusOnly(tab: tab, index: index, pinnedStateChanged: false, oldGroup: group, newGroup: group),
                status: WebStateListStatus(oldActive: oldActive, newActive: tab))
        }
    }

    /// Changes the active index, dropping the previous active tab's opener if its reset flag is set.
    func setActiveIndex(_ index: Int) {
        guard index != activeIndex else { return }
        if activeIndex >= 0, entries[activeIndex].resetOpenerOnActiveChange {
            dropOpener(of: entries[activeIndex])
            entries[activeIndex].resetOpenerOnActiveChange = false
        }
        activeIndex = index
        if index >= 0 { entries[index].webState.markActive() }
    }

    // MARK: Move

    /// Moves a tab (spec §1 MoveWebStateAt).
    ///
    /// `to` is clamped to the tab's section; the tab stays in its group if the group contains `to`,
    /// else joins a group whose tabs are on both sides of the destination, else is ungrouped. The
    /// active tab never changes.
    /// - Throws: when `from` or `to` is not an index of the list.
    /// - Observers: `move` if the index changed; `statusOnly` if only the group did; then `groupDelete`
    ///   for a group left empty; nothing when nothing changed.
    public func move(from: Int, to: Int) throws {
        guard containsIndex(from) else { throw outOfRange(from) }
        guard containsIndex(to) else { throw outOfRange(to) }
        mutate {
            let pinned = from < pinnedCount
            let destination = pinned ? min(max(to, 0), pinnedCount - 1) : min(max(to, pinnedCount), entries.count - 1)
            let entry = entries[from]
            let oldGroup = entry.group
            var newGroup: TabGroup?
            if let oldGroup, oldGroup.range.contains(destination) {
                newGroup = oldGroup
            } else if destination != from {
                let (left, right) = destination > from ? (destination, destination + 1) : (destination - 1, destination)
                if let a = group(at: left), a === group(at: right) { newGroup = a }
            }
            guard destination != from || oldGroup !== newGroup else { return }
            relocate(from: from, to: destination, group: newGroup)
            notifyRelocated(entry.webState, from: from, to: destination, pinnedStateChanged: false, oldGroup: oldGroup, newGroup: newGroup)
        }
    }

    /// Inserts an entry at `index`, keeping group ranges: its group grows by one and every other group
    /// starting at or after `index` shifts right. Membership and the pinned count are the caller's.
    func insertEntry(_ entry: Entry, at index: Int) {
        entries.insert(entry, at: index)
        invalidateIndexes(from: index)
        for group in groups {
            if group === entry.group {
                if group.range.count == 0 { group.range.start = index }
                group.range.count += 1
            } else if group.range.start >= index {
                group.range.start += 1
            }
        }
    }

    /// Removes the entry at `index`, keeping group ranges: its group shrinks by one and every other
    /// group starting after `index` shifts left.
    @discardableResult
    func removeEntry(at index: Int) -> Entry {
        let entry = entries.remove(at: index)
        invalidateIndexes(from: index)
        for group in groups {
            if group === entry.group {
                group.range.count -= 1
            } else if group.range.start > index {
                group.range.start -= 1
            }
        }
        return entry
    }

    /// Moves an entry to `to` (its index once moved) with `group` as its new group, and keeps the
    /// active index on the same tab.
    func relocate(from: Int, to: Int, group: TabGroup?) {
        if from == to {
            // Only its group changes: no entry moves, so no other group's range does (what removing and
            // inserting it again would leave, in O(1) instead of a pass over every group).
            let entry = entries[from]
            guard entry.group !== group else { return }
            if let old = entry.group {
                old.range.count -= 1
                if old.range.start == from { old.range.start += 1 }
            }
            if let group {
                if group.range.count == 0 || group.range.start > from { group.range.start = from }
                group.range.count += 1
            }
            entry.group = group
            return
        }
        let entry = removeEntry(at: from)
        entry.group = group
        insertEntry(entry, at: to)
        if activeIndex == from {
            activeIndex = to
        } else if from < activeIndex && activeIndex <= to {
            activeIndex -= 1
        } else if to <= activeIndex && activeIndex < from {
            activeIndex += 1
        }
    }

    // MARK: Replace

    /// Puts `webState` in the slot at `index` (spec §1 ReplaceWebStateAt); group and pinned state stay.
    /// Every opener pointing at the old tab is cleared, and so is the slot's own opener.
    /// - Returns: the replaced tab.
    /// - Throws: when `index` is not in the list or `webState` already is.
    /// - Observers: `replace(replaced, inserted, index)`; the status reports an active change when the
    ///   slot was active.
    @discardableResult
    public func replace(at index: Int, with webState: WebState) throws -> WebState {
        guard containsIndex(index) else { throw outOfRange(index) }
        guard !contains(webState) else { throw ModelError.tabAlreadyInList(webState.id) }
        return mutate {
            let old = entries[index]
            members[ObjectIdentifier(old.webState)] = nil
            membersByID[old.webState.id] = nil
            old.webState.list = nil
            let oldActive = activeWebState
            clearOpeners(pointingAt: old.webState)
            assignOpener(nil, to: old)
            let entry = Entry(webState)
            entry.group = old.group
            members[ObjectIdentifier(webState)] = entry
            membersByID[webState.id] = entry
            webState.list = self
            entries[index] = entry
            invalidateIndexes(from: index)
            if activeIndex == index { webState.markActive() }
            notifyDidChange(
                .replace(replaced: old.webState, inserted: webState, index: index),
                status: WebStateListStatus(oldActive: oldActive, newActive: activeWebState))
            return old.webState
        }
    }

    // MARK: Detach and close

    /// Removes the tab at `index` without closing it (e.g. to move it to another window).
    /// - Throws: when `index` is not in the list.
    /// - Observers: `webStateListWillChange(detach)` with the predicted new active tab, then
    ///   `detach(…, isClosing: false)`, then `groupDelete` if its group became empty.
    @discardableResult
    public func detach(at index: Int) throws -> WebState {
        guard containsIndex(index) else { throw outOfRange(index) }
        return mutate { removeEntries(at: [index], closing: false, flags: [])[0] }
    }

    /// Removes several tabs without closing them, in a batch (`TabsCloser` parks them so one call can
    /// bring them back): as ``close(atIndices:flags:)`` with `isClosing` false.
    /// - Returns: the detached tabs, highest index first.
    /// - Throws: when an index is not in the list (nothing is detached then).
    @discardableResult
    public func detachAll(atIndices indices: Set<Int>) throws -> [WebState] {
        for index in indices where !containsIndex(index) { throw outOfRange(index) }
        return try performBatch { list in
            indices.isEmpty ? [] : list.mutate { list.removeEntries(at: indices, closing: false, flags: []) }
        }
    }

    /// Closes the tab at `index` (a detach with `isClosing`). A single close is not a batch.
    /// - Throws: when `index` is not in the list; ``ModelError/historiesNotLoaded(_:)`` when the tab is
    ///   unrealized, unless `flags` has `.tabsCleanup` (a closed tab is remembered with its history).
    ///   Nothing is closed then.
    @discardableResult
    public func close(at index: Int, flags: CloseFlags = []) throws -> WebState {
        guard containsIndex(index) else { throw outOfRange(index) }
        if !flags.contains(.tabsCleanup) { try WebState.requireHistories(of: [entries[index].webState]) }
        return mutate { removeEntries(at: [index], closing: true, flags: flags)[0] }
    }

    /// Closes several tabs: the new active tab is chosen once for the whole set (spec §2), tabs are
    /// detached from the highest index down, and exactly one active change is reported.
    /// - Returns: the closed tabs, highest index first.
    /// - Throws: when an index is not in the list; ``ModelError/historiesNotLoaded(_:)`` naming every
    ///   unrealized tab among them, unless `flags` has `.tabsCleanup`. Nothing is closed then.
    @discardableResult
    public func close(atIndices indices: Set<Int>, flags: CloseFlags = []) throws -> [WebState] {
        for index in indices where !containsIndex(index) { throw outOfRange(index) }
        guard !indices.isEmpty else { return [] }
        if !flags.contains(.tabsCleanup) { try WebState.requireHistories(of: indices.map { entries[$0].webState }) }
        return mutate { removeEntries(at: indices, closing: true, flags: flags) }
    }

    /// Closes every tab, in a batch.
    @discardableResult
    public func closeAll(flags: CloseFlags = []) throws -> [WebState] {
        if !flags.contains(.tabsCleanup) { try WebState.requireHistories(of: entries.lazy.map(\.webState)) }
        return try performBatch { list in try list.close(atIndices: Set(list.entries.indices), flags: flags) }
    }

    /// Closes every tab that is not pinned, in a batch.
    @discardableResult
    public func closeAllNonPinned(flags: CloseFlags = []) throws -> [WebState] {
        if !flags.contains(.tabsCleanup) { try WebState.requireHistories(of: entries[pinnedCount...].lazy.map(\.webState)) }
        return try performBatch { list in try list.close(atIndices: Set(list.pinnedCount..<list.entries.count), flags: flags) }
    }

    /// Closes every tab except the one at `keepIndex` and the pinned ones, in a batch.
    /// - Throws: when `keepIndex` is not in the list.
    @discardableResult
    public func closeOthers(keeping keepIndex: Int, flags: CloseFlags = []) throws -> [WebState] {
        guard containsIndex(keepIndex) else { throw outOfRange(keepIndex) }
        if !flags.contains(.tabsCleanup) {
            try WebState.requireHistories(of: (pinnedCount..<entries.count).lazy.filter { $0 != keepIndex }.map { self.entries[$0].webState })
        }
        return try performBatch { list in
            try list.close(atIndices: Set((list.pinnedCount..<list.entries.count).filter { $0 != keepIndex }), flags: flags)
        }
    }

    /// Closes every tab of `group`, in a batch.
    @discardableResult
    public func closeAll(in group: TabGroup, flags: CloseFlags = []) throws -> [WebState] {
        guard containsGroup(group) else { throw ModelError.groupNotFound(group.id) }
        if !flags.contains(.tabsCleanup) {
            try WebState.requireHistories(of: entries[group.range.start..<group.range.end].lazy.map(\.webState))
        }
        return try performBatch { list in
            try list.close(atIndices: Set(group.range.start..<group.range.end), flags: flags)
        }
    }

    /// Removes entries; the caller holds the mutation lock. The new active tab is chosen once.
    private func removeEntries(at indices: Set<Int>, closing: Bool, flags: CloseFlags) -> [WebState] {
        let newActivePre = newActiveIndex(removing: indices)
        let target = newActivePre.map { entries[$0].webState }
        var removedBelowTarget = 0
        var removed: [WebState] = []
        for index in indices.sorted(by: >) {
            if let pre = newActivePre, index < pre { removedBelowTarget += 1 }
            let entry = entries[index]
            let group = entry.group
            let wasActive = index == activeIndex
            let oldActive = activeWebState
            let change = DetachChange(
                tab: entry.webState, fromIndex: index, isClosing: closing,
                isUserAction: flags.contains(.userAction), isTabsCleanup: flags.contains(.tabsCleanup),
                group: group)
            notifyWillDetach(change, status: WebStateListStatus(oldActive: oldActive, newActive: wasActive ? target : oldActive))
            clearOpeners(pointingAt: entry.webState)
            removeEntry(at: index)
            assignOpener(nil, to: entry)
            entry.group = nil
            members[ObjectIdentifier(entry.webState)] = nil
            membersByID[entry.webState.id] = nil
            entry.webState.list = nil
            if index < pinnedCount { pinnedCount -= 1 }
            if wasActive {
                activeIndex = -1
                if let target, let pre = newActivePre {
                    // Removal runs from the highest index down, so the target has moved left by the
                    // number of removed indices below it so far.
                    activeIndex = pre - removedBelowTarget
                    target.markActive()
                }
            } else if activeIndex > index {
                activeIndex -= 1
            }
            notifyDidChange(.detach(change), status: WebStateListStatus(oldActive: oldActive, newActive: activeWebState))
            deleteGroupIfEmpty(group)
            removed.append(entry.webState)
        }
        return removed
    }

    // MARK: Pin and opener

    /// Pins or unpins the tab at `index` (spec §1 SetWebStatePinnedAt). Pinning moves it to the end of
    /// the pinned section and out of its group; unpinning moves it to the end of the list.
    /// - Returns: the tab's new index.
    /// - Observers: `move(pinnedStateChanged: true)` if the index changed, else `statusOnly`; then
    ///   `groupDelete` for a group left empty. Nothing when the state is already so.
    @discardableResult
    public func setPinned(_ pinned: Bool, at index: Int) throws -> Int {
        guard containsIndex(index) else { throw outOfRange(index) }
        guard pinned != isPinned(at: index) else { return index }
        return mutate {
            let entry = entries[index]
            let oldGroup = entry.group
            let destination: Int
            if pinned {
                destination = pinnedCount
                pinnedCount += 1
            } else {
                destination = entries.count - 1
                pinnedCount -= 1
            }
            relocate(from: index, to: destination, group: nil)
            notifyRelocated(entry.webState, from: index, to: destination, pinnedStateChanged: true, oldGroup: oldGroup, newGroup: nil)
            return destination
        }
    }

    /// Sets (or with nil clears) the opener of the tab at `index`, recording the opener's current
    /// navigation index.
    /// - Observers: `openerChange(tab, index)` when the opener (or its navigation index) changed;
    ///   nothing when it is already so.
    /// - Throws: when `index` is not in the list or the opener is not in this list.
    public func setOpener(_ opener: WebState?, at index: Int) throws {
        guard containsIndex(index) else { throw outOfRange(index) }
        if let opener, !contains(opener) { throw ModelError.openerNotInList(opener.id) }
        if let opener, opener === entries[index].webState {
            throw ModelError.invalidArgument("a tab cannot be its own opener")
        }
        let new = opener.map { Opener(webState: $0, navigationIndex: $0.lastCommittedIndex) }
        let old = entries[index].opener
        guard old?.webState !== new?.webState || old?.navigationIndex != new?.navigationIndex else {
            entries[index].resetOpenerOnActiveChange = false
            return
        }
        mutate {
            assignOpener(new, to: entries[index])
            entries[index].resetOpenerOnActiveChange = false
            openerChanges.append(entries[index].webState)
        }
    }

    /// Restores an opener exactly as saved, with the opener's navigation index at the time it opened
    /// the tab (session restore; spec §8). No notification.
    /// - Throws: when `index` or the opener is not in this list.
    public func restoreOpener(_ opener: WebState, navigationIndex: Int, at index: Int) throws {
        guard containsIndex(index) else { throw outOfRange(index) }
        guard contains(opener), opener !== entries[index].webState else { throw ModelError.openerNotInList(opener.id) }
        assignOpener(Opener(webState: opener, navigationIndex: navigationIndex), to: entries[index])
    }

    /// Clears the opener of every child of `webState`: O(children).
    func clearOpeners(pointingAt webState: WebState) {
        guard let entries = children[ObjectIdentifier(webState)]?.values else { return }
        for entry in Array(entries) { dropOpener(of: entry) }
    }

    // MARK: Batch

    /// Runs `body` as one batch: observers get `willBeginBatch` before and `batchEnded` after, even
    /// when nothing changes or `body` throws.
    /// - Throws: ``ModelError/batchInProgress`` when called inside another batch, or what `body` throws.
    public func performBatch<T>(_ body: (WebStateList) throws -> T) throws -> T {
        guard !isBatchInProgress else { throw ModelError.batchInProgress }
        precondition(!isMutating, "WebStateList batch started from inside an observer callback")
        isBatchInProgress = true
        isMutating = true
        for box in observers { box.observer?.webStateListWillBeginBatch(self) }
        isMutating = false
        defer {
            isBatchInProgress = false
            isMutating = true
            for box in observers { box.observer?.webStateListBatchEnded(self) }
            isMutating = false
        }
        return try body(self)
    }

    // MARK: Helpers

    func outOfRange(_ index: Int) -> ModelError {
        .indexOutOfRange(index: index, validRange: entries.isEmpty ? nil : 0...(entries.count - 1))
    }
}

struct WeakListObserver {
    weak var observer: (any WebStateListObserver)?
}
