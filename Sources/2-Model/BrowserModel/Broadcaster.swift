/// The type of a broadcast property.
public enum BroadcastValueType: String, Sendable {
    case number, boolean
}

/// A broadcast value.
public enum BroadcastValue: Sendable, Equatable {
    case number(Double)
    case boolean(Bool)

    public var type: BroadcastValueType {
        switch self {
        case .number: .number
        case .boolean: .boolean
        }
    }
}

/// A declared UI property that can be broadcast.
public struct BroadcastKey: Hashable, Sendable {
    public let name: String
    public let type: BroadcastValueType

    public init(_ name: String, _ type: BroadcastValueType) {
        self.name = name
        self.type = type
    }

    /// The properties every window declares (Chromium's toolbar heights and scroll state).
    public static let declared: [BroadcastKey] = [
        BroadcastKey("toolbar.topHeight", .number),
        BroadcastKey("toolbar.bottomHeight", .number),
        BroadcastKey("content.offsetY", .number),
        BroadcastKey("content.isScrolling", .boolean),
        BroadcastKey("content.isZooming", .boolean),
        BroadcastKey("content.isDragging", .boolean),
    ]
}

/// Mirrors one-value UI properties to observers (spec §9, Chromium's ChromeBroadcaster).
///
/// One broadcaster per key. An observer added while its key is broadcast gets the current value at
/// once (if there is one); later changes reach every observer of the key, never an identical value
/// twice. Stopping a broadcast keeps the observers.
public final class Broadcaster {
    private struct Slot {
        var broadcasting = false
        var value: BroadcastValue?
        var observers: [WeakBroadcastObserver] = []
    }

    /// The keys this broadcaster knows, in declaration order.
    public let keys: [BroadcastKey]
    private var slots: [String: Slot] = [:]

    public init(keys: [BroadcastKey] = BroadcastKey.declared) {
        self.keys = keys
        for key in keys { slots[key.name] = Slot() }
    }

    /// The declared key named `name`.
    /// - Throws: ``ModelError/unknownBroadcastKey(_:)``.
    public func key(named name: String) throws -> BroadcastKey {
        guard let key = keys.first(where: { $0.name == name }) else { throw ModelError.unknownBroadcastKey(name) }
        return key
    }

    /// Starts broadcasting `key`; observers already there get the value at once if it is known.
    /// - Throws: when the key is unknown or already broadcast.
    public func startBroadcasting(_ name: String, value: BroadcastValue? = nil) throws {
        let key = try key(named: name)
        guard slots[name]?.broadcasting == false else { throw ModelError.alreadyBroadcasting(name) }
        if let value, value.type != key.type { throw ModelError.broadcastTypeMismatch(key: name, expected: key.type.rawValue) }
        slots[name]!.broadcasting = true
        if let value { slots[name]!.value = value }
        if let current = slots[name]!.value { notify(key, current) }
    }

    /// Stops broadcasting `key`; its observers stay registered.
    public func stopBroadcasting(_ name: String) {
        slots[name]?.broadcasting = false
    }

    public func isBroadcasting(_ name: String) -> Bool { slots[name]?.broadcasting ?? false }

    /// The current value of `key` (nil until first reported).
    public func value(of name: String) -> BroadcastValue? { slots[name]?.value }

    /// Reports a new value of `key`.
    /// - Returns: whether observers were told (false for an identical value).
    /// - Throws: when the key is unknown, not broadcast, or the value has the wrong type.
    @discardableResult
    public func update(_ name: String, to value: BroadcastValue) throws -> Bool {
        let key = try key(named: name)
        guard value.type == key.type else { throw ModelError.broadcastTypeMismatch(key: name, expected: key.type.rawValue) }
        guard slots[name]!.broadcasting else { throw ModelError.notBroadcasting(name) }
        guard slots[name]!.value != value else { return false }
        slots[name]!.value = value
        notify(key, value)
        return true
    }

    /// Adds an observer of `key`; it gets the current value before this returns if the key is broadcast.
    public func addObserver(_ observer: any BroadcastObserver, for name: String) throws {
        let key = try key(named: name)
        slots[name]!.observers.removeAll { $0.observer == nil || $0.observer === observer }
        slots[name]!.observers.append(WeakBroadcastObserver(observer: observer))
        if slots[name]!.broadcasting, let value = slots[name]!.value {
            observer.broadcaster(self, didUpdate: key, value: value)
        }
    }

    /// Removes an observer of `key` only.
    public func removeObserver(_ observer: any BroadcastObserver, for name: String) {
        slots[name]?.observers.removeAll { $0.observer == nil || $0.observer === observer }
    }

    private func notify(_ key: BroadcastKey, _ value: BroadcastValue) {
        for box in slots[key.name]!.observers { box.observer?.broadcaster(self, didUpdate: key, value: value) }
    }
}

/// Receives broadcast values.
public protocol BroadcastObserver: AnyObject {
    func broadcaster(_ broadcaster: Broadcaster, didUpdate key: BroadcastKey, value: BroadcastValue)
}

struct WeakBroadcastObserver {
    weak var observer: (any BroadcastObserver)?
}
