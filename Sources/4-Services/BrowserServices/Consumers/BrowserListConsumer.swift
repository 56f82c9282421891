public import BrowserModel
public import Foundation

/// A window as a profile's window list shows it.
public struct BrowserItem: Sendable, Equatable {
    public var id: BrowserID
    public var profileID: ProfileID
    public var incognito: Bool
    public var createdAt: Date
}

/// What shows a profile's windows.
public protocol BrowserListConsumer: AnyObject {
    func populate(browsers: [BrowserItem])
    func browserAdded(_ browser: BrowserItem)
    func browserRemoved(id: BrowserID)
}
