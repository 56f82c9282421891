public import Foundation

/// How a navigation started (Chromium's `ui::PageTransition` core types).
public enum PageTransition: String, Sendable, CaseIterable, Codable {
    case link, typed, bookmark, generated, reload, formSubmit = "form_submit", autoToplevel = "auto_toplevel",
        keyword, startPage = "start_page", manualSubframe = "manual_subframe"
}

/// One committed entry of a tab's history.
public struct NavigationItem: Sendable, Equatable {
    /// The new-tab page's URL: a tab that only ever showed it is not remembered when closed.
    public static let newTabPageURL = "browserd://newtab"

    public var url: String
    public var title: String
    public var transition: PageTransition
    public var timestamp: Date

    public init(url: String, title: String = "", transition: PageTransition, timestamp: Date) {
        self.url = url
        self.title = title
        self.transition = transition
        self.timestamp = timestamp
    }
}
