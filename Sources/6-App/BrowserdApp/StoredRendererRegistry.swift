import BrowserAPI
import BrowserModel
import BrowserRecords
import BrowserServices
import ClusterCore
import Foundation
import HTTPServer
import Logging
import Synchronization

/// The API's ``RendererRegistry``, made of ClusterCore's ``RendererAssignments`` (the decisions) and
/// the store (what they changed, committed before a renderer is answered: a fence once answered is
/// never handed out again, and an assignment survives a restart).
///
/// Decisions and their commits go one at a time (``SerialGate``), so the store sees them in the
/// order they were made; what a failed commit did not write stays pending and goes with the next
/// (the caller got 503: it renews again). Which profiles want a renderer is asked at each decision:
/// every regular profile in the directory with windows, its off-the-record profile's included.
///
/// With several instances on one database (``share(_:)``), the decisions are the database's: each is
/// made on the stored state under a lock every instance takes, and written in the same transaction
/// (``SharedRendererState``); what this instance answers from memory (a report's fence, the list) is
/// the state after its own last decision, or read again every second.
final class StoredRendererRegistry: RendererRegistry {
    private struct State {
        var machine: RendererAssignments
        /// Changes not yet durable, in order.
        var pending: [RendererAssignments.Change] = []
        /// Pins and exclusions not yet durable, by profile.
        var pendingRenderings: [String: RenderingRecord] = [:]
    }

    let leaseDuration: Duration
    private let state: Mutex<State>
    private let gate = SerialGate()
    private let wanting: @Sendable () async throws -> Set<String>
    private let commit: @Sendable (ChangeSet) async throws -> Void
    private let maximumRenderers: Int
    /// The database every instance decides on (nil: this instance decides alone).
    private let shared = Mutex<(any SharedRendererState)?>(nil)
    private let refresher = Mutex<Task<Void, Never>?>(nil)
    /// Told the renderers a decision gave or took profiles (``onHoldingsChange(_:)``).
    private let holdingsChanged = Mutex<(@Sendable (Set<String>) -> Void)?>(nil)
    /// Profiles that opened windows and wait to be placed, and whether a placement runs.
    private let placing = Mutex<(profiles: Set<String>, running: Bool)>(([], false))

    /// - Parameters:
    ///   - wanting: the regular profiles that want a renderer now (they have windows).
    ///   - commit: makes a change durable.
    init(
        leaseDuration: Duration = .seconds(10), maximumRenderers: Int = 256, wanting: @escaping @Sendable () async throws -> Set<String>,
        commit: @escaping @Sendable (ChangeSet) async throws -> Void
    ) {
        self.leaseDuration = leaseDuration
        self.wanting = wanting
        self.commit = commit
        self.maximumRenderers = maximumRenderers
        state = Mutex(State(machine: RendererAssignments(leaseDuration: leaseDuration, maximumRenderers: maximumRenderers)))
    }

    /// Every regular profile with windows (its own or its off-the-record profile's): those of
    /// `service`'s directory, and with several instances every stored one (`stored`: the directory
    /// of a starting instance may not know them all yet, and a profile it does not know must not
    /// lose its renderer).
    static func profilesWithWindows(
        _ service: BrowserService, stored: (@Sendable () async throws -> [ProfileSnapshot])?
    ) async throws -> Set<String> {
        var wanting = Set<String>()
        for profile in service.directoryProfiles() where profile.windowCount > 0 {
            wanting.insert((profile.incognito ? profile.parentID ?? profile.id : profile.id).rawValue)
        }
        for profile in try await stored?() ?? [] where profile.windowCount > 0 { wanting.insert(profile.id.rawValue) }
        return wanting
    }

    /// The assignments the store kept (at start, before any renderer is answered).
    func restore(_ stored: [RendererAssignmentRecord], lastFence: UInt64, renderings: [RenderingRecord] = []) {
        let now = ContinuousClock.now
        state.withLock { state in
            state.machine.restore(stored.map { ($0.profileID, $0.renderer, $0.fence) }, lastFence: lastFence, now: now)
            for rendering in renderings {
                state.machine.pin(rendering.profileID, to: rendering.pin)
                state.machine.exclude(rendering.profileID, rendering.excluded)
            }
        }
    }

    func setRendering(of profile: ProfileID, pin: String?, excluded: Bool) async throws {
        _ = try await decide { machine, wanting, now -> (Bool, [RendererAssignments.Change]) in
            machine.pin(profile.rawValue, to: pin)
            machine.exclude(profile.rawValue, excluded)
            return (true, machine.place(wanting: wanting, now: now))
        }
    }

    func rendering(of profile: ProfileID) -> (pin: String?, excluded: Bool) {
        state.withLock { ($0.machine.pins[profile.rawValue], $0.machine.excluded.contains(profile.rawValue)) }
    }

    /// The pins and exclusions `after` changed from `before`.
    static func renderings(from before: RendererAssignments, to after: RendererAssignments) -> [RenderingRecord] {
        let profiles = Set(before.pins.keys).union(after.pins.keys).union(before.excluded).union(after.excluded)
        return profiles.sorted().compactMap { profile in
            let (pin, excluded) = (after.pins[profile], after.excluded.contains(profile))
            guard pin != before.pins[profile] || excluded != before.excluded.contains(profile) else { return nil }
            return RenderingRecord(profileID: profile, pin: pin, excluded: excluded)
        }
    }

    /// From now on, decisions are made on `store` (several instances), and what this instance knows
    /// of them is read again every `refreshEvery`. A failed read keeps the last view, logged once per
    /// run of failures: it cannot outlive the leases in it (a renderer whose lease lapsed in the view
    /// holds nothing, so its reports are refused), and the database's outage is `/readyz`'s blocker.
    func share(_ store: any SharedRendererState, refreshEvery: Duration = .seconds(1), logger: Logger? = nil) async throws {
        let machine = try await store.read(leaseDuration: leaseDuration, maximumRenderers: maximumRenderers)
        state.withLock { $0.machine = machine }
        shared.withLock { $0 = store }
        let (lease, maximum) = (leaseDuration, maximumRenderers)
        let task = Task { [weak self] in
            var failures = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: refreshEvery)
                do {
                    let machine = try await store.read(leaseDuration: lease, maximumRenderers: maximum)
                    if failures > 0 { logger?.notice("the renderers' assignments are read again", metadata: ["failedReads": "\(failures)"]) }
                    failures = 0
                    self?.state.withLock { $0.machine = machine }
                } catch {
                    if failures == 0 { logger?.warning("the renderers' assignments could not be read; answering from the last view: \(error)") }
                    failures += 1
                }
            }
        }
        refresher.withLock { $0 = task }
    }

    /// Stops reading the shared state again (the server stops).
    func stop() { refresher.withLock { $0?.cancel() } }

    func register(_ registration: RendererRegistration) async throws -> RendererStatus {
        let outcome = try await decide(answering: registration.name) { machine, wanting, now -> (RendererAssignments.Registration, [RendererAssignments.Change]) in
            let registered = machine.register(
                name: registration.name, capacity: registration.capacity, devtoolsURL: registration.devtoolsURL, now: now)
            guard case .registered = registered else { return (registered, []) }
            return (registered, machine.place(wanting: wanting, now: now))
        }
        if case .tooMany(let limit) = outcome { throw RendererRegistryError.tooMany(limit) }
        guard let status = status(of: registration.name) else { throw RendererRegistryError.tooMany(0) }
        return status
    }

    func drain(_ name: String) async throws -> RendererStatus? {
        let known = try await decide { machine, wanting, now -> (Bool, [RendererAssignments.Change]) in
            guard machine.live(at: now).contains(where: { $0.name == name }) else { return (false, machine.place(wanting: wanting, now: now)) }
            let placed = machine.place(wanting: wanting, now: now)
            return (true, placed + machine.drain(name, now: now))
        }
        return known ? status(of: name) : nil
    }

    func unregister(_ name: String) async throws -> Bool {
        try await decide { machine, wanting, now -> (Bool, [RendererAssignments.Change]) in
            guard machine.live(at: now).contains(where: { $0.name == name }) else { return (false, []) }
            let released = machine.unregister(name)
            return (true, released + machine.place(wanting: wanting, now: now))
        }
    }

    func onHoldingsChange(_ tell: @escaping @Sendable (Set<String>) -> Void) { holdingsChanged.withLock { $0 = tell } }

    /// Places the profiles that opened windows at once (rather than at some renderer's next renewal)
    /// when one of them has no live renderer and a renderer has room; their renderers are told.
    /// Placements run one after another, each taking every profile asked for since the last began.
    func windowsOpened(in profiles: Set<ProfileID>) {
        let now = ContinuousClock.now
        let unplaced = state.withLock { state -> [String] in
            let machine = state.machine
            guard machine.live(at: now).contains(where: { !$0.draining && $0.profiles.count < $0.capacity }) else { return [] }
            return profiles.map(\.rawValue).filter { profile in
                guard !machine.excluded.contains(profile) else { return false }
                guard let assignment = machine.assignments[profile], let holder = machine.renderers[assignment.renderer] else { return true }
                return holder.expires <= now
            }
        }
        guard !unplaced.isEmpty else { return }
        let start = placing.withLock { placing -> Bool in
            placing.profiles.formUnion(unplaced)
            defer { placing.running = true }
            return !placing.running
        }
        guard start else { return }
        Task { [weak self] in await self?.place() }
    }

    private func place() async {
        while true {
            let profiles = placing.withLock { placing -> Set<String> in
                defer { placing.profiles = [] }
                if placing.profiles.isEmpty { placing.running = false }
                return placing.profiles
            }
            guard !profiles.isEmpty else { return }
            // A failed placement is decided again at the renderers' next renewals.
            guard let (_, told) = try? await decideTelling(answering: nil, { machine, wanting, now in ((), machine.place(wanting: wanting, now: now)) })
            else { continue }
            // With several instances another may have placed them already: their holders are told here
            // too (a renderer's stream may be open on this instance only).
            let holders = Set(profiles.compactMap { holder(of: ProfileID(rawValue: $0))?.renderer }).subtracting(told)
            if !holders.isEmpty { holdingsChanged.withLock { $0 }?(holders) }
        }
    }

    func renderers() -> [RendererStatus] {
        let now = ContinuousClock.now
        let (live, machine) = state.withLock { ($0.machine.live(at: now), $0.machine) }
        return live.map { Self.status($0, machine: machine, now: now) }
    }

    func profiles(heldBy name: String) -> Set<ProfileID> {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let renderer = state.machine.renderers[name], renderer.expires > now else { return [] }
            return Set(renderer.profiles.map(ProfileID.init(rawValue:)))
        }
    }

    func holder(of profile: ProfileID) -> RendererHold? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let assignment = state.machine.assignments[profile.rawValue],
                let renderer = state.machine.renderers[assignment.renderer], renderer.expires > now
            else { return nil }
            return RendererHold(renderer: assignment.renderer, fence: assignment.fence)
        }
    }

    /// How many profiles are assigned, and how many renderers are live (for `/metrics`).
    func counts() -> (renderers: Int, assigned: Int) {
        let now = ContinuousClock.now
        return state.withLock { state in
            let live = state.machine.live(at: now)
            return (live.count, live.reduce(0) { $0 + $1.profiles.count })
        }
    }

    private func status(of name: String) -> RendererStatus? {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.machine.renderers[name].flatMap { $0.expires > now ? Self.status($0, machine: state.machine, now: now) : nil }
        }
    }

    private static func status(_ renderer: RendererAssignments.Renderer, machine: RendererAssignments, now: ContinuousClock.Instant) -> RendererStatus {
        let left = now.duration(to: renderer.expires)
        let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
        return RendererStatus(
            name: renderer.name, capacity: renderer.capacity, devtoolsURL: renderer.devtoolsURL, draining: renderer.draining,
            expiresAt: Date().addingTimeInterval(seconds), leaseSeconds: Int(machine.leaseDuration.components.seconds),
            profiles: renderer.profiles.sorted().map { ($0, machine.assignments[$0]?.fence ?? 0) })
    }

    /// Runs one decision on the machine and commits what it changed (with whatever earlier commits
    /// left pending) before returning; one decision at a time. The renderers whose profiles it
    /// changed are told (``onHoldingsChange(_:)``), but for `answering`, whose renewal it answers.
    private func decide<T: Sendable>(
        answering: String? = nil,
        _ body: @escaping @Sendable (inout RendererAssignments, Set<String>, ContinuousClock.Instant) -> (T, [RendererAssignments.Change])
    ) async throws -> T {
        try await decideTelling(answering: answering, body).0
    }

    /// ``decide(answering:_:)``, and the renderers it told.
    private func decideTelling<T: Sendable>(
        answering: String?,
        _ body: @escaping @Sendable (inout RendererAssignments, Set<String>, ContinuousClock.Instant) -> (T, [RendererAssignments.Change])
    ) async throws -> (T, Set<String>) {
        let changes = Mutex<[RendererAssignments.Change]>([])
        let tracked: @Sendable (inout RendererAssignments, Set<String>, ContinuousClock.Instant) -> (T, [RendererAssignments.Change]) = {
            machine, wanting, now in
            let (outcome, made) = body(&machine, wanting, now)
            changes.withLock { $0 = made }
            return (outcome, made)
        }
        let outcome = try await decideOnce(tracked)
        var told = Set(
            changes.withLock { $0 }.map { change -> String in
                switch change {
                case .assigned(_, let renderer, _), .released(_, let renderer): renderer
                }
            })
        if let answering { told.remove(answering) }
        if !told.isEmpty { holdingsChanged.withLock { $0 }?(told) }
        return (outcome, told)
    }

    private func decideOnce<T: Sendable>(
        _ body: @escaping @Sendable (inout RendererAssignments, Set<String>, ContinuousClock.Instant) -> (T, [RendererAssignments.Change])
    ) async throws -> T {
        let wanting = self.wanting
        return try await gate.run {
            let profiles: Set<String>
            do {
                profiles = try await wanting()
            } catch {
                throw HTTPError.storageUnavailable("Which profiles have windows could not be read; nothing was decided.", retryAfter: 2)
            }
            if let store = shared.withLock({ $0 }) {
                let (outcome, machine): (T, RendererAssignments)
                do {
                    (outcome, machine) = try await store.decide(leaseDuration: leaseDuration, maximumRenderers: maximumRenderers) { machine, now in
                        body(&machine, profiles, now)
                    }
                } catch {
                    throw HTTPError.storageUnavailable("The renderers' assignments could not be decided in the database; nothing changed.", retryAfter: 2)
                }
                state.withLock { $0.machine = machine }
                return outcome
            }
            let now = ContinuousClock.now
            let (outcome, change, count, renderings) = state.withLock { state -> (T, ChangeSet, Int, [String: RenderingRecord]) in
                let before = state.machine
                let (outcome, changes) = body(&state.machine, profiles, now)
                state.pending += changes
                for rendering in Self.renderings(from: before, to: state.machine) { state.pendingRenderings[rendering.profileID] = rendering }
                var change = Self.changeSet(state.pending, lastFence: state.machine.lastFence)
                change.renderings = state.pendingRenderings.values.sorted { $0.profileID < $1.profileID }
                return (outcome, change, state.pending.count, state.pendingRenderings)
            }
            let done: @Sendable (inout State) -> Void = { state in
                state.pending.removeFirst(count)
                for (profile, rendering) in renderings where state.pendingRenderings[profile] == rendering { state.pendingRenderings[profile] = nil }
            }
            guard change.touchesRenderers else {
                state.withLock { done(&$0) }
                return outcome
            }
            do {
                try await commit(change)
            } catch {
                throw HTTPError.storageUnavailable("The renderers' assignments could not be saved; nothing was answered.", retryAfter: 2)
            }
            state.withLock { done(&$0) }
            return outcome
        }
    }

    /// The durable form of `changes`: each profile's last change (an assignment written, or a release).
    static func changeSet(_ changes: [RendererAssignments.Change], lastFence: UInt64) -> ChangeSet {
        var last: [String: RendererAssignments.Change] = [:]
        for change in changes {
            switch change {
            case .assigned(let profile, _, _), .released(let profile, _): last[profile] = change
            }
        }
        var set = ChangeSet()
        for (_, change) in last.sorted(by: { $0.key < $1.key }) {
            switch change {
            case .assigned(let profile, let renderer, let fence):
                set.rendererAssignments.append(RendererAssignmentRecord(profileID: profile, renderer: renderer, fence: fence))
            case .released(let profile, _):
                set.releasedRendererAssignments.append(profile)
            }
        }
        if !changes.isEmpty { set.rendererFence = lastFence }
        return set
    }
}

/// The renderers' state in a database several instances share: each decision is made on the stored
/// state under a lock every instance takes, and written in the same transaction.
protocol SharedRendererState: Sendable {
    /// Runs `body` on the stored state; its outcome, and the state after it.
    func decide<T: Sendable>(
        leaseDuration: Duration, maximumRenderers: Int,
        _ body: @escaping @Sendable (inout RendererAssignments, ContinuousClock.Instant) -> (T, [RendererAssignments.Change])
    ) async throws -> (T, RendererAssignments)
    /// The stored state now.
    func read(leaseDuration: Duration, maximumRenderers: Int) async throws -> RendererAssignments
}
