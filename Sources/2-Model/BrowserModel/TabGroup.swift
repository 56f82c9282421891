/// The nine group colours, in Chromium's order (which decides the default colour).
public enum TabGroupColor: String, Sendable, CaseIterable, Codable {
    case grey, blue, red, yellow, green, pink, purple, cyan, orange

    /// The default colour for a new group: the first colour no group uses, else the least used
    /// (ties go to the earlier colour).
    public static func next(after used: [TabGroupColor]) -> TabGroupColor {
        var counts: [TabGroupColor: Int] = [:]
        for color in used { counts[color, default: 0] += 1 }
        return allCases.min { (counts[$0] ?? 0, index(of: $0)) < (counts[$1] ?? 0, index(of: $1)) }!
    }

    private static func index(of color: TabGroupColor) -> Int { allCases.firstIndex(of: color)! }
}

/// A group's title, colour and collapsed state.
public struct TabGroupVisualData: Sendable, Equatable {
    public var title: String
    public var color: TabGroupColor
    public var collapsed: Bool

    public init(title: String = "", color: TabGroupColor = .grey, collapsed: Bool = false) {
        self.title = title
        self.color = color
        self.collapsed = collapsed
    }
}

/// A contiguous range of list indices: `start ..< start + count`.
public struct TabGroupRange: Sendable, Equatable, CustomStringConvertible {
    public var start: Int
    public var count: Int

    public init(start: Int, count: Int) {
        self.start = start
        self.count = count
    }

    /// One past the last index.
    public var end: Int { start + count }
    public func contains(_ index: Int) -> Bool { index >= start && index < end }
    public var description: String { "[\(start), \(end))" }
}

/// A tab group of one window: its id, visual data and the range of its tabs.
///
/// Invariants kept by `WebStateList`: contiguous, non-empty (an emptied group is deleted), inside the
/// regular section. Identity matters: a deleted group must not be used afterwards.
public final class TabGroup {
    public let id: TabGroupID
    public internal(set) var visualData: TabGroupVisualData
    public internal(set) var range: TabGroupRange

    init(id: TabGroupID, visualData: TabGroupVisualData, range: TabGroupRange) {
        self.id = id
        self.visualData = visualData
        self.range = range
    }

    /// The title to show: the title, or "N tabs" when it is empty.
    public var displayTitle: String {
        visualData.title.isEmpty ? (range.count == 1 ? "1 tab" : "\(range.count) tabs") : visualData.title
    }
}
