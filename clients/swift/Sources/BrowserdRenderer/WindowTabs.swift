import BrowserdClient

/// One window's tabs as its event stream tells them (topic `tabs`): their order, state, the active
/// one, and the order they were last activated or opened in, which decides which of them have a live
/// page (``livePages(extra:)``). A pure value, applied one event at a time.
public struct WindowTabs: Sendable, Equatable {
    public private(set) var order: [String] = []
    public private(set) var tabs: [String: ModelTab] = [:]
    public private(set) var activeID: String?
    /// Most recent first: a tab moves to the front when it is opened or activated.
    public private(set) var recency: [String] = []

    public init() {}

    /// Applies one event of the window's stream; returns the tabs whose model state it changed or made.
    @discardableResult
    public mutating func apply(_ event: WindowStreamEvent) -> [ModelTab] {
        switch event {
        case .tabsPopulate(let populate):
            return populateWith(populate.items, selected: populate.selectedId)
        case .reset(let reset):
            return populateWith(reset.tabs.items, selected: reset.tabs.selectedId)
        case .tabsInsert(let insert):
            let tab = ModelTab(insert.item)
            tabs[tab.id] = tab
            order.insert(tab.id, at: min(max(insert.index, 0), order.count))
            touch(tab.id)
            select(insert.selectedId)
            return [tab]
        case .tabsRemove(let remove):
            tabs[remove.tabId] = nil
            order.removeAll { $0 == remove.tabId }
            recency.removeAll { $0 == remove.tabId }
            select(remove.selectedId)
        case .tabsMove(let move):
            guard let from = order.firstIndex(of: move.tabId) else { break }
            order.remove(at: from)
            order.insert(move.tabId, at: min(max(move.index, 0), order.count))
        case .tabsReplace(let replace):
            let tab = ModelTab(replace.item)
            tabs[replace.oldTabId] = nil
            tabs[tab.id] = tab
            if let at = order.firstIndex(of: replace.oldTabId) { order[at] = tab.id } else { order.append(tab.id) }
            if let at = recency.firstIndex(of: replace.oldTabId) { recency[at] = tab.id } else { recency.append(tab.id) }
            if activeID == replace.oldTabId { activeID = tab.id }
            return [tab]
        case .tabsSelect(let select):
            self.select(select.tabId)
        case .tabsUpdate(let update):
            let tab = ModelTab(update.item)
            guard tabs[tab.id] != nil else { break }
            tabs[tab.id] = tab
            return [tab]
        default:
            break
        }
        return []
    }

    /// The tabs that have a live page: the active one and the `extra` most recently activated or
    /// opened others (Chromium's realized `WebState`s with a web view; every other tab has none).
    public func livePages(extra: Int) -> Set<String> {
        var live = Set<String>()
        if let activeID { live.insert(activeID) }
        for id in recency where id != activeID {
            guard live.count < extra + (activeID == nil ? 0 : 1) else { break }
            live.insert(id)
        }
        return live
    }

    /// The tabs ``livePages(extra:)`` gives a page, most wanted first (the active one first).
    public func livePageOrder(extra: Int) -> [String] {
        var ordered: [String] = []
        if let activeID { ordered.append(activeID) }
        for id in recency where id != activeID {
            guard ordered.count < extra + (activeID == nil ? 0 : 1) else { break }
            ordered.append(id)
        }
        return ordered
    }

    private mutating func populateWith(_ items: [Components.Schemas.TabItem], selected: String?) -> [ModelTab] {
        let models = items.map(ModelTab.init)
        order = models.map(\.id)
        tabs = Dictionary(models.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        // Without times on the stream, the newest tabs (the last) count as the most recent.
        recency = order.reversed()
        activeID = nil
        select(selected)
        return models
    }

    private mutating func select(_ id: String?) {
        guard id != activeID else { return }
        activeID = id
        if let id { touch(id) }
    }

    private mutating func touch(_ id: String) {
        recency.removeAll { $0 == id }
        recency.insert(id, at: 0)
    }
}
