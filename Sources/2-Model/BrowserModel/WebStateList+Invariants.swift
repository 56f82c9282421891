extension WebStateList {
    /// Every broken invariant, described; empty when the list is sound. For tests and debug checks.
    ///
    /// Invariants: the active index is −1 or a tab's; pinned tabs come first and are never grouped;
    /// groups are non-empty, contiguous, in the regular section, and their ranges match their members;
    /// openers point at tabs of this list; no tab appears twice.
    public func invariantViolations() -> [String] {
        var problems: [String] = []
        if !(activeIndex == -1 || containsIndex(activeIndex)) { problems.append("active index \(activeIndex) out of range") }
        if pinnedCount < 0 || pinnedCount > entries.count { problems.append("pinned count \(pinnedCount) out of range") }
        if Set(entries.map { ObjectIdentifier($0.webState) }).count != entries.count { problems.append("a tab appears twice") }
        if !childrenIndexIsConsistent { problems.append("the opener-to-children index does not match the openers") }
        if !indexHintsAreConsistent { problems.append("an entry below the numbered prefix has a stale index hint") }
        if groupsByID.count != groups.count || groups.contains(where: { groupsByID[$0.id] !== $0 }) {
            problems.append("the groups by id do not match the groups")
        }
        for (position, entry) in entries.enumerated() {
            if position < pinnedCount, entry.group != nil { problems.append("pinned tab at \(position) is grouped") }
            if let group = entry.group {
                if !groups.contains(where: { $0 === group }) { problems.append("tab at \(position) is in a deleted group") }
                if !group.range.contains(position) { problems.append("tab at \(position) is outside its group's range \(group.range)") }
            }
            if let opener = entry.opener, index(of: opener.webState) < 0 {
                problems.append("tab at \(position) has an opener outside the list")
            }
        }
        for group in groups {
            if group.range.count == 0 { problems.append("group \(group.id) is empty") }
            if group.range.start < pinnedCount { problems.append("group \(group.id) reaches into the pinned section") }
            for index in group.range.start..<group.range.end where !(containsIndex(index) && entries[index].group === group) {
                problems.append("group \(group.id) range \(group.range) holds index \(index) that is not its member")
            }
        }
        return problems
    }
}
