public import BrowserModel

// The commands a window's tab mediator handles. Every mutation the REST API makes is one of these,
// dispatched through the window's Dispatcher, so one place sees, logs and counts them all.

/// The commands of a window's tab mediator.
public enum TabCommands {
    public static let open = Command<OpenTabRequest, TabSnapshot>("tabs.open")
    public static let close = Command<TabID, TabID>("tabs.close")
    public static let activate = Command<TabID, TabSnapshot>("tabs.activate")
    public static let pin = Command<PinRequest, TabSnapshot>("tabs.pin")
    public static let move = Command<MoveTabRequest, TabSnapshot>("tabs.move")
    public static let replace = Command<ReplaceRequest, TabSnapshot>("tabs.replace")
    public static let duplicate = Command<DuplicateRequest, TabSnapshot>("tabs.duplicate")
    public static let navigate = Command<NavigateRequest, TabSnapshot>("tabs.navigate")
    public static let updatePageState = Command<PageStateUpdate, TabSnapshot>("tabs.updatePageState")
    /// The picture of a tab's page its renderer took (`PUT /v1/tabs/{id}/snapshot`).
    public static let setSnapshot = Command<SnapshotUpdate, TabSnapshot>("tabs.setSnapshot")
    public static let closeMany = Command<CloseTabsSelector, CloseTabsResult>("tabs.closeMany")
    public static let restoreClosed = Command<RestoreClosedTabRequest, TabSnapshot>("tabs.restoreClosed")
    /// Closes every tab (or every unpinned tab) of some windows so that one call can bring them back.
    public static let closeAll = Command<CloseAllTabsRequest, TabsClosingSnapshot>("tabs.closeAll")
    /// Brings back what a close-all closed.
    public static let undoCloseAll = Command<ClosedTabID, TabsClosingSnapshot>("tabs.undoCloseAll")
    /// Makes a close-all final: its tabs are recorded as recently closed.
    public static let confirmCloseAll = Command<ClosedTabID, TabsClosingSnapshot>("tabs.confirmCloseAll")
    public static let createGroup = Command<CreateGroupRequest, GroupSnapshot>("groups.create")
    public static let updateGroup = Command<UpdateGroupRequest, GroupSnapshot>("groups.update")
    public static let addToGroup = Command<GroupTabsRequest, GroupSnapshot>("groups.addTabs")
    public static let ungroup = Command<GroupTabsRequest, [TabSnapshot]>("groups.ungroup")
    public static let moveGroup = Command<MoveGroupRequest, GroupSnapshot>("groups.move")
    public static let deleteGroup = Command<TabGroupID, TabGroupID>("groups.delete")
    public static let closeGroup = Command<TabGroupID, CloseTabsResult>("groups.close")
    public static let broadcast = Command<BroadcastUpdate, BroadcastSnapshot>("broadcasts.update")
    /// Closes the window itself (its tabs go to recently closed unless it is incognito).
    public static let closeWindow = Command<BrowserID, BrowserID>("window.close")
    /// Moves, resizes, maximizes or minimizes the window (WebDriver's rect commands).
    public static let setBounds = Command<WindowBounds, WindowBounds>("window.setBounds")

    // The UI commands every window has, with run-time arguments.
    public static let openNewTab = Command<CommandArguments, TabSnapshot>("openNewTab")
    public static let closeTab = Command<CommandArguments, TabID>("closeTab")
    public static let activateTab = Command<CommandArguments, TabSnapshot>("activateTab")
    public static let loadURL = Command<CommandArguments, TabSnapshot>("loadURL")
}
