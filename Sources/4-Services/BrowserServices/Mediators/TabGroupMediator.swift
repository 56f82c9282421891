import BrowserModel

/// Turns a window's group changes, and tabs joining or leaving groups, into ``TabGroupConsumer`` calls.
final class TabGroupMediator: WebStateListObserver {
    private unowned let list: WebStateList
    private weak var consumer: (any TabGroupConsumer)?

    init(list: WebStateList, consumer: any TabGroupConsumer) {
        self.list = list
        self.consumer = consumer
        list.addObserver(self)
    }

    func stop() {
        list.removeObserver(self)
        consumer = nil
    }

    static func item(_ group: TabGroup) -> GroupItem {
        GroupItem(
            id: group.id, title: group.visualData.title, color: group.visualData.color,
            collapsed: group.visualData.collapsed, start: group.range.start, count: group.range.count)
    }

    func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus) {
        guard let consumer else { return }
        switch change {
        case .groupCreate(let group): consumer.groupCreated(Self.item(group))
        case .groupVisualDataUpdate(let group, _): consumer.groupVisualDataChanged(Self.item(group))
        case .groupMove(let group, _, _): consumer.groupMoved(Self.item(group))
        case .groupDelete(let group): consumer.groupDeleted(id: group.id)
        case .insert(let tab, _, let group):
            if let group { consumer.membershipChanged(tabID: tab.id, groupID: group.id, previousGroupID: nil) }
        case .detach(let detach):
            if let group = detach.group { consumer.membershipChanged(tabID: detach.tab.id, groupID: nil, previousGroupID: group.id) }
        case .move(let tab, _, _, _, let oldGroup, let newGroup):
            if oldGroup !== newGroup { consumer.membershipChanged(tabID: tab.id, groupID: newGroup?.id, previousGroupID: oldGroup?.id) }
        case .statusOnly(let tab, _, _, let oldGroup, let newGroup):
            if let tab, oldGroup !== newGroup {
                consumer.membershipChanged(tabID: tab.id, groupID: newGroup?.id, previousGroupID: oldGroup?.id)
            }
        case .replace, .openerChange:
            break
        }
    }
}
