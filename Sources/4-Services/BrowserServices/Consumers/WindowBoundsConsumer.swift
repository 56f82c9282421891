public import BrowserModel

/// What shows where a window is and how big (a window manager, WebDriver's rect); told only when
/// the bounds really changed.
public protocol WindowBoundsConsumer: AnyObject {
    func update(bounds: WindowBounds)
}
