// Tab groups (spec §3): create, move tabs in and out, move, delete, update visual data.
extension WebStateList {
    /// Creates a group from the tabs at `indices` (spec §3 CreateGroup).
    ///
    /// The group starts empty at a pivot — the end of the pinned section if the first tab is pinned,
    /// the end of the first tab's group if it is grouped but not that group's first tab, else the first
    /// index — then the tabs are moved into it in order. Pinned tabs are unpinned and tabs are taken
    /// from other groups; the active tab does not change.
    /// - Parameters:
    ///   - visualData: title, colour and collapsed state; nil picks the default colour (spec §3).
    ///   - id: the group's id (a fresh one unless restoring).
    /// - Throws: when `indices` is empty or holds an index not in the list, or the id exists.
    /// - Observers: `groupCreate`, then a `move` or `statusOnly` per tab, then `groupDelete` for any
    ///   group left empty.
    @discardableResult
    public func createGroup(indices: Set<Int>, visualData: TabGroupVisualData? = nil, id: TabGroupID = .make()) throws -> TabGroup {
        guard !indices.isEmpty else { throw ModelError.invalidArgument("a group needs at least one tab") }
        for index in indices where !containsIndex(index) { throw outOfRange(index) }
        guard group(withID: id) == nil else { throw ModelError.groupAlreadyExists(id) }
        let data = visualData ?? TabGroupVisualData(color: TabGroupColor.next(after: groups.map(\.visualData.color)))
        return mutate {
            let first = indices.min()!
            var pivot = first
            if first < pinnedCount {
                pivot = pinnedCount
            } else if let pivotGroup = entries[first].group, pivotGroup.range.start != first {
                pivot = pivotGroup.range.end
            }
            let group = TabGroup(id: id, visualData: data, range: TabGroupRange(start: pivot, count: 0))
            groups.append(group)
            groupsByID[group.id] = group
            notifyDidChange(.groupCreate(group: group), status: unchangedStatus())
            moveToGroupLocked(indices: indices, group: group)
            return group
        }
    }

    /// Moves the tabs at `indices` into `group` (spec §3 MoveToGroup): tabs left of the group are
    /// appended to its end in their order, then the tabs right of it; tabs already in it stay.
    /// - Throws: when an index is not in the list or the group is not in this list.
    /// - Observers: a `move` (or `statusOnly` when the index did not change) per tab that joins, and
    ///   `groupDelete` for groups left empty.
    public func moveToGroup(indices: Set<Int>, group: TabGroup) throws {
        for index in indices where !containsIndex(index) { throw outOfRange(index) }
        guard containsGroup(group) else { throw ModelError.groupNotFound(group.id) }
        mutate { moveToGroupLocked(indices: indices, group: group) }
    }

    private func moveToGroupLocked(indices: Set<Int>, group: TabGroup) {
        let joining = indices.sorted().map { entries[$0] }.filter { $0.group !== group }
        for entry in joining {
            let from = index(of: entry.webState)
            let oldGroup = entry.group
            let wasPinned = from < pinnedCount
            // Where the tab lands once it is out of its slot: right after the group's last member.
            let destination = from < group.range.start ? group.range.end - 1 : group.range.end
            if wasPinned { pinnedCount -= 1 }
            relocate(from: from, to: destination, group: group)
            notifyRelocated(entry.webState, from: from, to: destination, pinnedStateChanged: wasPinned, oldGroup: oldGroup, newGroup: group)
        }
    }

    /// Takes the tabs at `indices` out of their groups (spec §3 RemoveFromGroups): highest index first,
    /// each grouped tab moves to its group's last slot and leaves, so it ends just after the group.
    /// Ungrouped and pinned tabs are left alone.
    /// - Observers: a `move` or `statusOnly` per grouped tab, then `groupDelete` for emptied groups.
    public func removeFromGroups(indices: Set<Int>) throws {
        for index in indices where !containsIndex(index) { throw outOfRange(index) }
        mutate {
            for index in indices.sorted(by: >) {
                let entry = entries[index]
                guard let group = entry.group else { continue }
                let destination = group.range.end - 1
                relocate(from: index, to: destination, group: nil)
                notifyRelocated(entry.webState, from: index, to: destination, pinnedStateChanged: false, oldGroup: group, newGroup: nil)
            }
        }
    }

    /// Moves a whole group before the tab at `beforeIndex` (spec §3 MoveGroup): the target is clamped to
    /// the regular section, snaps to the start of a group it points into, and moving right subtracts the
    /// group's size. The active tab stays active.
    /// - Throws: when the group is not in this list or `beforeIndex` is outside `0…count`.
    /// - Observers: one `groupMove(group, fromRange, toRange)`, no per-tab changes; nothing when the
    ///   group would not move.
    public func moveGroup(_ group: TabGroup, before beforeIndex: Int) throws {
        guard containsGroup(group) else { throw ModelError.groupNotFound(group.id) }
        guard beforeIndex >= 0 && beforeIndex <= entries.count else {
            throw ModelError.indexOutOfRange(index: beforeIndex, validRange: 0...entries.count)
        }
        var target = min(max(beforeIndex, pinnedCount), entries.count)
        if target < entries.count, let pointed = entries[target].group {
            if pointed === group { return }
            target = pointed.range.start
        }
        let from = group.range
        let start = target > from.start ? target - from.count : target
        guard start != from.start else { return }
        mutate {
            let active = activeWebState
            let block = Array(entries[from.start..<from.end])
            entries.removeSubrange(from.start..<from.end)
            entries.insert(contentsOf: block, at: start)
            invalidateIndexes(from: min(from.start, start))
            if let active { activeIndex = index(of: active) }
            // Groups between the old and new place shift by the moved group's size.
            for other in groups where other !== group {
                if start < from.start, other.range.start >= start, other.range.start < from.start {
                    other.range.start += from.count
                } else if start > from.start, other.range.start >= from.end, other.range.start < start + from.count {
                    other.range.start -= from.count
                }
            }
            group.range.start = start
            notifyDidChange(.groupMove(group: group, fromRange: from, toRange: group.range), status: unchangedStatus())
        }
    }

    /// Deletes a group and keeps its tabs in place, ungrouped (spec §3 DeleteGroup).
    /// - Observers: `statusOnly(old group → none)` per tab, then `groupDelete`.
    public func deleteGroup(_ group: TabGroup) throws {
        guard containsGroup(group) else { throw ModelError.groupNotFound(group.id) }
        mutate {
            for index in group.range.start..<group.range.end {
                entries[index].group = nil
                notifyDidChange(
                    .statusOnly(
                        tab: entries[index].webState, index: index, pinnedStateChanged: false,
                        oldGroup: group, newGroup: nil), status: unchangedStatus())
            }
            group.range.count = 0
            deleteGroupIfEmpty(group)
        }
    }

    /// Changes a group's title, colour or collapsed state.
    /// - Returns: whether anything changed (identical data, collapsed included, changes nothing).
    /// - Observers: `groupVisualDataUpdate(group, oldVisualData)` when something changed.
    @discardableResult
    public func updateVisualData(of group: TabGroup, to data: TabGroupVisualData) throws -> Bool {
        guard containsGroup(group) else { throw ModelError.groupNotFound(group.id) }
        guard group.visualData != data else { return false }
        mutate {
            let old = group.visualData
            group.visualData = data
            notifyDidChange(.groupVisualDataUpdate(group: group, oldVisualData: old), status: unchangedStatus())
        }
        return true
    }

    // MARK: Bookkeeping

    /// Tells observers a tab was relocated: `move` when its index changed, else `statusOnly`; then
    /// deletes `oldGroup` if the tab left it empty.
    func notifyRelocated(_ tab: WebState, from: Int, to: Int, pinnedStateChanged: Bool, oldGroup: TabGroup?, newGroup: TabGroup?) {
        if from != to {
            notifyDidChange(
                .move(
                    tab: tab, from: from, to: to, pinnedStateChanged: pinnedStateChanged,
                    oldGroup: oldGroup, newGroup: newGroup), status: unchangedStatus())
        } else {
            notifyDidChange(
                .statusOnly(
                    tab: tab, index: from, pinnedStateChanged: pinnedStateChanged,
                    oldGroup: oldGroup, newGroup: newGroup), status: unchangedStatus())
        }
        deleteGroupIfEmpty(oldGroup)
    }

    /// Deletes `group` if it has no tabs left, telling observers.
    func deleteGroupIfEmpty(_ group: TabGroup?) {
        guard let group, group.range.count == 0, let position = groups.firstIndex(where: { $0 === group }) else { return }
        groups.remove(at: position)
        groupsByID[group.id] = nil
        notifyDidChange(.groupDelete(group: group), status: unchangedStatus())
    }
}
