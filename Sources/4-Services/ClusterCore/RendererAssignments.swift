/// Which renderer renders which profile (issue 55): a pure value state machine, told what happened
/// (a renderer registered, renewed, drained; time passed; which profiles want a renderer) and
/// answering what changed, carried out by the store and the API. Its rules:
///
/// - **Exactly one.** A profile is assigned to one renderer at a time, under a fencing token that only
///   goes up (``Assignment/fence``): a report that carries an older one is refused (``check(_:)``).
/// - **Least loaded first.** A profile that wants a renderer (it has windows, is not excluded) and has
///   none gets the live, non-draining renderer with room that holds the fewest profiles (its pin's,
///   when it is pinned and that renderer has room); ties go to the name that sorts first.
/// - **Leases.** A renderer holds its registration, and so its profiles, for ``leaseDuration`` after
///   each renewal. One that lapses loses them all (``expire(now:)``), and the next placement gives
///   them to others, each under a new fence.
/// - **No flapping.** Profiles move only when their holder's lease lapses or it drains: a renderer that
///   registers again while its lease is live keeps what it holds; one that comes back after its
///   profiles moved gets none of them back (and never more than its share through rebalancing: there
///   is none). A pin is honoured when the profile next needs a renderer, not by moving it.
/// - **Draining.** A draining renderer gets no new profile; ``drain(_:now:)`` hands its profiles to the
///   others that have room at once (those left stay with it until it lapses or others have room).
/// - **Bounded.** At most ``maximumRenderers`` registrations; a registration's capacity is at least 1
///   and at most ``maximumCapacity``.
public struct RendererAssignments: Sendable, Equatable {
    /// A registered renderer.
    public struct Renderer: Sendable, Equatable {
        public var name: String
        /// How many profiles it renders at most.
        public var capacity: Int
        /// Where automation clients reach its DevTools gateway (`ws://host:port`), when it has one.
        public var devtoolsURL: String?
        public var expires: ContinuousClock.Instant
        /// Draining: it gets no new profile, and what it holds goes to others as they have room.
        public var draining: Bool
        /// The profiles it holds now.
        public var profiles: Set<String>

        public init(
            name: String, capacity: Int, devtoolsURL: String?, expires: ContinuousClock.Instant, draining: Bool, profiles: Set<String>
        ) {
            self.name = name
            self.capacity = capacity
            self.devtoolsURL = devtoolsURL
            self.expires = expires
            self.draining = draining
            self.profiles = profiles
        }

        public var load: Int { profiles.count }
        public var hasRoom: Bool { !draining && profiles.count < capacity }
    }

    /// One profile's renderer and the fence its reports must carry.
    public struct Assignment: Sendable, Equatable {
        public var renderer: String
        public var fence: UInt64

        public init(renderer: String, fence: UInt64) {
            self.renderer = renderer
            self.fence = fence
        }
    }

    /// What changed: the store records it, the renderers learn it at their next renewal.
    public enum Change: Sendable, Equatable {
        case assigned(profile: String, renderer: String, fence: UInt64)
        case released(profile: String, renderer: String)
    }

    public enum Registration: Sendable, Equatable {
        /// Registered (or renewed, for a name whose lease is live): what it holds now.
        case registered([String: UInt64])
        /// Refused: too many renderers are registered.
        case tooMany(Int)
    }

    /// What a renderer's report of a profile is, by its fence.
    public enum ReportCheck: Sendable, Equatable {
        /// The profile's current holder, with its current fence.
        case current
        /// Another renderer holds the profile now, or the fence is an older one (409: stop rendering it).
        case fenced(holder: String?)
    }

    public let leaseDuration: Duration
    public let maximumRenderers: Int
    public static let maximumCapacity = 10_000

    public private(set) var renderers: [String: Renderer] = [:]
    public private(set) var assignments: [String: Assignment] = [:]
    /// The last fence handed out (the store keeps it, so fences go up across restarts).
    public private(set) var lastFence: UInt64
    /// Profile → the renderer it should have when it next needs one.
    public private(set) var pins: [String: String] = [:]
    /// Profiles that are never rendered.
    public private(set) var excluded: Set<String> = []

    public init(leaseDuration: Duration, maximumRenderers: Int = 256, lastFence: UInt64 = 0) {
        self.leaseDuration = leaseDuration
        self.maximumRenderers = maximumRenderers
        self.lastFence = lastFence
    }

    /// A machine in the state another instance left in the store: these registrations (their
    /// profiles are the assignments'), these assignments; an assignment whose renderer is not
    /// registered belongs to a lapsed one (the next placement gives it to another).
    public init(
        leaseDuration: Duration, maximumRenderers: Int = 256, lastFence: UInt64, renderers: [Renderer], assignments: [String: Assignment],
        pins: [String: String] = [:], excluded: Set<String> = [], now: ContinuousClock.Instant
    ) {
        self.init(leaseDuration: leaseDuration, maximumRenderers: maximumRenderers, lastFence: max(lastFence, assignments.values.map(\.fence).max() ?? 0))
        self.pins = pins
        self.excluded = excluded
        for renderer in renderers {
            var renderer = renderer
            renderer.profiles = []
            self.renderers[renderer.name] = renderer
        }
        for (profile, assignment) in assignments {
            self.assignments[profile] = assignment
            if self.renderers[assignment.renderer] == nil {
                self.renderers[assignment.renderer] = Renderer(
                    name: assignment.renderer, capacity: 1, devtoolsURL: nil, expires: now, draining: false, profiles: [])
            }
            self.renderers[assignment.renderer]?.profiles.insert(profile)
        }
    }

    /// The assignments the store kept (browserd started again): each holder is registered as it was,
    /// with a lease from `now` (its capacity what it holds), so a renderer that renews within the
    /// lease keeps its profiles; one that does not lapses as any other. Fences go on from `lastFence`.
    public mutating func restore(_ stored: [(profile: String, renderer: String, fence: UInt64)], lastFence: UInt64, now: ContinuousClock.Instant) {
        self.lastFence = max(self.lastFence, lastFence, stored.map(\.fence).max() ?? 0)
        for (profile, renderer, fence) in stored {
            assignments[profile] = Assignment(renderer: renderer, fence: fence)
            renderers[renderer, default: Renderer(name: renderer, capacity: 0, devtoolsURL: nil, expires: now + leaseDuration, draining: false, profiles: [])]
                .profiles.insert(profile)
        }
        for (name, renderer) in renderers { renderers[name]?.capacity = max(1, renderer.profiles.count) }
    }

    /// The registrations whose lease is live at `now`, by name.
    public func live(at now: ContinuousClock.Instant) -> [Renderer] {
        renderers.values.filter { $0.expires > now }.sorted { $0.name < $1.name }
    }

    /// A renderer registers (or, with a live lease under `name`, renews): its lease starts again, its
    /// capacity and gateway are taken as given (clamped to 1…``maximumCapacity``), its draining ends.
    public mutating func register(name: String, capacity: Int, devtoolsURL: String? = nil, now: ContinuousClock.Instant) -> Registration {
        let live = renderers[name].map { $0.expires > now } ?? false
        if !live {
            // A lapsed registration under this name is gone with what it held (a returning renderer
            // does not take back what moved).
            _ = releaseAll(of: name)
            renderers[name] = nil
            // Lapsed ones do not count (``expire(now:)`` removes them with their profiles).
            guard renderers.values.filter({ $0.expires > now }).count < maximumRenderers else { return .tooMany(maximumRenderers) }
        }
        let profiles = renderers[name]?.profiles ?? []
        renderers[name] = Renderer(
            name: name, capacity: min(max(capacity, 1), Self.maximumCapacity), devtoolsURL: devtoolsURL, expires: now + leaseDuration,
            draining: false, profiles: profiles)
        return .registered(held(by: name))
    }

    /// A renderer renews its lease: what it holds now, or nil when it is not registered (its lease
    /// lapsed: it registers again and gets what placement gives it).
    public mutating func renew(_ name: String, now: ContinuousClock.Instant) -> [String: UInt64]? {
        guard var renderer = renderers[name], renderer.expires > now else { return nil }
        renderer.expires = now + leaseDuration
        renderers[name] = renderer
        return held(by: name)
    }

    /// The profiles `name` holds, with their fences.
    public func held(by name: String) -> [String: UInt64] {
        var held: [String: UInt64] = [:]
        for profile in renderers[name]?.profiles ?? [] { held[profile] = assignments[profile]?.fence }
        return held
    }

    /// Renderers whose lease lapsed are gone, with their profiles (placement gives those to others).
    public mutating func expire(now: ContinuousClock.Instant) -> [Change] {
        let lapsed = renderers.values.filter { $0.expires <= now }.map(\.name).sorted()
        var changes: [Change] = []
        for name in lapsed {
            changes += releaseAll(of: name)
            renderers[name] = nil
        }
        return changes
    }

    /// Brings the assignments to `wanting` (the profiles with windows): a profile that no longer wants
    /// a renderer (its windows closed, it was deleted) or is excluded is released; one that wants one
    /// and has none gets one, least loaded first, if any has room.
    public mutating func place(wanting: Set<String>, now: ContinuousClock.Instant) -> [Change] {
        var changes = expire(now: now)
        for (profile, assignment) in assignments.sorted(by: { $0.key < $1.key }) where !wanting.contains(profile) || excluded.contains(profile) {
            changes.append(release(profile, from: assignment.renderer))
        }
        for profile in wanting.sorted() where assignments[profile] == nil && !excluded.contains(profile) {
            guard let renderer = choose(for: profile) else { continue }
            changes.append(assign(profile, to: renderer))
        }
        return changes
    }

    /// `name` drains: it gets no new profile, and each profile it holds goes to another renderer with
    /// room now (a new fence: the drained one's reports of it are refused from then on).
    public mutating func drain(_ name: String, now: ContinuousClock.Instant) -> [Change] {
        guard renderers[name] != nil else { return [] }
        renderers[name]?.draining = true
        var changes: [Change] = []
        for profile in (renderers[name]?.profiles ?? []).sorted() {
            guard let other = choose(for: profile) else { continue }
            changes.append(release(profile, from: name))
            changes.append(assign(profile, to: other))
        }
        return changes
    }

    /// `name` leaves (it stopped): released at once, as if its lease had lapsed.
    public mutating func unregister(_ name: String) -> [Change] {
        let changes = releaseAll(of: name)
        renderers[name] = nil
        return changes
    }

    /// Pins `profile` to `renderer` (nil: unpinned): honoured when the profile next needs a renderer.
    public mutating func pin(_ profile: String, to renderer: String?) { pins[profile] = renderer }

    /// Excludes `profile` from rendering (or lets it be rendered again); an excluded profile's
    /// renderer lets it go at the next placement.
    public mutating func exclude(_ profile: String, _ excluded: Bool) {
        if excluded { self.excluded.insert(profile) } else { self.excluded.remove(profile) }
    }

    /// Whether `renderer`'s report of `profile` under `fence` is the current holder's.
    public func check(renderer: String, profile: String, fence: UInt64) -> ReportCheck {
        guard let assignment = assignments[profile], assignment.renderer == renderer, assignment.fence == fence else {
            return .fenced(holder: assignments[profile]?.renderer)
        }
        return .current
    }

    private func choose(for profile: String) -> String? {
        if let pinned = pins[profile], let renderer = renderers[pinned], renderer.hasRoom { return pinned }
        return renderers.values.filter(\.hasRoom).min { ($0.load, $0.name) < ($1.load, $1.name) }?.name
    }

    private mutating func assign(_ profile: String, to renderer: String) -> Change {
        lastFence += 1
        assignments[profile] = Assignment(renderer: renderer, fence: lastFence)
        renderers[renderer]?.profiles.insert(profile)
        return .assigned(profile: profile, renderer: renderer, fence: lastFence)
    }

    private mutating func release(_ profile: String, from renderer: String) -> Change {
        assignments[profile] = nil
        renderers[renderer]?.profiles.remove(profile)
        return .released(profile: profile, renderer: renderer)
    }

    private mutating func releaseAll(of name: String) -> [Change] {
        (renderers[name]?.profiles ?? []).sorted().map { release($0, from: name) }
    }
}
