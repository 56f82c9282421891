public import BrowserModel
public import Foundation

/// Which renderer renders which profile (issue 55), as the API sees it: renderers register and
/// renew (and so learn the profiles they hold, each under a fencing token), drain and leave; reports
/// that carry a fence that is no longer current are refused. The decisions are ClusterCore's
/// `RendererAssignments`; the app keeps them durable in the store (`StoredRendererRegistry`).
public protocol RendererRegistry: Sendable {
    /// Registers `registration.name` (or renews its lease): what it holds now, once the assignments
    /// it changed are durable. - Throws: ``RendererRegistryError``, or a storage error (503).
    func register(_ registration: RendererRegistration) async throws -> RendererStatus
    /// `name` drains: its profiles go to others with room now (nil: no such renderer).
    func drain(_ name: String) async throws -> RendererStatus?
    /// `name` leaves: its profiles are released at once (false: no such renderer).
    func unregister(_ name: String) async throws -> Bool
    /// The live registrations, by name.
    func renderers() -> [RendererStatus]
    /// The regular profiles `name` holds now (what its token reaches).
    func profiles(heldBy name: String) -> Set<ProfileID>
    /// `profile`'s renderer now (nil: none holds it).
    func holder(of profile: ProfileID) -> RendererHold?
    /// Pins `profile` to a renderer (nil: none; honoured when it next needs one) and excludes it from
    /// rendering or not (an excluded profile's renderer lets it go at once); stored before it returns.
    func setRendering(of profile: ProfileID, pin: String?, excluded: Bool) async throws
    /// The pin and exclusion of `profile`.
    func rendering(of profile: ProfileID) -> (pin: String?, excluded: Bool)
    /// Calls `tell` with the renderers a decision gave profiles or took some from (but the one whose
    /// renewal it answered): they renew at once (`GET /v1/renderers/{name}/events`).
    func onHoldingsChange(_ tell: @escaping @Sendable (Set<String>) -> Void)
    /// `profiles` have windows now: those without a live renderer are placed at once when a renderer
    /// has room (not at some renderer's next renewal), and their renderers told.
    func windowsOpened(in profiles: Set<ProfileID>)
}

/// What a renderer says of itself when it registers or renews.
public struct RendererRegistration: Sendable, Equatable {
    public var name: String
    /// How many profiles it renders at most.
    public var capacity: Int
    /// Where automation clients reach its DevTools gateway.
    public var devtoolsURL: String?

    public init(name: String, capacity: Int, devtoolsURL: String?) {
        self.name = name
        self.capacity = capacity
        self.devtoolsURL = devtoolsURL
    }
}

/// A profile's renderer, and the fence its reports carry.
public struct RendererHold: Sendable, Equatable {
    public var renderer: String
    public var fence: UInt64

    public init(renderer: String, fence: UInt64) {
        self.renderer = renderer
        self.fence = fence
    }
}

/// A registered renderer, as `GET /v1/renderers` shows it.
public struct RendererStatus: Sendable, Equatable {
    public var name: String
    public var capacity: Int
    public var devtoolsURL: String?
    public var draining: Bool
    public var expiresAt: Date
    /// How long its registration lasts after each renewal (it renews every third of it).
    public var leaseSeconds: Int
    /// The profiles it holds, with their fences, by profile id.
    public var profiles: [(profile: String, fence: UInt64)]

    public init(
        name: String, capacity: Int, devtoolsURL: String?, draining: Bool, expiresAt: Date, leaseSeconds: Int, profiles: [(profile: String, fence: UInt64)]
    ) {
        self.leaseSeconds = leaseSeconds
        self.name = name
        self.capacity = capacity
        self.devtoolsURL = devtoolsURL
        self.draining = draining
        self.expiresAt = expiresAt
        self.profiles = profiles
    }

    public static func == (a: RendererStatus, b: RendererStatus) -> Bool {
        a.name == b.name && a.capacity == b.capacity && a.devtoolsURL == b.devtoolsURL && a.draining == b.draining && a.expiresAt == b.expiresAt
            && a.leaseSeconds == b.leaseSeconds
            && a.profiles.map(\.profile) == b.profiles.map(\.profile) && a.profiles.map(\.fence) == b.profiles.map(\.fence)
    }
}

public enum RendererRegistryError: Error, Equatable {
    /// As many renderers as allowed are registered.
    case tooMany(Int)
}
