import BrowserModel

extension ProfileSession {
    /// The window a tab of one kind opens in when a window of the other kind asks (an incognito link
    /// from a regular window): the most recent window of that kind, or a new one, with the
    /// off-the-record profile made when missing.
    /// - Throws: ``ModelError/limitReached(what:limit:)`` when no window may be added.
    func windowForOpening(incognito: Bool) throws -> Browser {
        if incognito {
            if let existing = browserList.browsers(.incognito).last { return existing }
            _ = try createOffTheRecord()
            return try createBrowser(incognito: true)
        }
        if let recent = mostRecentlyActiveRegularBrowser { return recent }
        return try createBrowser(incognito: false)
    }
}
