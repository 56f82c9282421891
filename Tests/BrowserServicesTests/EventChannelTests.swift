import Synchronization
import TestSupport
import Testing

@testable import BrowserServices

/// A sink with a bounded queue that the test drains by hand.
final class FakeSink: EventSink {
    private let state = Mutex<(queued: [UInt8], delivered: [UInt8], finished: Bool)>(([], [], false))
    let capacity: Int

    init(capacity: Int = 1 << 20) { self.capacity = capacity }

    func write(_ bytes: [UInt8], evenIfFull: Bool) -> EventSinkWrite {
        state.withLock { s in
            if s.finished { return .closed }
            if s.queued.count + bytes.count > capacity && !(evenIfFull && s.queued.isEmpty) { return .overflow }
            s.queued += bytes
            return .written
        }
    }

    var bufferedByteCount: Int { state.withLock { $0.queued.count } }
    var isClosed: Bool { state.withLock { $0.finished } }
    func finish() { state.withLock { $0.finished = true } }

    /// The client reads everything queued.
    func drain() {
        state.withLock { s in
            s.delivered += s.queued
            s.queued = []
        }
    }

    /// Event names and ids the client has read.
    var events: [(id: String, name: String)] {
        let text = String(decoding: state.withLock { $0.delivered }, as: UTF8.self)
        return text.components(separatedBy: "\n\n").compactMap { block in
            var id = ""
            var name = ""
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
            }
            return name.isEmpty ? nil : (id, name)
        }
    }
}

struct FixedSnapshot: StreamSnapshot {
    var label: String
    func initialEvents(filter: TopicFilter) -> [StreamEvent] { [StreamEvent(name: "snapshot", json: Array("\"\(label)\"".utf8))] }
    func resetEvent(reason: String) -> StreamEvent { StreamEvent(name: "reset", json: Array("\"\(reason)\"".utf8)) }
}

@Suite(.computing) struct EventChannelTests {
    private func channel(_ limits: EventStreamLimits = EventStreamLimits()) -> EventChannel {
        EventChannel(epoch: "e1", limits: limits, framing: TestFraming(), snapshot: FixedSnapshot(label: "s0")) { _ in }
    }

    private func event(_ name: String, _ size: Int = 10, topic: EventTopic = .tabs) -> PendingEvent {
        PendingEvent(topic: topic, name: name, json: Array("\"\(String(repeating: "x", count: size))\"".utf8))
    }

    @Test func aNewSubscriberGetsTheSnapshotThenOnlyLaterEvents() {
        let channel = channel()
        channel.append([event("a"), event("b")], snapshot: FixedSnapshot(label: "s2"))
        let sink = FakeSink()
        #expect(channel.subscribe(sink, lastEventID: nil, filter: .all) == .snapshot)
        channel.append([event("c")], snapshot: FixedSnapshot(label: "s3"))
        _ = channel.pump()
        sink.drain()
        #expect(sink.events.map(\.name) == ["snapshot", "c"])
        #expect(sink.events.map(\.id) == ["e1-2", "e1-3"])
    }

    @Test func resumeReplaysExactlyWhatWasMissedAndOldIdsReset() {
        let channel = channel(EventStreamLimits(replayEvents: 3))
        channel.append((1...5).map { event("e\($0)") }, snapshot: FixedSnapshot(label: "s5"))
        let resumed = FakeSink()
        #expect(channel.subscribe(resumed, lastEventID: "e1-3", filter: .all) == .replay(missed: 2))
        _ = channel.pump()
        resumed.drain()
        #expect(resumed.events.map(\.name) == ["e4", "e5"])
        #expect(channel.subscribe(FakeSink(), lastEventID: "e1-1", filter: .all) == .reset(reason: "expired"))
        #expect(channel.subscribe(FakeSink(), lastEventID: "e0-4", filter: .all) == .reset(reason: "restarted"))
        #expect(channel.subscribe(FakeSink(), lastEventID: "e1-9", filter: .all) == .reset(reason: "unknown-id"))
        #expect(channel.subscribe(FakeSink(), lastEventID: "e1-5", filter: .all) == .replay(missed: 0))
    }

    @Test func theReplayBufferIsBoundedInBytes() {
        let channel = channel(EventStreamLimits(replayEvents: 1000, replayBytes: 2048))
        channel.append((1...40).map { event("e\($0)", 100) }, snapshot: FixedSnapshot(label: "s"))
        // Each framed event is about 130 bytes: only the newest fit in 2 KiB.
        #expect(channel.subscribe(FakeSink(), lastEventID: "e1-20", filter: .all) == .reset(reason: "expired"))
        #expect(channel.subscribe(FakeSink(), lastEventID: "e1-30", filter: .all) == .replay(missed: 10))
    }

    @Test func aSlowSubscriberIsResetOnceItCatchesUpAndOthersAreNotHeldBack() {
        let channel = channel()
        let slow = FakeSink(capacity: 1000)
        let fast = FakeSink(capacity: 1000)
        _ = channel.subscribe(slow, lastEventID: nil, filter: .all)
        _ = channel.subscribe(fast, lastEventID: nil, filter: .all)
        slow.drain()
        for round in 0..<10 {
            channel.append([event("r\(round)", 200)], snapshot: FixedSnapshot(label: "s\(round)"))
            _ = channel.pump()
            fast.drain()
        }
        #expect(fast.events.filter { $0.name.hasPrefix("r") }.count == 10)
        #expect(slow.bufferedByteCount <= 1000)
        #expect(channel.pump(), "the slow subscriber still needs a reset")
        slow.drain()
        _ = channel.pump()
        slow.drain()
        #expect(slow.events.last?.name == "reset")
        #expect(slow.events.last?.id == "e1-10")
        channel.append([event("after")], snapshot: FixedSnapshot(label: "s11"))
        _ = channel.pump()
        slow.drain()
        #expect(slow.events.last?.name == "after")
    }

    @Test func topicFiltersAndClosing() {
        let channel = channel()
        let toolbarOnly = FakeSink()
        _ = channel.subscribe(toolbarOnly, lastEventID: nil, filter: TopicFilter([.toolbar]))
        channel.append([event("t", topic: .tabs), event("b", topic: .toolbar), event("frame", topic: .control)], snapshot: FixedSnapshot(label: "s"))
        channel.close(final: event("browser.closed", topic: .control))
        _ = channel.pump()
        toolbarOnly.drain()
        #expect(toolbarOnly.events.map(\.name) == ["snapshot", "b", "frame", "browser.closed"])
        #expect(toolbarOnly.isClosed)
        let late = FakeSink()
        #expect(channel.subscribe(late, lastEventID: nil, filter: .all) == .ended)
        late.drain()
        #expect(late.events.map(\.name) == ["browser.closed"])
        #expect(TopicFilter.parse("tabs,toolbar") == TopicFilter([.tabs, .toolbar]))
        #expect(TopicFilter.parse("tabs,bogus") == nil)
        #expect(TopicFilter.parse(nil) == .all)
    }
}
