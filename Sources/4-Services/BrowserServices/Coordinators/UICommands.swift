import BrowserModel

/// The presentation commands coordinators register while started. Their arguments come as JSON-like
/// values (`POST …/commands/{name}` with `args`); each answers the tree and its changes.
enum UICommands {
    static let showTabGrid = Command<CommandArguments, CommandResult>("showTabGrid")
    static let hideTabGrid = Command<CommandArguments, CommandResult>("hideTabGrid")
    static let showSettings = Command<CommandArguments, CommandResult>("showSettings")
    static let popSettings = Command<CommandArguments, CommandResult>("popSettings")
    static let dismissModal = Command<CommandArguments, CommandResult>("dismissModal")
    static let showHistory = Command<CommandArguments, CommandResult>("showHistory")
    static let share = Command<CommandArguments, CommandResult>("share")
    static let focusOmnibox = Command<CommandArguments, CommandResult>("focusOmnibox")
    /// A deep link, parsed: the router takes the window there.
    static let route = Command<Route, PresentationResult>("route")
}

/// The presentation tree after a navigation, with what changed.
public struct PresentationResult: Sendable, Equatable {
    public var tree: UINode
    public var changes: [UIChange]
}
