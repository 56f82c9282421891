public import BrowserModel
public import BrowserRecords

// What the placement interpreter (BrowserCluster's) asks of the owner cache and the database: a seam
// of values (profile ids, subjects, owners), so it lives beside ``Placement``. The seams that carry
// requests (forwarding, this instance's holding) are BrowserCluster's `PlacementSeams`.

/// Who holds what: the owner cache in front of the database.
public protocol PlacementLookups: Sendable {
    /// The stored regular profile known to hold `subject` without asking the database (nil: unknown).
    func knownProfile(holding subject: Placement.Subject) -> ProfileID?

    /// The owner known to hold `profile`'s lease without asking the database, when it is another
    /// instance (nil: unknown, or this instance).
    func knownOwner(of profile: ProfileID) -> Placement.Owner?

    /// The stored regular profile that holds `subject`, as the database says (remembered).
    /// - Throws: the database could not be read.
    func storedProfile(holding subject: Placement.Subject) async throws -> ProfileID?

    /// Who holds `profile`'s lease: the known owner elsewhere, else the database's word (a live owner
    /// elsewhere is remembered). Nil: nobody ever held it.
    /// - Throws: the database could not be read.
    func owner(of profile: ProfileID) async throws -> Placement.Owner?

    /// The owner of `profile` is stale (it said 503, or did not answer): ask the database next time.
    func forgetOwner(of profile: ProfileID)

    /// `profile` holds `subject` (an owner's 201 said so): no query next time.
    func remember(profile: ProfileID, holding subject: Placement.Subject)
}
