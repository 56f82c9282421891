import BrowserModel
import TestSupport
import Testing

@testable import BrowserServices

/// The windows' answers kept within a budget of bytes (issue 54): the least recently used leave first.
@Suite(.computing) struct ByteLRUTests {
    @Test func theLeastRecentlyUsedLeaveUntilTheBytesFit() {
        var lru = ByteLRU<String, Int>(limit: 100)
        #expect(lru.put("a", 1, bytes: 40).isEmpty)
        #expect(lru.put("b", 2, bytes: 40).isEmpty)
        #expect(lru.get("b") == 2 && lru.keysByRecency == ["b", "a"], "the newest read again stays the newest")
        #expect(lru.get("a") == 1, "a is now the most recently used")
        #expect(lru.put("c", 3, bytes: 40) == ["b"])
        #expect(lru.keysByRecency == ["c", "a"] && lru.bytes == 80 && lru.count == 2)
        // Replacing a value counts its new size only.
        #expect(lru.put("a", 4, bytes: 60).isEmpty, "40 + 60 fits")
        #expect(lru.put("a", 5, bytes: 61) == ["c"])
        #expect(lru.keysByRecency == ["a"] && lru.bytes == 61 && lru.peek("a") == 5)
    }

    @Test func aValueLargerThanTheBudgetIsNeverKept() {
        var lru = ByteLRU<String, Int>(limit: 100)
        lru.put("a", 1, bytes: 50)
        #expect(lru.put("huge", 2, bytes: 101).isEmpty)
        #expect(lru.peek("huge") == nil && lru.peek("a") == 1, "nothing evicted for it")
        var none = ByteLRU<String, Int>(limit: 0)
        none.put("a", 1, bytes: 1)
        #expect(none.count == 0 && none.bytes == 0)
    }

    @Test func removingKeepsTheOrderOfTheRest() {
        var lru = ByteLRU<Int, Int>(limit: 1_000)
        for key in 0..<5 { lru.put(key, key, bytes: 10) }
        #expect(lru.remove(2) && !lru.remove(2))
        #expect(lru.keysByRecency == [4, 3, 1, 0] && lru.bytes == 40)
        lru.remove(4)
        lru.remove(0)
        #expect(lru.keysByRecency == [3, 1])
        #expect(lru.put(9, 9, bytes: 981) == [1])
        #expect(lru.keysByRecency == [9, 3] && lru.bytes == 991)
    }
}

/// Which answers are kept (``AnswerAdmission``): a window's the second time the same version is built.
@Suite(.computing) struct AnswerAdmissionTests {
    let a = BrowserID(rawValue: "wa")
    let b = BrowserID(rawValue: "wb")

    @Test func aVersionBuiltTwiceIsKeptAndOnceIsNot() {
        var door = AnswerAdmission(capacity: 8)
        // Read once: nothing kept; again at the same version: kept, and forgotten here.
        let once = door.admits(a, version: 1)
        let twice = door.admits(a, version: 1)
        #expect(!once && twice && door.count == 0)
        // A new version starts over: a window that changes between reads is never kept.
        let changed = [door.admits(a, version: 2), door.admits(a, version: 3), door.admits(a, version: 3)]
        #expect(changed == [false, false, true])
        // A window that left is forgotten.
        _ = door.admits(b, version: 1)
        door.forget(b)
        let afterLeaving = door.admits(b, version: 1)
        #expect(!afterLeaving && door.count == 1)
    }

    @Test func itRemembersAtMostItsCapacity() {
        var door = AnswerAdmission(capacity: 3)
        for n in 0..<10 { _ = door.admits(BrowserID(rawValue: "w\(n)"), version: 1) }
        #expect(door.count == 3, "the last three built")
        let oldest = door.admits(BrowserID(rawValue: "w0"), version: 1)
        let recent = door.admits(BrowserID(rawValue: "w9"), version: 1)
        #expect(!oldest, "the oldest forgotten: built once more")
        #expect(recent, "a recent one remembered")
    }
}
