import Foundation

/// A tab's back/forward list, as Chromium's legacy in-memory model (`crw_session_controller.mm`) spells
/// it out (spec §6). browserd is the source of truth: a navigation commits at once, so there is no
/// pending or transient item.
public struct NavigationHistory: Sendable, Equatable {
    /// The most items a saved session keeps around the current one (`kMaxSessionSize`).
    public static let maxSessionSize = 75
    /// The most bytes of text (URLs and titles) a saved session keeps for one tab: past it the items
    /// farthest from the current one are left out (the current one always stays), so that saving one
    /// tab's change never writes more than this, however long its URLs (one tenant's huge history
    /// must not hold the one writer every tenant shares).
    public static let maxSessionBytes = 1 << 20

    public private(set) var items: [NavigationItem]
    /// The last committed index; −1 when there are no items.
    public private(set) var currentIndex: Int
    /// The bytes of text the items hold (URLs and titles), kept as they change.
    public private(set) var byteCount = 0

    public init() {
        items = []
        currentIndex = -1
    }

    /// Restores a saved history (Chromium's `Restore(lci, items)`).
    /// - Throws: ``ModelError/indexOutOfRange(index:validRange:)`` when the index is not an item's.
    public init(items: [NavigationItem], currentIndex: Int) throws {
        if items.isEmpty {
            guard currentIndex == -1 else { throw ModelError.indexOutOfRange(index: currentIndex, validRange: nil) }
        } else {
            guard (0..<items.count).contains(currentIndex) else {
                throw ModelError.indexOutOfRange(index: currentIndex, validRange: 0...(items.count - 1))
            }
        }
        self.items = items
        self.currentIndex = currentIndex
        self.byteCount = items.reduce(0) { $0 + $1.byteCount }
    }

    public var count: Int { items.count }
    public var isEmpty: Bool { items.isEmpty }
    public var currentItem: NavigationItem? { currentIndex >= 0 ? items[currentIndex] : nil }
    public var canGoBack: Bool { currentIndex > 0 }
    public var canGoForward: Bool { currentIndex >= 0 && currentIndex < items.count - 1 }

    /// Whether `goTo(currentIndex + offset)` would move.
    public func canGo(offset: Int) -> Bool {
        let target = currentIndex + offset
        return offset != 0 && target >= 0 && target < items.count
    }

    /// Commits a new navigation: the forward entries are deleted and the item appended, unless the URL
    /// equals the current item's and it is not a form submission (then nothing is added) — a page's own
    /// push within its document (`history.pushState`, `sameDocument`) is always added, to its own URL
    /// too, as Chromium's `NavigationControllerImpl` adds one for a same-document navigation that does
    /// not replace its entry.
    /// - Parameter maxItems: the oldest items are dropped to keep at most this many.
    /// - Returns: whether an item was added.
    @discardableResult
    public mutating func commit(_ item: NavigationItem, maxItems: Int = .max, sameDocument: Bool = false) -> Bool {
        if !sameDocument, let current = currentItem, current.url == item.url,
            !(item.transition == .formSubmit && current.transition != .formSubmit)
        {
            return false
        }
        if currentIndex < items.count - 1 {
            byteCount -= items[(currentIndex + 1)...].reduce(0) { $0 + $1.byteCount }
            items.removeSubrange((currentIndex + 1)...)
        }
        items.append(item)
        byteCount += item.byteCount
        if items.count > maxItems {
            byteCount -= items[..<(items.count - maxItems)].reduce(0) { $0 + $1.byteCount }
            items.removeFirst(items.count - maxItems)
        }
        currentIndex = items.count - 1
        return true
    }

    /// Replaces the current item (Chromium's `should_replace_current_entry`: a redirect's final URL,
    /// `location.replace`, `history.replaceState`): the index and the forward entries stay. With no
    /// current item it commits one.
    public mutating func replaceCurrent(with item: NavigationItem) {
        guard currentIndex >= 0 else {
            commit(item)
            return
        }
        byteCount += item.byteCount - items[currentIndex].byteCount
        items[currentIndex] = item
    }

    /// Goes to `index`; out of range or equal to the current index is a no-op.
    /// - Returns: whether the current index changed.
    @discardableResult
    public mutating func goTo(index: Int) -> Bool {
        guard index >= 0, index < items.count, index != currentIndex else { return false }
        currentIndex = index
        return true
    }

    @discardableResult public mutating func goBack() -> Bool { goTo(index: currentIndex - 1) }
    @discardableResult public mutating func goForward() -> Bool { goTo(index: currentIndex + 1) }
    @discardableResult public mutating func go(offset: Int) -> Bool { canGo(offset: offset) ? goTo(index: currentIndex + offset) : false }

    /// Updates the current item's title (a renderer reported it).
    public mutating func setCurrentTitle(_ title: String) {
        guard currentIndex >= 0 else { return }
        byteCount += title.utf8.count - items[currentIndex].title.utf8.count
        items[currentIndex].title = title
    }

    /// How many entries past the first `PopulateTab` keeps on each side of the current one
    /// (`gMaxPersistNavigationCount` in `components/sessions/core/tab_restore_service_helper.cc`).
    public static let maxPersistNavigationCount = 6

    /// The URL scheme of reader-mode pages (`dom_distiller::kDomDistillerScheme`): a mode, not a
    /// navigation, so a closed tab never remembers such an entry.
    public static let readerModeScheme = "chrome-distiller"

    /// The entries a closed tab is remembered with, exactly as `TabRestoreServiceHelper::PopulateTab`
    /// builds them: `AddSerializedNavigationEntries(kCurrentAndPreceedingEntries)` walks back from the
    /// current entry, then `AddSerializedNavigationEntries(kEntriesFollowingCurrentEntry)` walks
    /// forward from the entry after it. Each walk runs `while (in range && added_count <= max)`, so it
    /// keeps up to `max + 1` entries (7): the current one and 6 before it, then 7 after it. Both walks
    /// skip entries with an empty URL and reader-mode entries without counting them, which widens
    /// the window past them. The remembered index is the first walk's count minus one (0 when the
    /// first walk kept nothing). With no committed entry (index −1) the last entry counts as current.
    ///
    /// - Returns: the window, empty when every entry was skipped (such a tab is not remembered:
    ///   `CreateHistoricalTab` drops a tab whose navigations are empty).
    public func restoreWindow(maxPersist: Int = NavigationHistory.maxPersistNavigationCount) -> NavigationHistory {
        guard !items.isEmpty else { return self }
        let current = currentIndex >= 0 ? currentIndex : items.count - 1
        func kept(_ item: NavigationItem) -> Bool {
            !item.url.isEmpty && !item.url.lowercased().hasPrefix(Self.readerModeScheme + ":")
        }
        var before: [NavigationItem] = []
        var index = current
        while index >= 0 && before.count <= maxPersist {
            if kept(items[index]) { before.append(items[index]) }
            index -= 1
        }
        var after: [NavigationItem] = []
        index = current + 1
        while index < items.count && after.count <= maxPersist {
            if kept(items[index]) { after.append(items[index]) }
            index += 1
        }
        let window = before.reversed() + after
        if window.count == items.count { return self }
        guard !window.isEmpty else { return NavigationHistory() }
        // Cannot fail: the index is inside the kept entries.
        return (try? NavigationHistory(items: window, currentIndex: max(0, before.count - 1))) ?? self
    }

    /// Whether the history is the new-tab page alone (Chromium does not remember such a tab when it
    /// closes: `ClosingWebStateObserverBrowserAgent::RecordHistoryForWebStateAtIndex`).
    public var isNewTabPageOnly: Bool { items.count == 1 && items[0].url == NavigationItem.newTabPageURL }

    /// The part of the history a saved session keeps (spec §6): at most 75 items around the current
    /// one. `offset = max(0, min(lci − 37, n − 75))`, saved index = `lci − offset`; when there is no
    /// committed item (lci = −1) the last item counts as current.
    ///
    /// Past `maxBytes` of text the items farthest from the current one leave the window, one at a time
    /// (the current item always stays).
    public func sessionWindow(
        maxSize: Int = NavigationHistory.maxSessionSize,
        maxBytes: Int = NavigationHistory.maxSessionBytes
    ) -> (items: ArraySlice<NavigationItem>, currentIndex: Int) {
        let n = items.count
        guard n > 0 else { return (items[...], -1) }
        let lci = currentIndex >= 0 ? currentIndex : n - 1
        let size = min(maxSize, n)
        var lower = max(0, min(lci - maxSize / 2, n - maxSize))
        var upper = lower + size  // exclusive
        // Most windows are far below the byte cap: measure only when the whole history might pass it.
        if byteCount > maxBytes {
            var bytes = items[lower..<upper].reduce(0) { $0 + $1.byteCount }
            while bytes > maxBytes && upper - lower > 1 {
                if lci - lower >= upper - 1 - lci {
                    bytes -= items[lower].byteCount
                    lower += 1
                } else {
                    upper -= 1
                    bytes -= items[upper].byteCount
                }
            }
        }
        return (items[lower..<upper], lci - lower)
    }
}
