/// What a toolbar shows.
public struct ToolbarState: Sendable, Equatable {
    public var canGoBack: Bool
    public var canGoForward: Bool
    public var loading: Bool
    public var progress: Double
    public var tabCount: Int
    public var incognito: Bool
}

/// What shows a window's toolbar; told only when its state really changed.
public protocol ToolbarConsumer: AnyObject {
    func update(toolbar: ToolbarState)
}
