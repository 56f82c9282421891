/// Caps that keep one client from exhausting the service.
public struct ModelLimits: Sendable, Equatable {
    /// Most tabs in one window (default 10,000).
    public var tabsPerWindow: Int
    /// Most windows in one profile, regular and incognito together (default 1,000).
    public var windowsPerProfile: Int
    /// Longest URL, in UTF-8 bytes (Chromium's 2 MiB).
    public var urlBytes: Int
    /// Longest title, in characters (Unicode code points, 1,024); a longer one a renderer reports is
    /// truncated to its first 1,024, as Chromium truncates titles.
    public var titleCharacters: Int
    /// Longest favicon URL a renderer may report, in UTF-8 bytes (64 KiB), `data:` URLs included; the
    /// favicon URLs count in ``profileBytes`` too.
    public var faviconURLBytes = 64 * 1024
    /// Entries kept in the recently-closed list of a regular profile (25).
    public var recentlyClosedEntries: Int
    /// Close-alls of a profile awaiting undo or confirmation at once (16); past it the oldest is confirmed.
    public var pendingClosingsPerProfile = 16
    /// Most navigation entries kept in memory per tab (older ones are dropped from the front).
    public var historyEntries: Int
    /// Most bytes of text (history URLs and titles, favicon URLs, recently closed tabs) and tab pictures one profile holds, its
    /// off-the-record profile included (default 64 MiB); growth past it is refused.
    public var profileBytes: Int
    /// Largest picture of a tab's page (`PUT /v1/tabs/{id}/snapshot`), in bytes (256 KiB); the
    /// pictures count in ``profileBytes`` too.
    public var snapshotBytes = 256 * 1024

    public init(
        tabsPerWindow: Int = 10_000, windowsPerProfile: Int = 1_000, urlBytes: Int = 2 * 1024 * 1024,
        titleCharacters: Int = 1_024, recentlyClosedEntries: Int = 25, historyEntries: Int = 1_000,
        profileBytes: Int = 64 << 20
    ) {
        self.tabsPerWindow = tabsPerWindow
        self.windowsPerProfile = windowsPerProfile
        self.urlBytes = urlBytes
        self.titleCharacters = titleCharacters
        self.recentlyClosedEntries = recentlyClosedEntries
        self.historyEntries = historyEntries
        self.profileBytes = profileBytes
    }
}
