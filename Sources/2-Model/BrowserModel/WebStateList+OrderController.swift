// Chromium's OrderController (spec §2): where an opened tab goes, and which tab becomes active when
// tabs are removed.
extension WebStateList {
    /// After the opener's last child (scanning circularly from the opener + 1 and taking the last
    /// match), where a child is a tab opened by it at its current navigation index; else opener + 1.
    /// The caller clamps the result into the allowed range.
    func insertionIndex(forOpener opener: Opener) -> Int {
        let openerIndex = index(of: opener.webState)
        let n = entries.count
        var lastChild = -1
        let key = ObjectIdentifier(opener.webState)
        let navigationIndex = opener.webState.lastCommittedIndex
        for step in 1..<max(n, 1) {
            let i = (openerIndex + step) % n
            if entries[i].openerKey == key, entries[i].opener?.navigationIndex == navigationIndex {
                lastChild = i
            }
        }
        return lastChild >= 0 ? lastChild + 1 : openerIndex + 1
    }

    /// The tab to activate when `removing` go, as a pre-removal index (nil = none):
    /// no active tab → none; all removed → none; active stays → it; else the first surviving child of
    /// the active tab; else a surviving sibling, else the surviving opener; if all removed tabs are in
    /// one group, the nearest survivor in it (right first); then the nearest survivor of the active
    /// tab's section not in a collapsed group, then any in that section, then the other section.
    func newActiveIndex(removing indices: Set<Int>) -> Int? {
        let removing = RemovingIndexes(indices)
        guard activeIndex >= 0, removing.count < entries.count else { return nil }
        guard removing.contains(activeIndex) else { return activeIndex }
        let active = entries[activeIndex]
        let n = entries.count

        func firstSurvivor(openedBy opener: WebState, excluding: WebState? = nil) -> Int? {
            let key = ObjectIdentifier(opener)
            for step in 1..<n {
                let i = (activeIndex + step) % n
                guard entries[i].openerKey == key, !removing.contains(i) else { continue }
                if entries[i].webState !== excluding { return i }
            }
            return nil
        }

        if let child = firstSurvivor(openedBy: active.webState) { return child }
        if let opener = active.opener {
            if let sibling = firstSurvivor(openedBy: opener.webState, excluding: active.webState) { return sibling }
            let openerIndex = index(of: opener.webState)
            if openerIndex >= 0 && !removing.contains(openerIndex) { return openerIndex }
        }
        if let group = entries[removing.first!].group, group === entries[removing.last!].group {
            for i in (activeIndex + 1)..<group.range.end where !removing.contains(i) { return i }
            for i in stride(from: activeIndex - 1, through: group.range.start, by: -1) where !removing.contains(i) { return i }
        }
        let section = activeIndex < pinnedCount ? 0..<pinnedCount : pinnedCount..<n
        func nearest(in range: Range<Int>, allowCollapsed: Bool) -> Int? {
            func eligible(_ i: Int) -> Bool {
                !removing.contains(i) && (allowCollapsed || !(entries[i].group?.visualData.collapsed ?? false))
            }
            for i in (activeIndex + 1)..<max(activeIndex + 1, range.upperBound) where eligible(i) { return i }
            for i in stride(from: activeIndex - 1, through: range.lowerBound, by: -1) where eligible(i) { return i }
            return nil
        }
        if let i = nearest(in: section, allowCollapsed: false) { return i }
        if let i = nearest(in: section, allowCollapsed: true) { return i }
        return nearest(in: 0..<n, allowCollapsed: true)
    }
}
