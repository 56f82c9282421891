import BrowserModel

/// Turns a window's list and tab changes into ``TabCollectionConsumer`` calls, in model order.
///
/// It observes the `WebStateList`, which forwards its tabs' own changes; it holds no HTTP or SQLite types and sends
/// only ``TabItem`` values.
final class TabCollectionMediator: WebStateListObserver {
    private unowned let list: WebStateList
    private weak var consumer: (any TabCollectionConsumer)?

    /// Starts observing and populates the consumer with the list as it is.
    init(list: WebStateList, consumer: any TabCollectionConsumer) {
        self.list = list
        self.consumer = consumer
        list.addObserver(self)
        consumer.populate(items: (0..<list.count).map(item(at:)), selectedID: list.activeWebState?.id)
    }

    /// Stops observing; the consumer is told nothing more.
    func stop() {
        list.removeObserver(self)
        consumer = nil
    }

    func item(at index: Int) -> TabItem { Self.item(in: list, at: index) }

    static func item(in list: WebStateList, at index: Int) -> TabItem {
        let tab = list.webState(at: index)!
        return TabItem(
            id: tab.id, url: tab.visibleURL, title: tab.title, loading: tab.isLoading, progress: tab.progress, crashed: tab.isCrashed,
            faviconURL: tab.faviconURL, pinned: list.isPinned(at: index), groupID: list.group(at: index)?.id,
            openerID: list.opener(at: index)?.webState.id, historyIndex: tab.lastCommittedIndex,
            historyCount: tab.historyCount, snapshot: tab.snapshot, pending: tab.pendingNavigation)
    }

    func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus) {
        guard let consumer else { return }
        let selected = list.activeWebState?.id
        switch change {
        case .insert(let tab, let index, _):
            consumer.insert(item: item(at: index), index: index, selectedID: selected)
        case .detach(let detach):
            consumer.remove(id: detach.tab.id, selectedID: selected)
        case .move(let tab, _, let to, let pinnedChanged, let oldGroup, let newGroup):
            consumer.move(id: tab.id, index: to)
            if pinnedChanged || oldGroup !== newGroup { consumer.update(item: item(at: to)) }
            if status.activeChanged { consumer.select(id: selected) }
        case .replace(let replaced, let inserted, let index):
            consumer.replace(oldID: replaced.id, item: item(at: index))
            if status.activeChanged { consumer.select(id: selected) }
        case .statusOnly(let tab, let index, let pinnedChanged, let oldGroup, let newGroup):
            if tab != nil, pinnedChanged || oldGroup !== newGroup { consumer.update(item: item(at: index)) }
            if status.activeChanged { consumer.select(id: selected) }
        case .openerChange(_, let index):
            consumer.update(item: item(at: index))
        case .groupCreate, .groupVisualDataUpdate, .groupMove, .groupDelete:
            break
        }
    }

    func webStateListWillBeginBatch(_ list: WebStateList) { consumer?.beginBatch() }
    func webStateListBatchEnded(_ list: WebStateList) { consumer?.endBatch() }

    func webStateList(_ list: WebStateList, tabDidChange webState: WebState, change: WebStateChange) {
        let index = list.index(of: webState)
        guard index >= 0 else { return }
        if change == .snapshot {
            consumer?.snapshotChanged(item: item(at: index))
        } else {
            consumer?.update(item: item(at: index))
        }
    }
}
