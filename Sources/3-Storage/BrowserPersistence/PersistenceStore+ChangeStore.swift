public import BrowserRecords
public import Foundation

extension PersistenceStore: ChangeStore {
    public func purgeIdempotency(before date: Date) throws {
        let _: Int = try purgeIdempotency(before: date)
    }

    public func readAll() throws -> StoredState { try load() }

    public func reopened() throws -> any ChangeStore { try PersistenceStore(path: path) }
}
