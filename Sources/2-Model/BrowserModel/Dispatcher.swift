/// A named command with a typed payload and result (Chromium's selector + protocol method).
public struct Command<Payload, Result>: Sendable, Hashable {
    public let name: String
    public init(_ name: String) { self.name = name }
}

/// Routes commands to the one handler registered for each name (spec §9, Chromium's CommandDispatcher).
///
/// Handlers are held weakly through their owner: when the owner goes away, its commands are no longer
/// registered. Registering a name twice is an error; dispatching a name nobody handles is an error the
/// caller sees. Every dispatch, successful or not, is shown to dispatch observers (the action log,
/// metrics and persistence hang there). The dispatcher carries commands only; observation of the model
/// goes through observers and the broadcaster.
public final class Dispatcher {
    private struct Registration {
        let handlerName: String
        weak var owner: AnyObject?
        let payloadType: Any.Type
        let invoke: (Any) throws -> Any
    }

    private var registrations: [String: Registration] = [:]
    private var observers: [WeakDispatchObserver] = []

    public init() {}

    /// Registers `handler` for `command`.
    /// - Parameters:
    ///   - owner: held weakly; the registration ends with it.
    ///   - handlerName: who handles it, for listings (e.g. "TabsMediator").
    /// - Throws: ``ModelError/commandAlreadyRegistered(_:handler:)`` when the name has a live handler.
    public func register<Payload, Result>(
        _ command: Command<Payload, Result>, owner: AnyObject, handlerName: String,
        _ handler: @escaping (Payload) throws -> Result
    ) throws {
        if let existing = registrations[command.name], existing.owner != nil {
            throw ModelError.commandAlreadyRegistered(command.name, handler: existing.handlerName)
        }
        registrations[command.name] = Registration(
            handlerName: handlerName, owner: owner, payloadType: Payload.self,
            invoke: { payload in
                guard let typed = payload as? Payload else {
                    throw ModelError.invalidCommandArguments(command: command.name, reason: "expected \(Payload.self), got \(type(of: payload))")
                }
                return try handler(typed)
            })
    }

    /// Stops dispatching `name` (no-op when not registered).
    public func unregister(_ name: String) {
        registrations[name] = nil
    }

    /// Stops dispatching every command `owner` handles.
    public func unregisterAll(owner: AnyObject) {
        registrations = registrations.filter { $0.value.owner != nil && $0.value.owner !== owner }
    }

    /// Whether `name` has a live handler.
    public func isRegistered(_ name: String) -> Bool {
        registrations[name]?.owner != nil
    }

    /// Every registered command and its handler, sorted by name.
    public var registeredCommands: [(name: String, handler: String)] {
        registrations.filter { $0.value.owner != nil }.map { ($0.key, $0.value.handlerName) }.sorted { $0.name < $1.name }
    }

    /// Sends `payload` to the handler of `command`.
    /// - Throws: ``ModelError/commandNotRegistered(_:)``, or what the handler throws.
    @discardableResult
    public func dispatch<Payload, Result>(_ command: Command<Payload, Result>, _ payload: Payload) throws -> Result {
        let result = try dispatch(name: command.name, payload: payload)
        guard let typed = result as? Result else {
            throw ModelError.invalidCommandArguments(command: command.name, reason: "handler returned \(type(of: result))")
        }
        return typed
    }

    /// Sends an untyped payload to the handler of `name` (for commands named at run time).
    /// - Throws: ``ModelError/commandNotRegistered(_:)``, ``ModelError/invalidCommandArguments(command:reason:)``
    ///   when the payload is not the registered type, or what the handler throws.
    @discardableResult
    public func dispatch(name: String, payload: Any) throws -> Any {
        let start = ContinuousClock.now
        let outcome: Result<Any, any Error>
        if let registration = registrations[name], registration.owner != nil {
            outcome = Result { try registration.invoke(payload) }
        } else {
            registrations[name] = nil
            outcome = .failure(ModelError.commandNotRegistered(name))
        }
        let record = DispatchRecord(name: name, payload: payload, outcome: outcome, duration: ContinuousClock.now - start)
        for box in observers { box.observer?.dispatcher(self, didDispatch: record) }
        return try outcome.get()
    }

    /// The payload type registered for `name`, if any.
    public func payloadType(of name: String) -> Any.Type? {
        registrations[name].flatMap { $0.owner == nil ? nil : $0.payloadType }
    }

    public func addObserver(_ observer: any DispatchObserver) {
        observers.removeAll { $0.observer == nil || $0.observer === observer }
        observers.append(WeakDispatchObserver(observer: observer))
    }

    public func removeObserver(_ observer: any DispatchObserver) {
        observers.removeAll { $0.observer == nil || $0.observer === observer }
    }
}

/// What one dispatch did.
public struct DispatchRecord {
    public let name: String
    public let payload: Any
    public let outcome: Result<Any, any Error>
    public let duration: Duration
}

/// Sees every dispatched command (after it ran).
public protocol DispatchObserver: AnyObject {
    func dispatcher(_ dispatcher: Dispatcher, didDispatch record: DispatchRecord)
}

struct WeakDispatchObserver {
    weak var observer: (any DispatchObserver)?
}
