import BrowserModel

/// Which windows' answers are worth keeping among the answers kept (``ByteLRU``'s door, a value): an
/// answer is kept the second time the same version of its window is built, so a window read once — a
/// front end's first look at each of a profile's windows, an export, a crawl — leaves nothing behind
/// and pushes no window read again and again out. Its memory is bounded: it remembers the last
/// ``capacity`` windows built and not kept (their ids and versions), the oldest forgotten first.
struct AnswerAdmission: Sendable {
    let capacity: Int
    /// The version built last, and not kept, of each window remembered.
    private var built: [BrowserID: Int] = [:]
    /// The windows remembered, oldest first from `next` on (an id may stand twice: forgetting it
    /// early costs one build more).
    private var order: [BrowserID] = []
    private var next = 0

    init(capacity: Int = 4_096) { self.capacity = max(1, capacity) }

    /// How many windows it remembers now.
    var count: Int { built.count }

    /// Whether the answer just built for `id` at `version` is kept: yes when that version was built
    /// before (and then it is forgotten here); otherwise it is remembered.
    mutating func admits(_ id: BrowserID, version: Int) -> Bool {
        if built[id] == version {
            built[id] = nil
            return true
        }
        if built[id] == nil { remember(id) }
        built[id] = version
        return false
    }

    /// The window left (closed, unloaded): nothing of it is remembered.
    mutating func forget(_ id: BrowserID) { built[id] = nil }

    private mutating func remember(_ id: BrowserID) {
        guard order.count == capacity else { return order.append(id) }
        built[order[next]] = nil
        order[next] = id
        next = (next + 1) % capacity
    }
}
