public import BrowserModel
import Foundation
import Synchronization

/// Every event stream source of the service (one channel per window and per profile), the pump that
/// delivers their events in ticks, and the caps on open streams.
public final class EventHub: Sendable {
    /// New on every run: event ids of an earlier run are recognised as such.
    public let epoch: String
    public let limits: EventStreamLimits
    let pump: EventPump

    private struct State {
        var windows: [BrowserID: EventChannel] = [:]
        var profiles: [ProfileID: EventChannel] = [:]
        var streams = 0
        var perProfile: [ProfileID: Int] = [:]
    }

    private let state = Mutex(State())
    private let framing: any EventFraming

    /// - Parameters:
    ///   - limits: replay, queue and stream limits.
    ///   - framing: the wire format of the streams (the HTTP edge's server-sent events).
    public init(limits: EventStreamLimits = EventStreamLimits(), framing: any EventFraming) {
        self.limits = limits
        self.framing = framing
        let epoch = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
        self.epoch = epoch
        let pump = EventPump(tick: limits.tick, adaptive: limits.adaptiveTick)
        self.pump = pump
        self.directory = EventChannel(epoch: epoch, limits: limits, framing: framing, snapshot: DirectorySnapshot(profiles: [])) {
            pump.markDirty($0)
        }
    }

    /// The profile directory's source: every profile coming, changing and going.
    let directory: EventChannel

    /// Tells the adaptive tick whether the transport is still writing the last events out (then
    /// new events gather until it is done, or for one tick at most).
    public func deliveryBusy(_ probe: @escaping @Sendable () -> Bool) {
        pump.setBusyProbe(probe)
    }

    private func makeChannel(_ snapshot: any StreamSnapshot) -> EventChannel {
        let pump = self.pump
        return EventChannel(epoch: epoch, limits: limits, framing: framing, snapshot: snapshot) { pump.markDirty($0) }
    }

    func openWindow(_ id: BrowserID, snapshot: any StreamSnapshot) -> EventChannel {
        let channel = makeChannel(snapshot)
        state.withLock { $0.windows[id] = channel }
        return channel
    }

    func closeWindow(_ id: BrowserID) { _ = state.withLock { $0.windows.removeValue(forKey: id) } }

    func openProfile(_ id: ProfileID, snapshot: any StreamSnapshot) -> EventChannel {
        let channel = makeChannel(snapshot)
        state.withLock { $0.profiles[id] = channel }
        return channel
    }

    func closeProfile(_ id: ProfileID) { _ = state.withLock { $0.profiles.removeValue(forKey: id) } }

    /// Ends a window's streams and forgets its channel (the window lives on another instance now).
    func endWindow(_ id: BrowserID) { state.withLock { $0.windows.removeValue(forKey: id) }?.finishAll() }
    func endProfile(_ id: ProfileID) { state.withLock { $0.profiles.removeValue(forKey: id) }?.finishAll() }

    func window(_ id: BrowserID) -> EventChannel? { state.withLock { $0.windows[id] } }
    func profile(_ id: ProfileID) -> EventChannel? { state.withLock { $0.profiles[id] } }

    /// Streams open now.
    public var openStreams: Int { state.withLock { $0.streams } }

    /// The streams open now on the windows of the regular profile `root` (its incognito one's
    /// included) and on its window list.
    public func openStreams(profile root: ProfileID) -> Int { state.withLock { $0.perProfile[root] ?? 0 } }

    /// The key the profile directory's streams are counted under (the per-profile cap applies to them
    /// as to one profile's).
    public static let directoryKey = ProfileID(rawValue: "directory")

    /// Takes a place for one stream of a regular profile's resources (``directoryKey``: the directory's).
    /// - Throws: ``ServiceError/tooManyStreams(_:)`` past the total cap, ``ServiceError/tooManyProfileStreams(_:)``
    ///   past the profile's.
    public func reserveStream(root: ProfileID) throws -> StreamReservation {
        try state.withLock { state in
            guard state.streams < limits.maxStreams else { throw ServiceError.tooManyStreams(limits.maxStreams) }
            guard state.perProfile[root, default: 0] < limits.maxStreamsPerProfile else {
                throw ServiceError.tooManyProfileStreams(limits.maxStreamsPerProfile)
            }
            state.streams += 1
            state.perProfile[root, default: 0] += 1
        }
        return StreamReservation { [self] in
            state.withLock { state in
                state.streams -= 1
                state.perProfile[root, default: 1] -= 1
                if state.perProfile[root] == 0 { state.perProfile[root] = nil }
            }
        }
    }

    /// Ends every stream and stops the pump (server shutdown).
    public func stop() {
        pump.stop()
        let channels = state.withLock { Array($0.windows.values) + Array($0.profiles.values) } + [directory]
        for channel in channels { channel.finishAll() }
    }
}

/// A place taken for one stream; released once, when the stream ends.
public final class StreamReservation: Sendable {
    private let release: Mutex<(@Sendable () -> Void)?>

    init(release: @escaping @Sendable () -> Void) { self.release = Mutex(release) }

    /// A stream whose response was dropped before it opened gives its place back too.
    deinit { end() }

    public func end() {
        let action = release.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }
}
