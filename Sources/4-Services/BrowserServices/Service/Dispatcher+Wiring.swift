import BrowserModel

extension Dispatcher {
    /// Registers a handler that browserd's own wiring installs (a mediator's or a coordinator's
    /// command). Two handlers for one command can only come from a wiring bug, never from input, so
    /// it stops the process with both handlers named, as Chromium's CommandDispatcher CHECKs; the
    /// first test that opens a window finds it. (Registrations that input can cause go through the
    /// throwing ``Dispatcher/register(_:owner:handlerName:_:)``.)
    func install<Payload, Result>(
        _ command: Command<Payload, Result>, owner: AnyObject, handlerName: String,
        _ handler: @escaping (Payload) throws -> Result
    ) {
        do {
            try register(command, owner: owner, handlerName: handlerName, handler)
        } catch {
            preconditionFailure("\(handlerName) cannot handle \(command.name): \(error)")
        }
    }
}
