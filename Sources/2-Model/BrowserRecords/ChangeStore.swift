public import Foundation

/// A durable store as `StoreWriter` drives it, from its own thread: SQLite's `PersistenceStore`
/// or PostgreSQL's `PostgresStore` (through its blocking adapter), the one protocol both stores
/// implement; it lives with the records so that neither store imports the other. The mediators never see which.
///
/// Every store keeps the same promises (checked by one conformance suite for both):
/// - ``apply(_:)`` commits the changes in one transaction, in order, and returns only once they are
///   durable (a crash right after keeps them); on error, none of them is stored;
/// - the answers of idempotent requests are stored in the same transaction as their change;
/// - ``readAll()`` gives back exactly what was committed;
/// - opening migrates forward only, and refuses a schema newer than this program.
public protocol ChangeStore: AnyObject {
    /// Commits `changes` in one transaction.
    /// - Throws: ``FencedOut`` (nothing written) when some of the changes belong to profiles this
    ///   instance no longer holds: the writer refuses those and commits the others.
    func apply(_ changes: [ChangeSet]) throws
    /// Deletes stored answers of idempotent requests older than `date`.
    func purgeIdempotency(before date: Date) throws
    /// Everything stored.
    func readAll() throws -> StoredState
    /// Commits a small real write: whether the store takes commits again after a failure.
    func probeWrite() throws
    /// A handle to use after a failed commit (SQLite: the file opened afresh, since the connection may
    /// hold a broken view of the WAL; PostgreSQL: the same store, whose pool reconnects by itself).
    func reopened() throws -> any ChangeStore
}

/// Some changes of a batch belong to profiles whose lease this instance no longer holds (another
/// instance took them over): nothing of the batch was written.
public struct FencedOut: Error, Equatable, CustomStringConvertible {
    public let profileIDs: Set<String>

    public init(profileIDs: Set<String>) { self.profileIDs = profileIDs }

    public var description: String { "this instance no longer owns profile(s) \(profileIDs.sorted().joined(separator: ", ")): another instance took them over" }
}
