#if PostgreSQL
    import BrowserPostgres
    import BrowserRecords
    import ClusterCore

    /// ``SharedRendererState`` in PostgreSQL (several instances): the machine is made from the stored
    /// state in the decision's transaction (under the renderers' lock), and what it changed is written
    /// back in it — registrations with their lease by the database's clock, assignments, the last fence.
    struct PostgresRendererState: SharedRendererState {
        let store: PostgresStore

        func decide<T: Sendable>(
            leaseDuration: Duration, maximumRenderers: Int,
            _ body: @escaping @Sendable (inout RendererAssignments, ContinuousClock.Instant) -> (T, [RendererAssignments.Change])
        ) async throws -> (T, RendererAssignments) {
            try await store.withRendererState { stored in
                let now = ContinuousClock.now
                var machine = Self.machine(stored, leaseDuration: leaseDuration, maximumRenderers: maximumRenderers, now: now)
                let before = machine
                let (outcome, changes) = body(&machine, now)
                var change = RendererStateChange()
                for (name, renderer) in machine.renderers.sorted(by: { $0.key < $1.key }) {
                    var was = before.renderers[name]
                    was?.profiles = renderer.profiles
                    guard was != renderer else { continue }
                    let left = now.duration(to: renderer.expires)
                    change.renderers.append(
                        StoredRenderer(
                            name: name, capacity: renderer.capacity, devtoolsURL: renderer.devtoolsURL, draining: renderer.draining,
                            secondsLeft: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18))
                }
                change.removedRenderers = before.renderers.keys.filter { machine.renderers[$0] == nil }.sorted()
                let set = StoredRendererRegistry.changeSet(changes, lastFence: machine.lastFence)
                change.assignments = set.rendererAssignments
                change.releasedAssignments = set.releasedRendererAssignments
                change.lastFence = set.rendererFence
                change.renderings = StoredRendererRegistry.renderings(from: before, to: machine)
                return ((outcome, machine), change)
            }
        }

        func read(leaseDuration: Duration, maximumRenderers: Int) async throws -> RendererAssignments {
            Self.machine(try await store.rendererState(), leaseDuration: leaseDuration, maximumRenderers: maximumRenderers, now: .now)
        }

        static func machine(_ stored: StoredRendererState, leaseDuration: Duration, maximumRenderers: Int, now: ContinuousClock.Instant) -> RendererAssignments {
            RendererAssignments(
                leaseDuration: leaseDuration, maximumRenderers: maximumRenderers, lastFence: stored.lastFence,
                renderers: stored.renderers.map {
                    RendererAssignments.Renderer(
                        name: $0.name, capacity: $0.capacity, devtoolsURL: $0.devtoolsURL, expires: now + .milliseconds(Int64($0.secondsLeft * 1000)),
                        draining: $0.draining, profiles: [])
                },
                assignments: Dictionary(
                    stored.assignments.map { ($0.profileID, RendererAssignments.Assignment(renderer: $0.renderer, fence: $0.fence)) },
                    uniquingKeysWith: { $1 }),
                pins: Dictionary(stored.renderings.compactMap { r in r.pin.map { (r.profileID, $0) } }, uniquingKeysWith: { $1 }),
                excluded: Set(stored.renderings.filter(\.excluded).map(\.profileID)),
                now: now)
        }
    }
#endif
