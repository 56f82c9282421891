public import Foundation

/// A profile (Chromium's BrowserState / ProfileIOS): regular, or the off-the-record one of a regular
/// profile (spec §7). A regular profile has at most one off-the-record profile, created on demand and
/// destroyed explicitly or with its parent.
public final class BrowserState {
    public let id: ProfileID
    public var name: String
    public let isOffTheRecord: Bool
    public let createdAt: Date
    /// For an off-the-record profile, its regular one.
    public private(set) weak var original: BrowserState?
    /// For a regular profile, its off-the-record one if it exists.
    public private(set) var offTheRecord: BrowserState?
    /// The bytes of text the profile may hold and holds; an off-the-record profile shares its
    /// regular profile's.
    public let budget: ByteBudget
    /// Its cookies and localStorage (issue 52; ``replaceStorageState(_:limits:)``), counted in its budget.
    public internal(set) var storageState: StorageState = .empty
    /// What ``storageState`` is charged to the budget.
    var storageStateBytes = 0
    var stateObservers: [WeakBrowserStateObserver] = []

    /// Creates a regular profile.
    public init(
        id: ProfileID = .make(), name: String, createdAt: Date = Date(),
        budget: ByteBudget = ByteBudget(limit: ModelLimits().profileBytes)
    ) {
        self.id = id
        self.budget = budget
        self.name = name
        self.isOffTheRecord = false
        self.createdAt = createdAt
    }

    private init(offTheRecordOf original: BrowserState, id: ProfileID) {
        self.id = id
        self.name = original.name
        self.isOffTheRecord = true
        self.createdAt = Date()
        self.original = original
        self.budget = original.budget
    }

    /// The off-the-record profile, created when missing.
    /// - Returns: the profile and whether it was created now.
    /// - Throws: when called on an off-the-record profile.
    public func offTheRecordCreatingIfNeeded(id: ProfileID = .make()) throws -> (profile: BrowserState, created: Bool) {
        guard !isOffTheRecord else {
            throw ModelError.notOffTheRecordCapable("an off-the-record profile has no off-the-record profile of its own")
        }
        if let offTheRecord { return (offTheRecord, false) }
        let created = BrowserState(offTheRecordOf: self, id: id)
        offTheRecord = created
        return (created, true)
    }

    /// Forgets the off-the-record profile (its windows must be closed first by the owner).
    func destroyOffTheRecord() {
        offTheRecord?.releaseStorageState()
        offTheRecord = nil
    }
}
