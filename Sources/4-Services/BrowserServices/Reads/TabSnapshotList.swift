import BrowserModel
import Foundation

/// A tab's values that do not depend on where it stands (its index, whether it is active or pinned
/// come from the window): immutable, and shared by the snapshots of successive versions, so a change
/// of one tab makes one new slot, not a new snapshot of every tab. A tab in a group, with an opener,
/// a page picture or a pending navigation has a ``RichTabSlot``: those fields would cost every other
/// tab 48 bytes.
public class TabSlot: @unchecked Sendable {
    // `@unchecked Sendable`: every stored property is a `let` of a Sendable type, here and in its one
    // subclass (a non-final class cannot be checked).
    // One per loaded tab: the fields in an order that leaves no padding (a class keeps its declared
    // order), the history's position in 32 bits (the model's limits keep it far below): 116 bytes
    // of heap per tab (128 with malloc's rounding; 160 with a group and an opener in every slot).
    let id: TabID
    let url: String
    let title: String
    let faviconURL: String?
    let progress: Double
    let createdAt: Date
    let lastActiveAt: Date
    private let storedHistoryIndex: Int32
    private let storedHistoryCount: Int32
    let loading: Bool
    let crashed: Bool
    let canGoBack: Bool
    let canGoForward: Bool

    var historyIndex: Int { Int(storedHistoryIndex) }
    var historyCount: Int { Int(storedHistoryCount) }
    /// Its group, if any.
    var groupID: TabGroupID? { nil }
    /// The tab that opened it, if any.
    var openerID: TabID? { nil }
    /// The picture of its page (with its bytes while this run holds them), if any.
    var picture: PageSnapshot? { nil }
    /// The navigation its page has not committed yet, if any.
    var pending: PendingNavigation? { nil }

    /// The slot of `tab` as `list` holds it now.
    static func make(_ tab: WebState, in list: WebStateList) -> TabSlot {
        let group = list.group(of: tab)?.id
        let opener = list.opener(of: tab)?.webState.id
        guard group == nil, opener == nil, tab.snapshot == nil, tab.pendingNavigation == nil else {
            return RichTabSlot(tab, groupID: group, openerID: opener, picture: tab.snapshot, pending: tab.pendingNavigation)
        }
        return TabSlot(tab)
    }

    /// The slot of `tab` without a group, an opener, a picture or a pending navigation (``make(_:in:)``
    /// gives the slot of any tab).
    init(_ tab: WebState) {
        id = tab.id
        url = tab.visibleURL
        title = tab.title
        loading = tab.isLoading
        crashed = tab.isCrashed
        progress = tab.progress
        faviconURL = tab.faviconURL
        canGoBack = tab.canGoBack
        canGoForward = tab.canGoForward
        storedHistoryIndex = Int32(clamping: tab.lastCommittedIndex)
        storedHistoryCount = Int32(clamping: tab.historyCount)
        createdAt = tab.createdAt
        lastActiveAt = tab.lastActiveAt
    }
}

/// The slot of a tab in a group, with an opener, a page picture or a pending navigation (a few tabs:
/// the others do not pay for these fields).
final class RichTabSlot: TabSlot, @unchecked Sendable {
    // `@unchecked Sendable`: as its superclass, more `let`s of Sendable types.
    private let storedGroupID: TabGroupID?
    private let storedOpenerID: TabID?
    private let storedPicture: PageSnapshot?
    private let storedPending: PendingNavigation?

    init(_ tab: WebState, groupID: TabGroupID?, openerID: TabID?, picture: PageSnapshot?, pending: PendingNavigation?) {
        storedGroupID = groupID
        storedOpenerID = openerID
        storedPicture = picture
        storedPending = pending
        super.init(tab)
    }

    override var groupID: TabGroupID? { storedGroupID }
    override var openerID: TabID? { storedOpenerID }
    override var picture: PageSnapshot? { storedPicture }
    override var pending: PendingNavigation? { storedPending }
}

/// The tabs of a window snapshot: a persistent sequence of slots in chunks of at most 128, so a new
/// version shares every chunk but the ones a change touched (an insert, removal or replacement copies
/// one chunk and the chunk directory, not every tab). Each element is the `TabSnapshot` of that tab
/// at its position.
public struct TabSnapshotList: RandomAccessCollection, Sendable, Equatable {
    final class Chunk: Sendable {
        let slots: [TabSlot]
        init(_ slots: [TabSlot]) { self.slots = slots }
    }

    private(set) var chunks: [Chunk] = []
    /// The index of the first tab of each chunk.
    private(set) var starts: [Int] = []
    public private(set) var endIndex = 0
    public var startIndex: Int { 0 }
    /// Where the elements' index-dependent values come from.
    var browserID: BrowserID
    var activeIndex = -1
    var pinnedCount = 0

    static let chunkLimit = 128

    init(browserID: BrowserID, slots: [TabSlot] = []) {
        self.browserID = browserID
        var start = 0
        while start < slots.count {
            let end = Swift.min(start + Self.chunkLimit / 2, slots.count)
            chunks.append(Chunk(Array(slots[start..<end])))
            starts.append(start)
            start = end
        }
        endIndex = slots.count
    }

    /// The chunk holding position `index` (for an insert at the end, the last chunk).
    private func chunk(containing index: Int) -> Int {
        var low = 0
        var high = chunks.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= index { low = middle } else { high = middle - 1 }
        }
        return low
    }

    func slot(at index: Int) -> TabSlot {
        let c = chunk(containing: index)
        return chunks[c].slots[index - starts[c]]
    }

    public subscript(index: Int) -> TabSnapshot {
        let slot = slot(at: index)
        return TabSnapshot(
            id: slot.id, browserID: browserID, index: index, url: slot.url, title: slot.title, pinned: index < pinnedCount,
            groupID: slot.groupID, openerID: slot.openerID, active: index == activeIndex, loading: slot.loading,
            progress: slot.progress, crashed: slot.crashed, faviconURL: slot.faviconURL, canGoBack: slot.canGoBack, canGoForward: slot.canGoForward,
            historyIndex: slot.historyIndex, historyCount: slot.historyCount, createdAt: slot.createdAt,
            lastActiveAt: slot.lastActiveAt, snapshot: slot.picture, pending: slot.pending)
    }

    // MARK: Edits (O(chunk + chunks))

    mutating func insert(_ slot: TabSlot, at index: Int) {
        if chunks.isEmpty {
            chunks = [Chunk([slot])]
            starts = [0]
            endIndex = 1
            return
        }
        let c = chunk(containing: index)
        var slots = chunks[c].slots
        slots.insert(slot, at: index - starts[c])
        if slots.count > Self.chunkLimit {
            let half = slots.count / 2
            chunks[c] = Chunk(Array(slots[..<half]))
            chunks.insert(Chunk(Array(slots[half...])), at: c + 1)
            starts.insert(0, at: c + 1)
        } else {
            chunks[c] = Chunk(slots)
        }
        endIndex += 1
        restart(from: c)
    }

    @discardableResult
    mutating func remove(at index: Int) -> TabSlot {
        let c = chunk(containing: index)
        var slots = chunks[c].slots
        let removed = slots.remove(at: index - starts[c])
        if slots.isEmpty {
            chunks.remove(at: c)
            starts.remove(at: c)
        } else {
            chunks[c] = Chunk(slots)
        }
        endIndex -= 1
        restart(from: c)
        return removed
    }

    mutating func replace(at index: Int, with slot: TabSlot) {
        let c = chunk(containing: index)
        var slots = chunks[c].slots
        slots[index - starts[c]] = slot
        chunks[c] = Chunk(slots)
    }

    private mutating func restart(from chunk: Int) {
        var start = chunk > 0 ? starts[chunk - 1] + chunks[chunk - 1].slots.count : 0
        for c in Swift.max(chunk, 0)..<chunks.count {
            starts[c] = start
            start += chunks[c].slots.count
        }
    }

    public static func == (a: TabSnapshotList, b: TabSnapshotList) -> Bool {
        a.count == b.count && a.indices.allSatisfy { a[$0] == b[$0] }
    }
}
