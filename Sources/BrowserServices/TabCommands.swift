public import BrowserModel

// The commands a window's tab mediator handles. Every mutation the REST API makes is one of these,
// dispatched through the window's Dispatcher, so one place sees, logs and counts them all.

/// Opens a tab (REST `POST …/tabs`).
public struct OpenTabRequest: Sendable {
    public var url: String
    public var index: Int?
    public var activate: Bool
    public var openerID: TabID?
    public var inheritOpener: Bool
    public var pinned: Bool
    public var groupID: TabGroupID?
    public var transition: PageTransition

    public init(url: String, index: Int? = nil, activate: Bool = true, openerID: TabID? = nil, inheritOpener: Bool = false,
                pinned: Bool = false, groupID: TabGroupID? = nil, transition: PageTransition = .typed) {
        self.url = url
        self.index = index
        self.activate = activate
        self.openerID = openerID
        self.inheritOpener = inheritOpener
        self.pinned = pinned
        self.groupID = groupID
        self.transition = transition
    }
}

/// A move within a window or into another window of the same profile.
public struct MoveTabRequest: Sendable {
    public var tabID: TabID
    public var index: Int
    public var destination: BrowserID?
    public var activate: Bool

    public init(tabID: TabID, index: Int, destination: BrowserID? = nil, activate: Bool = false) {
        self.tabID = tabID
        self.index = index
        self.destination = destination
        self.activate = activate
    }
}

/// Page state a renderer reports, and the opener (`.some(nil)` clears it).
public struct PageStateUpdate: Sendable {
    public var tabID: TabID
    public var title: String?
    public var loading: Bool?
    public var progress: Double?
    public var faviconURL: String??
    public var openerID: TabID??

    public init(tabID: TabID, title: String? = nil, loading: Bool? = nil, progress: Double? = nil,
                faviconURL: String?? = nil, openerID: TabID?? = nil) {
        self.tabID = tabID
        self.title = title
        self.loading = loading
        self.progress = progress
        self.faviconURL = faviconURL
        self.openerID = openerID
    }
}

/// A history move or a new navigation.
public enum TabNavigation: Sendable {
    case navigate(url: String, transition: PageTransition)
    case back, forward, reload
    case go(offset: Int)
}

public struct NavigateRequest: Sendable {
    public var tabID: TabID
    public var navigation: TabNavigation
    public init(tabID: TabID, navigation: TabNavigation) {
        self.tabID = tabID
        self.navigation = navigation
    }
}

public struct PinRequest: Sendable {
    public var tabID: TabID
    public var pinned: Bool
    public init(tabID: TabID, pinned: Bool) {
        self.tabID = tabID
        self.pinned = pinned
    }
}

public struct ReplaceRequest: Sendable {
    public var tabID: TabID
    public var url: String
    public init(tabID: TabID, url: String) {
        self.tabID = tabID
        self.url = url
    }
}

/// Which tabs a close-many closes.
public enum CloseTabsSelector: Sendable {
    case tabs([TabID])
    case all
    case allNonPinned
    case allExcept(TabID)
    case group(TabGroupID)
}

public struct CreateGroupRequest: Sendable {
    public var tabIDs: [TabID]
    public var title: String?
    public var color: TabGroupColor?
    public init(tabIDs: [TabID], title: String? = nil, color: TabGroupColor? = nil) {
        self.tabIDs = tabIDs
        self.title = title
        self.color = color
    }
}

public struct UpdateGroupRequest: Sendable {
    public var groupID: TabGroupID
    public var title: String?
    public var color: TabGroupColor?
    public var collapsed: Bool?
    public init(groupID: TabGroupID, title: String? = nil, color: TabGroupColor? = nil, collapsed: Bool? = nil) {
        self.groupID = groupID
        self.title = title
        self.color = color
        self.collapsed = collapsed
    }
}

public struct GroupTabsRequest: Sendable {
    public var groupID: TabGroupID?
    public var tabIDs: [TabID]
    public init(groupID: TabGroupID? = nil, tabIDs: [TabID]) {
        self.groupID = groupID
        self.tabIDs = tabIDs
    }
}

public struct MoveGroupRequest: Sendable {
    public var groupID: TabGroupID
    public var beforeIndex: Int
    public init(groupID: TabGroupID, beforeIndex: Int) {
        self.groupID = groupID
        self.beforeIndex = beforeIndex
    }
}

public struct BroadcastUpdate: Sendable {
    public var key: String
    public var value: BroadcastValue
    public init(key: String, value: BroadcastValue) {
        self.key = key
        self.value = value
    }
}

/// Arguments of a command named at run time (`POST …/commands/{name}`): JSON-like values.
public enum CommandArgument: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
}

public typealias CommandArguments = [String: CommandArgument]

extension CommandArguments {
    func string(_ key: String, command: String, required: Bool = false) throws -> String? {
        switch self[key] {
        case .string(let value): return value
        case nil, .null?:
            if required { throw ModelError.invalidCommandArguments(command: command, reason: "'\(key)' is required") }
            return nil
        default: throw ModelError.invalidCommandArguments(command: command, reason: "'\(key)' must be a string")
        }
    }

    func bool(_ key: String, command: String) throws -> Bool? {
        switch self[key] {
        case .bool(let value): return value
        case nil, .null?: return nil
        default: throw ModelError.invalidCommandArguments(command: command, reason: "'\(key)' must be a boolean")
        }
    }

    func only(_ keys: Set<String>, command: String) throws {
        if let unknown = self.keys.first(where: { !keys.contains($0) }) {
            throw ModelError.invalidCommandArguments(command: command, reason: "unknown argument '\(unknown)'")
        }
    }
}

/// The commands of a window's tab mediator.
public enum TabCommands {
    public static let open = Command<OpenTabRequest, TabSnapshot>("tabs.open")
    public static let close = Command<TabID, TabID>("tabs.close")
    public static let activate = Command<TabID, TabSnapshot>("tabs.activate")
    public static let pin = Command<PinRequest, TabSnapshot>("tabs.pin")
    public static let move = Command<MoveTabRequest, TabSnapshot>("tabs.move")
    public static let replace = Command<ReplaceRequest, TabSnapshot>("tabs.replace")
    public static let duplicate = Command<TabID, TabSnapshot>("tabs.duplicate")
    public static let navigate = Command<NavigateRequest, TabSnapshot>("tabs.navigate")
    public static let updatePageState = Command<PageStateUpdate, TabSnapshot>("tabs.updatePageState")
    public static let closeMany = Command<CloseTabsSelector, CloseTabsResult>("tabs.closeMany")
    public static let restoreClosed = Command<ClosedTabID?, TabSnapshot>("tabs.restoreClosed")
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

    // The UI commands every window has, with run-time arguments.
    public static let openNewTab = Command<CommandArguments, TabSnapshot>("openNewTab")
    public static let closeTab = Command<CommandArguments, TabID>("closeTab")
    public static let activateTab = Command<CommandArguments, TabSnapshot>("activateTab")
    public static let loadURL = Command<CommandArguments, TabSnapshot>("loadURL")
}
