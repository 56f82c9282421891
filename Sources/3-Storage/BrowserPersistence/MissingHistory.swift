/// A stored tab whose history is not in the store (`tab_histories` holds no row for it): a read that
/// needs it fails, saying so, rather than taking the tab for one with no history (or calling the
/// history malformed). Every write of a tab writes its history in the same transaction, so this
/// is a damaged or hand-edited file.
public struct MissingHistory: Error, Equatable, CustomStringConvertible {
    public let tabID: String

    public var description: String { "tab \(tabID)'s history is missing from the store (tab_histories has no row for it)" }
}
