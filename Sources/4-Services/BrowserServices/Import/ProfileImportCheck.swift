public import BrowserModel
public import BrowserRecords

/// Checks, before anything is stored, that a profile's records load exactly as they are: each window
/// is rebuilt in a throwaway session the way a load rebuilds it (spec §8) and dropped again, so only
/// one window's model exists at a time. Anything the load would repair (a group that is not
/// contiguous, an opener outside its window, an active index past the tabs, an unknown colour or
/// transition, a history index outside its entries) is reported, one sentence each.
public final class ProfileImportCheck {
    private let session: ProfileSession

    public init(profile: ProfileRecord, limits: ModelLimits) {
        var limits = limits
        limits.profileBytes = Int.max  // the caller checks the profile's bytes on the records
        let state = BrowserState(
            id: ProfileID(rawValue: profile.id), name: profile.name, createdAt: profile.createdAt, budget: ByteBudget(limit: Int.max))
        session = ProfileSession(browserState: state, limits: limits)
    }

    /// What loading `window` with `tabs` would repair (empty: it loads as stored).
    /// - Throws: the model's error when it cannot hold the window at all (e.g. too many tabs).
    public func repairs(of window: WindowRecord, tabs: [String: TabRecord]) throws -> [String] {
        var repairs: [String] = []
        let browser = try session.createBrowser(id: BrowserID(rawValue: window.id), createdAt: window.createdAt)
        _ = try BrowserService.fill(browser, from: window, tabs: tabs, repairs: &repairs)
        _ = try? browser.webStateList.closeAll(flags: .tabsCleanup)
        try? session.closeBrowser(browser)
        session.recentlyClosed.removeAll()
        return repairs
    }

    /// What loading the recently closed `entries` would repair.
    public func repairs(of entries: [ClosedEntryRecord]) -> [String] {
        var repairs: [String] = []
        BrowserService.restoreClosed(entries, into: session.recentlyClosed, repairs: &repairs)
        session.recentlyClosed.removeAll()
        return repairs
    }
}
