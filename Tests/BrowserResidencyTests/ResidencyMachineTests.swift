import BrowserAccess
import BrowserModel
import BrowserResidency
import TestSupport
import Testing

/// ``ResidencyMachine``'s transitions (issue 53), without tasks, a store or a model: every phase a
/// profile can be in, and every event in each.
@Suite(.computing) struct ResidencyMachineTests {
    let id = ProfileID(rawValue: "p1")
    let t0 = ContinuousClock.now

    @Test func aFirstWantLoadsAndOthersJoinUntilItEnds() {
        var machine = ResidencyMachine()
        let r1 = machine.want(id, held: false, now: t0)
        #expect(r1 == .startLoad)
        #expect(machine.phases[id] == .loading)
        let r2 = machine.want(id, held: false, now: t0)
        #expect(r2 == .joinLoad, "single flight")
        let r3 = machine.touch(id, now: t0)
        #expect(!r3, "loading: not served at once")
        let r4 = machine.drop(id, reason: .fenced)
        #expect(r4 == .afterLoad, "a drop waits for the load")
        machine.loadEnded(id, held: true, now: t0 + .seconds(1))
        #expect(machine.phases[id] == .resident(touched: t0 + .seconds(1)))
        let r5 = machine.want(id, held: true, now: t0 + .seconds(2))
        #expect(r5 == .here)
        let r6 = machine.touch(id, now: t0 + .seconds(3))
        #expect(r6 && machine.phases[id] == .resident(touched: t0 + .seconds(3)))
    }

    @Test func aFailedLoadHoldsNothingAndTheNextWantLoadsAgain() {
        var machine = ResidencyMachine()
        _ = machine.want(id, held: false, now: t0)
        machine.loadEnded(id, held: false, now: t0)
        #expect(machine.phases[id] == nil)
        let r7 = machine.want(id, held: false, now: t0)
        #expect(r7 == .startLoad)
        // An end that is not this load's (it ended already) changes nothing.
        machine.loadEnded(ProfileID(rawValue: "other"), held: true, now: t0)
        #expect(machine.phases[ProfileID(rawValue: "other")] == nil)
    }

    @Test func theSweepDropsOnlyWhatWasUntouchedForTheIdleTime() {
        var machine = ResidencyMachine()
        let (fresh, old, loading) = (ProfileID(rawValue: "fresh"), ProfileID(rawValue: "old"), ProfileID(rawValue: "loading"))
        _ = machine.touch(old, now: t0)
        _ = machine.want(loading, held: false, now: t0)
        // Never seen: its idle time starts now; loading: skipped; old: dropped.
        let r8 = machine.sweep([fresh, old, loading], idle: .seconds(10), now: t0 + .seconds(10))
        #expect(r8 == [old])
        #expect(machine.phases[old] == .dropping(.idle) && machine.phases[fresh] == .resident(touched: t0 + .seconds(10)))
        let r9 = machine.sweep([fresh], idle: .seconds(10), now: t0 + .seconds(15))
        #expect(r9 == [], "touched 5 s ago")
        let r10 = machine.touch(old, now: t0 + .seconds(11))
        #expect(!r10, "dropping: not served at once")
        let r11 = machine.want(old, held: true, now: t0 + .seconds(11))
        #expect(r11 == .waitForDrop)
        let r12 = machine.drop(old, reason: .leaseLost)
        #expect(r12 == .alreadyDropping, "one drop at a time")
        let r13 = machine.sweep([old], idle: .seconds(10), now: t0 + .seconds(30))
        #expect(r13 == [], "not twice")
        machine.dropEnded(old, dropped: true, now: t0 + .seconds(12))
        #expect(machine.phases[old] == nil)
        let r14 = machine.want(old, held: false, now: t0 + .seconds(13))
        #expect(r14 == .startLoad, "it comes back on its next use")
    }

    @Test func aDropThatFailsKeepsItTouchedNow() {
        var machine = ResidencyMachine()
        _ = machine.touch(id, now: t0)
        let r15 = machine.sweep([id], idle: .seconds(1), now: t0 + .seconds(5))
        #expect(r15 == [id])
        machine.dropEnded(id, dropped: false, now: t0 + .seconds(6))
        #expect(machine.phases[id] == .resident(touched: t0 + .seconds(6)))
        let r16 = machine.sweep([id], idle: .seconds(1), now: t0 + .seconds(6.5))
        #expect(r16 == [], "its idle time starts again")
    }

    @Test func everyOtherReasonDropsAResidentOrUnknownProfileAtOnce() {
        for reason: ResidencyMachine.DropReason in [.leaseLost, .fenced, .refused, .commitFailed] {
            var machine = ResidencyMachine()
            let r17 = machine.drop(id, reason: reason)
            #expect(r17 == .start, "\(reason): one the machine never saw")
            #expect(machine.phases[id] == .dropping(reason))
            machine.dropEnded(id, dropped: true, now: t0)
            _ = machine.touch(id, now: t0)
            let r18 = machine.drop(id, reason: reason)
            #expect(r18 == .start, "\(reason): a resident one")
        }
        var machine = ResidencyMachine()
        machine.dropEnded(id, dropped: true, now: t0)
        #expect(machine.phases[id] == nil, "an end of no drop changes nothing")
    }
}
