// The contract's event names mapped to the payload types generated from it (`EventNamesTests`
// checks that every name `openapi.yaml` lists is decoded here).
import Foundation

/// One event of a window's stream (`GET /v1/browsers/{browserId}/events`), its data decoded as the contract's schema.
public enum WindowStreamEvent: Sendable {
    /// `tabs.populate`: First event of a new stream (topic tabs): every tab in order and the active one.
    case tabsPopulate(Components.Schemas.TabsPopulateEvent)
    /// `groups.populate`: First event of a new stream (topic groups): every group in tab order.
    case groupsPopulate(Components.Schemas.GroupsPopulateEvent)
    /// `tabs.insert`: A tab was inserted at index.
    case tabsInsert(Components.Schemas.TabsInsertEvent)
    /// `tabs.remove`: A tab left the window (closed or moved to another).
    case tabsRemove(Components.Schemas.TabsRemoveEvent)
    /// `tabs.move`: A tab moved to index.
    case tabsMove(Components.Schemas.TabsMoveEvent)
    /// `tabs.replace`: A tab was replaced in place by another.
    case tabsReplace(Components.Schemas.TabsReplaceEvent)
    /// `tabs.select`: The active tab changed (null: none).
    case tabsSelect(Components.Schemas.TabsSelectEvent)
    /// `tabs.update`: A tab's URL, title, loading state, progress, favicon, pinned state or group changed.
    case tabsUpdate(Components.Schemas.TabsUpdateEvent)
    /// `tabs.snapshot`: A tab's page has a new picture (fetch it with GET /v1/tabs/{tabId}/snapshot).
    case tabsSnapshot(Components.Schemas.TabsSnapshotEvent)
    /// `groups.create`: A group was created (empty; members follow as groups.membership).
    case groupsCreate(Components.Schemas.GroupsCreateEvent)
    /// `groups.update`: A group's title, colour or collapsed state changed.
    case groupsUpdate(Components.Schemas.GroupsUpdateEvent)
    /// `groups.move`: A group moved with its tabs, as one block, so that its first tab is now at group.start (group.count tabs). No tabs.move is sent for its tabs (Chromium's kGroupMove); a client moves the group's tabs itself.
    case groupsMove(Components.Schemas.GroupsMoveEvent)
    /// `groups.delete`: A group is gone.
    case groupsDelete(Components.Schemas.GroupsDeleteEvent)
    /// `groups.membership`: A tab joined a group, left one, or both. A grouped tab that comes into the window gets it after its tabs.insert; a grouped tab that leaves the window (closed, or moved to another) gets it after its tabs.remove, so a client counting a group's members sees the member go.
    case groupsMembership(Components.Schemas.GroupsMembershipEvent)
    /// `toolbar.update`: The toolbar's state changed (never sent twice with the same values).
    case toolbarUpdate(Components.Schemas.ToolbarUpdateEvent)
    /// `window.bounds`: The window moved, was resized, maximized or minimized (topic toolbar; WebDriver's window rect commands set it).
    case windowBounds(Components.Schemas.WindowBoundsEvent)
    /// `location.update`: The location bar's state changed (never sent twice with the same values).
    case locationUpdate(Components.Schemas.LocationUpdateEvent)
    /// `broadcast`: A broadcast property's value: its current value when the stream starts, then every change, never the same value twice.
    case broadcast(Components.Schemas.BroadcastEvent)
    /// `batch.begin`: The events up to batch.end are one change of the model (e.g. close all); they arrive in one piece.
    case batchBegin(Components.Schemas.BatchBeginEvent)
    /// `batch.end`: Ends the batch begun by batch.begin.
    case batchEnd(Components.Schemas.BatchEndEvent)
    /// `browser.closed`: The window was closed; the stream ends after this event.
    case browserClosed(Components.Schemas.BrowserClosedEvent)
    /// `reset`: The client's position is lost (an id from an earlier run, older than the replay buffer, unknown, or the client fell behind its queue): forget what you have and start from this state; live events follow.
    case reset(Components.Schemas.WindowResetEvent)
    /// `ui.tree`: First event of a new stream (topic ui): the presentation tree.
    case uiTree(Components.Schemas.UITreeEvent)
    /// `ui.presented`: A modal screen was presented.
    case uiPresented(Components.Schemas.UIPresentedEvent)
    /// `ui.dismissed`: A modal screen was dismissed (with its pages).
    case uiDismissed(Components.Schemas.UIDismissedEvent)
    /// `ui.pushed`: A settings page was pushed.
    case uiPushed(Components.Schemas.UIPushedEvent)
    /// `ui.popped`: A settings page was popped.
    case uiPopped(Components.Schemas.UIPoppedEvent)
    /// `ui.changed`: A screen's kind or parameters changed (content ↔ new-tab page, tab grid page, omnibox focus).
    case uiChanged(Components.Schemas.UIChangedEvent)
    /// `actions.append`: An action was logged (topic actions).
    case actionsAppend(Components.Schemas.ActionsAppendEvent)
    /// An event this client does not know (a newer server's): its name and JSON.
    case unknown(name: String, data: String)

    /// The event names this client decodes, as the contract lists them.
    public static let names: Set<String> = [
        "tabs.populate", "groups.populate", "tabs.insert", "tabs.remove", "tabs.move", "tabs.replace", "tabs.select", "tabs.update", "tabs.snapshot", "groups.create",
        "groups.update",
        "groups.move", "groups.delete", "groups.membership", "toolbar.update", "window.bounds", "location.update", "broadcast", "batch.begin", "batch.end",
        "browser.closed", "reset", "ui.tree", "ui.presented", "ui.dismissed", "ui.pushed", "ui.popped", "ui.changed", "actions.append",
    ]

    /// Decodes one event's `data` by its name.
    public static func decode(name: String, data: String) throws -> Self {
        let json = Data(data.utf8)
        let decoder = EventDecoding.decoder
        switch name {
        case "tabs.populate": return .tabsPopulate(try decoder.decode(Components.Schemas.TabsPopulateEvent.self, from: json))
        case "groups.populate": return .groupsPopulate(try decoder.decode(Components.Schemas.GroupsPopulateEvent.self, from: json))
        case "tabs.insert": return .tabsInsert(try decoder.decode(Components.Schemas.TabsInsertEvent.self, from: json))
        case "tabs.remove": return .tabsRemove(try decoder.decode(Components.Schemas.TabsRemoveEvent.self, from: json))
        case "tabs.move": return .tabsMove(try decoder.decode(Components.Schemas.TabsMoveEvent.self, from: json))
        case "tabs.replace": return .tabsReplace(try decoder.decode(Components.Schemas.TabsReplaceEvent.self, from: json))
        case "tabs.select": return .tabsSelect(try decoder.decode(Components.Schemas.TabsSelectEvent.self, from: json))
        case "tabs.update": return .tabsUpdate(try decoder.decode(Components.Schemas.TabsUpdateEvent.self, from: json))
        case "tabs.snapshot": return .tabsSnapshot(try decoder.decode(Components.Schemas.TabsSnapshotEvent.self, from: json))
        case "groups.create": return .groupsCreate(try decoder.decode(Components.Schemas.GroupsCreateEvent.self, from: json))
        case "groups.update": return .groupsUpdate(try decoder.decode(Components.Schemas.GroupsUpdateEvent.self, from: json))
        case "groups.move": return .groupsMove(try decoder.decode(Components.Schemas.GroupsMoveEvent.self, from: json))
        case "groups.delete": return .groupsDelete(try decoder.decode(Components.Schemas.GroupsDeleteEvent.self, from: json))
        case "groups.membership": return .groupsMembership(try decoder.decode(Components.Schemas.GroupsMembershipEvent.self, from: json))
        case "toolbar.update": return .toolbarUpdate(try decoder.decode(Components.Schemas.ToolbarUpdateEvent.self, from: json))
        case "window.bounds": return .windowBounds(try decoder.decode(Components.Schemas.WindowBoundsEvent.self, from: json))
        case "location.update": return .locationUpdate(try decoder.decode(Components.Schemas.LocationUpdateEvent.self, from: json))
        case "broadcast": return .broadcast(try decoder.decode(Components.Schemas.BroadcastEvent.self, from: json))
        case "batch.begin": return .batchBegin(try decoder.decode(Components.Schemas.BatchBeginEvent.self, from: json))
        case "batch.end": return .batchEnd(try decoder.decode(Components.Schemas.BatchEndEvent.self, from: json))
        case "browser.closed": return .browserClosed(try decoder.decode(Components.Schemas.BrowserClosedEvent.self, from: json))
        case "reset": return .reset(try decoder.decode(Components.Schemas.WindowResetEvent.self, from: json))
        case "ui.tree": return .uiTree(try decoder.decode(Components.Schemas.UITreeEvent.self, from: json))
        case "ui.presented": return .uiPresented(try decoder.decode(Components.Schemas.UIPresentedEvent.self, from: json))
        case "ui.dismissed": return .uiDismissed(try decoder.decode(Components.Schemas.UIDismissedEvent.self, from: json))
        case "ui.pushed": return .uiPushed(try decoder.decode(Components.Schemas.UIPushedEvent.self, from: json))
        case "ui.popped": return .uiPopped(try decoder.decode(Components.Schemas.UIPoppedEvent.self, from: json))
        case "ui.changed": return .uiChanged(try decoder.decode(Components.Schemas.UIChangedEvent.self, from: json))
        case "actions.append": return .actionsAppend(try decoder.decode(Components.Schemas.ActionsAppendEvent.self, from: json))
        default: return .unknown(name: name, data: data)
        }
    }
}

/// One event of a profile's window list, or of the profile directory (`GET /v1/events`).
public enum ProfileStreamEvent: Sendable {
    /// `browsers.populate`: First event of a new stream: the profile's windows.
    case browsersPopulate(Components.Schemas.BrowsersPopulateEvent)
    /// `browsers.add`: A window was opened in the profile.
    case browsersAdd(Components.Schemas.BrowsersAddEvent)
    /// `browsers.remove`: A window of the profile was closed.
    case browsersRemove(Components.Schemas.BrowsersRemoveEvent)
    /// `profile.deleted`: The profile is gone (deleted, or an off-the-record profile destroyed); the stream ends.
    case profileDeleted(Components.Schemas.ProfileDeletedEvent)
    /// `profile.incognito`: A regular profile's incognito profile was made or destroyed (regular profiles' streams only).
    case profileIncognito(Components.Schemas.ProfileIncognitoEvent)
    /// `profile.webState`: The profile's web state was replaced (counts only, never values).
    case profileWebState(Components.Schemas.ProfileWebStateEvent)
    /// `profiles.populate`: First event of the profile directory stream: every profile, oldest first.
    case profilesPopulate(Components.Schemas.ProfilesPopulateEvent)
    /// `profiles.add`: profiles.add: a profile came (a regular one, or an incognito profile made for one); profiles.update: its name or window count changed.
    case profilesAdd(Components.Schemas.ProfilesChangeEvent)
    /// `profiles.update`: profiles.add: a profile came (a regular one, or an incognito profile made for one); profiles.update: its name or window count changed.
    case profilesUpdate(Components.Schemas.ProfilesChangeEvent)
    /// `profiles.remove`: A profile was deleted (or an incognito profile destroyed).
    case profilesRemove(Components.Schemas.ProfilesRemoveEvent)
    /// `reset`: The client's position is lost: start from this list of windows.
    case reset(Components.Schemas.ProfileResetEvent)
    /// `reset`: The directory's position was lost: every profile now.
    case directoryReset(Components.Schemas.DirectoryResetEvent)
    /// An event this client does not know (a newer server's): its name and JSON.
    case unknown(name: String, data: String)

    /// The event names this client decodes, as the contract lists them.
    public static let names: Set<String> = [
        "browsers.populate", "browsers.add", "browsers.remove", "profile.deleted", "profile.incognito", "profile.webState", "profiles.populate",
        "profiles.add", "profiles.update", "profiles.remove", "reset",
    ]

    /// Decodes one event's `data` by its name.
    public static func decode(name: String, data: String) throws -> Self {
        let json = Data(data.utf8)
        let decoder = EventDecoding.decoder
        switch name {
        case "browsers.populate": return .browsersPopulate(try decoder.decode(Components.Schemas.BrowsersPopulateEvent.self, from: json))
        case "browsers.add": return .browsersAdd(try decoder.decode(Components.Schemas.BrowsersAddEvent.self, from: json))
        case "browsers.remove": return .browsersRemove(try decoder.decode(Components.Schemas.BrowsersRemoveEvent.self, from: json))
        case "profile.deleted": return .profileDeleted(try decoder.decode(Components.Schemas.ProfileDeletedEvent.self, from: json))
        case "profile.incognito": return .profileIncognito(try decoder.decode(Components.Schemas.ProfileIncognitoEvent.self, from: json))
        case "profile.webState": return .profileWebState(try decoder.decode(Components.Schemas.ProfileWebStateEvent.self, from: json))
        case "profiles.populate": return .profilesPopulate(try decoder.decode(Components.Schemas.ProfilesPopulateEvent.self, from: json))
        case "profiles.add": return .profilesAdd(try decoder.decode(Components.Schemas.ProfilesChangeEvent.self, from: json))
        case "profiles.update": return .profilesUpdate(try decoder.decode(Components.Schemas.ProfilesChangeEvent.self, from: json))
        case "profiles.remove": return .profilesRemove(try decoder.decode(Components.Schemas.ProfilesRemoveEvent.self, from: json))
        case "reset":
            if EventDecoding.hasMember("items", in: json) { return .directoryReset(try decoder.decode(Components.Schemas.DirectoryResetEvent.self, from: json)) }
            return .reset(try decoder.decode(Components.Schemas.ProfileResetEvent.self, from: json))
        default: return .unknown(name: name, data: data)
        }
    }
}
