import TestSupport
import Testing

@testable import ClusterCore

/// Which renderer renders which profile (issue 55), without a store or a renderer: exactly one each,
/// least loaded first, fences that only go up, leases that lapse, no flapping, draining, pins.
@Suite(.offThePool) struct RendererAssignmentsTests {
    let start = ContinuousClock.now
    let profiles = Set((1...12).map { "p\($0)" })

    func holders(_ machine: RendererAssignments) -> [String: Int] {
        var counts: [String: Int] = [:]
        for assignment in machine.assignments.values { counts[assignment.renderer, default: 0] += 1 }
        return counts
    }

    /// Every profile that wants a renderer gets exactly one, spread least loaded first; one that no
    /// longer wants one (its windows closed) is released.
    @Test func everyProfileGetsExactlyOneRendererLeastLoadedFirst() {
        var machine = RendererAssignments(leaseDuration: .seconds(15))
        #expect(machine.register(name: "a", capacity: 100, now: start) == .registered([:]))
        #expect(machine.place(wanting: profiles, now: start).count == 12, "one renderer: it takes them all")
        #expect(holders(machine) == ["a": 12])
        var fresh = RendererAssignments(leaseDuration: .seconds(15))
        _ = fresh.register(name: "a", capacity: 100, now: start)
        _ = fresh.register(name: "b", capacity: 100, now: start)
        _ = fresh.place(wanting: profiles, now: start)
        #expect(holders(fresh) == ["a": 6, "b": 6])
        #expect(Set(fresh.assignments.keys) == profiles)
        #expect(Set(fresh.assignments.values.map(\.fence)).count == 12, "each assignment its own fence")
        // Windows closed: released; nothing else moves.
        let before = fresh.assignments
        #expect(fresh.place(wanting: profiles.subtracting(["p1"]), now: start + .seconds(1)) == [.released(profile: "p1", renderer: before["p1"]!.renderer)])
        #expect(fresh.assignments == before.filter { $0.key != "p1" })
    }

    /// Capacity bounds a renderer; a profile with no room waits, and gets one when room comes.
    @Test func aFullRendererTakesNoMore() {
        var machine = RendererAssignments(leaseDuration: .seconds(15))
        _ = machine.register(name: "a", capacity: 2, now: start)
        _ = machine.place(wanting: ["p1", "p2", "p3"], now: start)
        #expect(machine.assignments.count == 2 && machine.assignments["p3"] == nil)
        _ = machine.register(name: "b", capacity: 2, now: start)
        #expect(machine.place(wanting: ["p1", "p2", "p3"], now: start) == [.assigned(profile: "p3", renderer: "b", fence: 3)])
        // Capacity is clamped: at least 1.
        _ = machine.register(name: "c", capacity: 0, now: start)
        #expect(machine.renderers["c"]?.capacity == 1)
    }

    /// A renderer that stops renewing loses its profiles when its lease lapses; the others take them
    /// under new fences, and the old one's reports are refused. Back again, it takes none of them back.
    @Test func aLapsedRendererLosesItsProfilesAndDoesNotTakeThemBack() {
        var machine = RendererAssignments(leaseDuration: .seconds(15))
        _ = machine.register(name: "a", capacity: 100, now: start)
        _ = machine.register(name: "b", capacity: 100, now: start)
        _ = machine.place(wanting: profiles, now: start)
        let ofA = machine.held(by: "a")
        // b renews, a does not.
        #expect(machine.renew("b", now: start + .seconds(10)) != nil)
        #expect(machine.place(wanting: profiles, now: start + .seconds(14)).isEmpty, "a's lease is still live")
        let moved = machine.place(wanting: profiles, now: start + .seconds(15))
        #expect(moved.filter { if case .released = $0 { true } else { false } }.count == 6)
        #expect(holders(machine) == ["b": 12])
        for (profile, fence) in ofA {
            #expect(machine.check(renderer: "a", profile: profile, fence: fence) == .fenced(holder: "b"))
            #expect(machine.assignments[profile]!.fence > fence, "fences only go up")
            #expect(machine.check(renderer: "b", profile: profile, fence: machine.assignments[profile]!.fence) == .current)
        }
        #expect(machine.renew("a", now: start + .seconds(16)) == nil, "a lapsed registration renews nothing")
        // a registers again (same name, same state dir): it holds nothing, and nothing moves to it.
        #expect(machine.register(name: "a", capacity: 100, now: start + .seconds(16)) == .registered([:]))
        #expect(machine.place(wanting: profiles, now: start + .seconds(17)).isEmpty)
        #expect(holders(machine) == ["b": 12])
    }

    /// Registering again with a live lease keeps what the renderer holds (a quick restart).
    @Test func registeringAgainWhileLiveKeepsTheProfiles() {
        var machine = RendererAssignments(leaseDuration: .seconds(15))
        _ = machine.register(name: "a", capacity: 100, now: start)
        _ = machine.place(wanting: ["p1"], now: start)
        #expect(machine.register(name: "a", capacity: 100, now: start + .seconds(5)) == .registered(["p1": 1]))
    }

    /// Draining hands a renderer's profiles to the others with room at once, under new fences; it gets
    /// none back, and what finds no room stays with it.
    @Test func drainingHandsProfilesOn() {
        var machine = RendererAssignments(leaseDuration: .seconds(15))
        _ = machine.register(name: "a", capacity: 100, now: start)
        _ = machine.place(wanting: ["p1", "p2", "p3"], now: start)
        _ = machine.register(name: "b", capacity: 2, now: start)
        let changes = machine.drain("a", now: start + .seconds(1))
        #expect(changes.count == 4, "two released and assigned to b, one stays: \(changes)")
        #expect(holders(machine) == ["a": 1, "b": 2])
        #expect(machine.place(wanting: ["p1", "p2", "p3"], now: start + .seconds(2)).isEmpty, "a draining renderer gets nothing new")
        #expect(machine.unregister("a") == [.released(profile: "p3", renderer: "a")])
    }

    /// A pin is honoured when the profile next needs a renderer; an excluded profile is let go.
    @Test func pinsAndExclusions() {
        var machine = RendererAssignments(leaseDuration: .seconds(15))
        _ = machine.register(name: "a", capacity: 100, now: start)
        _ = machine.register(name: "b", capacity: 100, now: start)
        machine.pin("p1", to: "b")
        machine.pin("p2", to: "b")
        _ = machine.place(wanting: ["p1", "p2"], now: start)
        #expect(machine.assignments["p1"]?.renderer == "b" && machine.assignments["p2"]?.renderer == "b")
        machine.exclude("p1", true)
        #expect(machine.place(wanting: ["p1", "p2"], now: start) == [.released(profile: "p1", renderer: "b")])
        machine.exclude("p1", false)
        #expect(machine.place(wanting: ["p1", "p2"], now: start) == [.assigned(profile: "p1", renderer: "b", fence: 3)])
    }

    /// Registrations are bounded.
    @Test func registrationsAreBounded() {
        var machine = RendererAssignments(leaseDuration: .seconds(15), maximumRenderers: 2)
        _ = machine.register(name: "a", capacity: 1, now: start)
        _ = machine.register(name: "b", capacity: 1, now: start)
        #expect(machine.register(name: "c", capacity: 1, now: start) == .tooMany(2))
        #expect(machine.register(name: "a", capacity: 1, now: start) == .registered([:]), "a live one renews")
        // Once one lapses, another may come.
        #expect(machine.register(name: "c", capacity: 1, now: start + .seconds(20)) == .registered([:]))
        _ = machine.expire(now: start + .seconds(20))
        #expect(Set(machine.renderers.keys) == ["c"])
    }

    /// Fences continue from the store's last one (a restart never hands out an old fence again).
    @Test func fencesContinueFromTheStore() {
        var machine = RendererAssignments(leaseDuration: .seconds(15), lastFence: 41)
        _ = machine.register(name: "a", capacity: 1, now: start)
        #expect(machine.place(wanting: ["p1"], now: start) == [.assigned(profile: "p1", renderer: "a", fence: 42)])
    }

    /// browserd started again: the stored assignments hold for a lease from the start, so a renderer
    /// that renews in time keeps its profiles (same fences); one that does not loses them; fences go
    /// on from the stored last one.
    @Test func storedAssignmentsHoldForALeaseAfterARestart() {
        var machine = RendererAssignments(leaseDuration: .seconds(15))
        machine.restore([("p1", "a", 7), ("p2", "a", 9), ("p3", "b", 8)], lastFence: 11, now: start)
        #expect(machine.lastFence == 11)
        #expect(machine.register(name: "a", capacity: 10, now: start + .seconds(5)) == .registered(["p1": 7, "p2": 9]))
        #expect(machine.check(renderer: "a", profile: "p2", fence: 9) == .current)
        // b never comes back: its profile goes to a, under a new fence past the stored one.
        _ = machine.renew("a", now: start + .seconds(14))
        let changes = machine.place(wanting: ["p1", "p2", "p3"], now: start + .seconds(16))
        #expect(changes == [.released(profile: "p3", renderer: "b"), .assigned(profile: "p3", renderer: "a", fence: 12)])
        #expect(machine.live(at: start + .seconds(16)).map(\.name) == ["a"])
    }
}
