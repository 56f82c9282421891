public import Foundation

/// A navigation a client asked for that its page has not committed yet (Chromium's pending entry,
/// spec §6): while a renderer's live page shows a tab, a client's navigation waits for the page, which
/// commits it (``WebState/commitPending(_:url:at:maxItems:)``) or ends without a commit (a 204, a
/// download, a navigation that replaced it: ``WebState/discardPending(_:)``), and the entry before it
/// stays current until then. Never in the history, never stored: a restart drops it.
public struct PendingNavigation: Sendable, Equatable {
    /// Names this navigation among the tab's: a page's commit or discard says which one it ends, so that
    /// a late answer about a navigation another replaced changes nothing (Chromium's pending entry's
    /// unique id).
    public let id: Int
    /// Where it goes: a new entry's URL, or the URL of the entry it goes to.
    public let url: String
    /// The history entry it goes to (back, forward, go, reload: Chromium's pending entry index), nil
    /// for a new entry.
    public let index: Int?
    public let transition: PageTransition
    public let startedAt: Date

    public init(id: Int = PendingNavigation.makeID(), url: String, index: Int?, transition: PageTransition, startedAt: Date) {
        self.id = id
        self.url = url
        self.index = index
        self.transition = transition
        self.startedAt = startedAt
    }

    /// A new entry (not a move within the history): the only pending navigation that is the tab's
    /// visible one (Chromium's `GetVisibleEntry` shows a pending entry only for a new navigation a
    /// client, not the page, started: no page can spoof its address bar).
    public var isNewEntry: Bool { index == nil }

    /// The largest id: below 10^15, exact in any JSON number.
    public static let maxID = 999_999_999_999_999

    /// An id no other pending navigation of this run is likely to hold.
    public static func makeID() -> Int { Int.random(in: 1...maxID) }
}
