import BrowserRecords

/// A group commit's changes, cut into segments that each cost a fixed number of statements (one per
/// kind of row, with arrays), whatever the number of changes in them.
///
/// Changes that only write windows, tabs, window headers, recently-closed entries and idempotency
/// answers (nearly all of them: page state, opening, closing, moving and activating tabs, opening
/// windows) merge into one segment, the last write of each row winning: windows are written before
/// the tabs that refer to them, and nothing in such a change removes what other rows refer to. A
/// change that creates or deletes profiles, deletes windows or touches tokens (or replaces
/// everything) is a segment of its own, so rows that refer to each other are written in the order
/// the SQLite store writes them.
struct ChangeSegment: Sendable {
    enum Write<Record: Sendable>: Sendable {
        case upsert(Record)
        case delete
    }

    /// Rows keyed by id; a later write of the same id replaces the earlier one and takes its place
    /// at the end (as SQLite's `INSERT OR REPLACE` gives the row a new rowid).
    struct Rows<Record: Sendable>: Sendable {
        private var order: [(id: String, sequence: Int)] = []
        private var latest: [String: (sequence: Int, write: Write<Record>)] = [:]
        /// Every id deleted at some point, also those written again later: a row deleted and then
        /// written is a new row (columns an update keeps, such as the creation time, come from the
        /// later write), so it is deleted before the writes.
        private(set) var everDeleted: [String] = []

        mutating func set(_ id: String, _ write: Write<Record>) {
            let sequence = order.count
            order.append((id, sequence))
            if case .delete = write, latest[id].map({ if case .delete = $0.write { false } else { true } }) ?? true {
                everDeleted.append(id)
            }
            latest[id] = (sequence, write)
        }

        /// The last write of `id` so far.
        func last(_ id: String) -> Write<Record>? { latest[id]?.write }

        /// The last write of each id, in the order those writes were made.
        private var current: [(id: String, write: Write<Record>)] {
            order.compactMap { entry in
                guard let last = latest[entry.id], last.sequence == entry.sequence else { return nil }
                return (entry.id, last.write)
            }
        }

        var upserts: [Record] {
            current.compactMap { if case .upsert(let record) = $0.write { record } else { nil } }
        }
    }

    /// The structural part, present only in a segment of one change.
    var structural: ChangeSet?
    var windows = Rows<WindowRecord>()
    var tabs = Rows<(windowID: String, tab: TabRecord)>()
    var headers = Rows<WindowHeaderRecord>()
    var closed = Rows<(profileID: String, entry: ClosedEntryRecord)>()
    /// Pictures of tabs' pages, by tab (written after the tabs).
    var snapshots = Rows<SnapshotRecord>()
    var idempotency = Rows<(profileID: String?, answer: IdempotencyRecord)>()
    var changes = 0

    /// Whether `change` must be a segment of its own.
    static func isStructural(_ change: ChangeSet) -> Bool {
        change.replacesAll || !change.profiles.isEmpty || !change.deletedProfiles.isEmpty
            || !change.deletedWindows.isEmpty || !change.tokens.isEmpty || !change.deletedTokens.isEmpty
            || change.touchesRenderers || !change.webStates.isEmpty
    }

    /// `changes` cut into segments, in order.
    static func segments(of changes: [ChangeSet]) -> [ChangeSegment] {
        var segments: [ChangeSegment] = []
        var current = ChangeSegment()
        for change in changes {
            if isStructural(change) {
                if current.changes > 0 { segments.append(current) }
                var alone = ChangeSegment()
                alone.structural = change
                alone.add(change)
                segments.append(alone)
                current = ChangeSegment()
            } else {
                current.add(change)
            }
        }
        if current.changes > 0 { segments.append(current) }
        return segments
    }

    /// Adds the row writes of `change` (in the SQLite store's order within a change: deletes first).
    mutating func add(_ change: ChangeSet) {
        changes += 1
        for var window in change.windows {
            // A row written twice keeps what an update keeps (its creation time), as two statements would;
            // a header written before it is superseded by it.
            if case .upsert(let earlier)? = windows.last(window.id) { window.createdAt = earlier.createdAt }
            windows.set(window.id, .upsert(window))
            headers.set(window.id, .delete)
        }
        for header in change.windowHeaders { headers.set(header.id, .upsert(header)) }
        // A tab the change writes again (it moved to another window) keeps its row, and so its
        // picture, which goes with the row (the SQLite store does the same).
        let rewritten = change.deletedTabs.isEmpty ? [] : Set(change.tabs.map(\.tab.id))
        for id in change.deletedTabs where !rewritten.contains(id) { tabs.set(id, .delete) }
        for var written in change.tabs {
            // A row written twice keeps what an update keeps (its creation time), as two statements would.
            if case .upsert(let earlier)? = tabs.last(written.tab.id) { written.tab.createdAt = earlier.tab.createdAt }
            tabs.set(written.tab.id, .upsert(written))
        }
        for snapshot in change.snapshots where snapshot.bytes != nil { snapshots.set(snapshot.tabID, .upsert(snapshot)) }
        for answer in change.idempotency { idempotency.set(answer.key, .upsert((change.profileID, answer))) }
        for id in change.closedRemoved { closed.set(id, .delete) }
        for added in change.closedAdded { closed.set(added.entry.id, .upsert(added)) }
    }
}
