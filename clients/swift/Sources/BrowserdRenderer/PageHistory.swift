/// A page's back/forward list as Chromium holds it (`Page.getNavigationHistory`): entries with
/// Chromium's own ids, and the current one. A page made fresh holds only what it navigated: browserd's
/// history stays the authoritative one.
public struct PageHistory: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var id: Int
        public var url: String
        public var title: String
        /// Chromium's transition type (`link`, `typed`, `form_submit`, `auto_toplevel`, `reload`, …).
        public var transition: String

        public init(id: Int, url: String, title: String = "", transition: String = "link") {
            self.id = id
            self.url = url
            self.title = title
            self.transition = transition
        }
    }

    public var currentIndex: Int
    public var entries: [Entry]

    public init(currentIndex: Int, entries: [Entry]) {
        self.currentIndex = currentIndex
        self.entries = entries
    }

    public var current: Entry? { entries.indices.contains(currentIndex) ? entries[currentIndex] : nil }

    public func index(of id: Int) -> Int? { entries.firstIndex { $0.id == id } }

    /// Whether `url` is the current entry's or an earlier one's (a commit's URL, once Chromium's list shows it).
    public func holds(_ url: String) -> Bool {
        currentIndex >= 0 && currentIndex < entries.count && entries[...currentIndex].contains { $0.url == url }
    }

    /// From `Page.getNavigationHistory`'s result.
    public init?(_ result: JSONValue) {
        guard let index = result["currentIndex"]?.int, let list = result["entries"]?.array else { return nil }
        currentIndex = index
        entries = list.compactMap { entry in
            guard let id = entry["id"]?.int, let url = entry["url"]?.string else { return nil }
            return Entry(id: id, url: url, title: entry["title"]?.string ?? "", transition: entry["transitionType"]?.string ?? "link")
        }
    }
}

extension PageHistory.Entry {
    /// browserd's transition for Chromium's (`Page.TransitionType`).
    var modelTransition: String {
        switch transition {
        case "typed", "bookmark", "generated", "reload", "keyword", "form_submit", "auto_toplevel", "manual_subframe": transition
        case "auto_bookmark": "bookmark"
        case "keyword_generated": "keyword"
        default: "link"
        }
    }
}
