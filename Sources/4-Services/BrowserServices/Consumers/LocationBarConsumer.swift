/// What a location bar shows.
public struct LocationBarState: Sendable, Equatable {
    /// The active tab's URL as text ("" without an active tab).
    public var displayURL: String
    /// Whether the page is served over https.
    public var secure: Bool
}

/// What shows a window's location bar; told only when its state really changed.
public protocol LocationBarConsumer: AnyObject {
    func update(location: LocationBarState)
}
