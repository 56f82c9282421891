public import Foundation

/// One entry of a window's action log: a command, route or REST mutation that went through the
/// window's dispatcher. For debugging and telemetry, never for authorization.
public struct ActionEntry: Sendable, Equatable {
    public var seq: Int
    public var time: Date
    public var name: String
    /// Arguments as short strings (URLs cut to scheme, host and path), sorted by name; empty in
    /// incognito windows.
    public var arguments: [ActionArgument]
    /// `ok`, or the error's kind (e.g. `tabNotFound`).
    public var result: String
    public var durationMicroseconds: Int
}

/// One argument of a logged action. (A sorted list rather than a dictionary: an action is logged on
/// every mutation, and a list costs no hashing.)
public struct ActionArgument: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// What shows or streams a window's action log.
public protocol ActionLogConsumer: AnyObject {
    func appended(_ entry: ActionEntry)
}
