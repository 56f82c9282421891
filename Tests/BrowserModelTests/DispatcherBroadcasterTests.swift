import TestSupport
import Testing

@testable import BrowserModel

/// Spec §9: CommandDispatcher and ChromeBroadcaster.
@Suite(.computing) struct DispatcherTests {
    final class Handler {}
    final class Log: DispatchObserver {
        var lines: [String] = []
        func dispatcher(_ dispatcher: Dispatcher, didDispatch record: DispatchRecord) {
            switch record.outcome {
            case .success: lines.append("\(record.name) ok")
            case .failure(let error): lines.append("\(record.name) \(error)")
            }
        }
    }

    static let open = Command<String, Int>("openNewTab")
    static let close = Command<Int, Void>("closeTab")

    @Test func dispatchesToTheRegisteredHandlerWithTypes() throws {
        let dispatcher = Dispatcher()
        let handler = Handler()
        try dispatcher.register(Self.open, owner: handler, handlerName: "Tabs") { url in url.count }
        #expect(try dispatcher.dispatch(Self.open, "abc") == 3)
        #expect(throws: ModelError.self) { try dispatcher.dispatch(name: "openNewTab", payload: 42) }
    }

    @Test func registeringANameTwiceIsAnError() throws {
        let dispatcher = Dispatcher()
        let a = Handler()
        let b = Handler()
        try dispatcher.register(Self.open, owner: a, handlerName: "A") { _ in 1 }
        #expect(throws: ModelError.commandAlreadyRegistered("openNewTab", handler: "A")) {
            try dispatcher.register(Self.open, owner: b, handlerName: "B") { _ in 2 }
        }
    }

    @Test func unregisteredCommandIsAnErrorTheCallerSees() {
        let dispatcher = Dispatcher()
        #expect(throws: ModelError.commandNotRegistered("closeTab")) { try dispatcher.dispatch(Self.close, 1) }
    }

    @Test func unregisterOneOrAllOfAHandler() throws {
        let dispatcher = Dispatcher()
        let a = Handler()
        let b = Handler()
        try dispatcher.register(Self.open, owner: a, handlerName: "A") { _ in 1 }
        try dispatcher.register(Self.close, owner: a, handlerName: "A") { _ in }
        try dispatcher.register(Command<Void, Void>("focusOmnibox"), owner: b, handlerName: "B") {}
        #expect(dispatcher.registeredCommands.map(\.name) == ["closeTab", "focusOmnibox", "openNewTab"])
        dispatcher.unregister("closeTab")
        #expect(!dispatcher.isRegistered("closeTab"))
        dispatcher.unregisterAll(owner: a)
        #expect(dispatcher.registeredCommands.map { "\($0.name)=\($0.handler)" } == ["focusOmnibox=B"])
    }

    @Test func handlersAreHeldWeakly() throws {
        let dispatcher = Dispatcher()
        var handler: Handler? = Handler()
        try dispatcher.register(Self.open, owner: handler!, handlerName: "A") { _ in 1 }
        handler = nil
        #expect(!dispatcher.isRegistered("openNewTab"))
        #expect(throws: ModelError.commandNotRegistered("openNewTab")) { try dispatcher.dispatch(Self.open, "x") }
        try dispatcher.register(Self.open, owner: Handler(), handlerName: "B") { _ in 2 }
    }

    @Test func observersSeeEveryDispatchIncludingFailures() throws {
        let dispatcher = Dispatcher()
        let log = Log()
        dispatcher.addObserver(log)
        let handler = Handler()
        try dispatcher.register(Self.open, owner: handler, handlerName: "A") { url in
            if url.isEmpty { throw ModelError.invalidArgument("empty") }
            return 1
        }
        try dispatcher.dispatch(Self.open, "x")
        _ = try? dispatcher.dispatch(Self.open, "")
        _ = try? dispatcher.dispatch(Self.close, 0)
        #expect(log.lines == ["openNewTab ok", "openNewTab empty", "closeTab no handler is registered for command 'closeTab'"])
    }
}

@Suite(.computing) struct BroadcasterTests {
    final class Spy: BroadcastObserver {
        var values: [String] = []
        func broadcaster(_ broadcaster: Broadcaster, didUpdate key: BroadcastKey, value: BroadcastValue) {
            values.append("\(key.name)=\(value)")
        }
    }

    @Test func observerGetsTheCurrentValueAtOnceThenChangesWithoutDuplicates() throws {
        let broadcaster = Broadcaster()
        try broadcaster.startBroadcasting("toolbar.topHeight")
        let early = Spy()
        try broadcaster.addObserver(early, for: "toolbar.topHeight")
        #expect(early.values.isEmpty)
        #expect(try broadcaster.update("toolbar.topHeight", to: .number(56)))
        #expect(try !broadcaster.update("toolbar.topHeight", to: .number(56)))
        let late = Spy()
        try broadcaster.addObserver(late, for: "toolbar.topHeight")
        #expect(late.values == ["toolbar.topHeight=number(56.0)"])
        try broadcaster.update("toolbar.topHeight", to: .number(40))
        #expect(early.values == ["toolbar.topHeight=number(56.0)", "toolbar.topHeight=number(40.0)"])
    }

    @Test func stoppingKeepsObserversAndRestartingNotifiesThem() throws {
        let broadcaster = Broadcaster()
        let spy = Spy()
        try broadcaster.addObserver(spy, for: "content.isScrolling")
        try broadcaster.startBroadcasting("content.isScrolling", value: .boolean(true))
        broadcaster.stopBroadcasting("content.isScrolling")
        #expect(throws: ModelError.notBroadcasting("content.isScrolling")) {
            try broadcaster.update("content.isScrolling", to: .boolean(false))
        }
        try broadcaster.startBroadcasting("content.isScrolling")
        #expect(spy.values == ["content.isScrolling=boolean(true)", "content.isScrolling=boolean(true)"])
    }

    @Test func keysAreDeclaredAndTyped() throws {
        let broadcaster = Broadcaster()
        try broadcaster.startBroadcasting("content.offsetY")
        #expect(throws: ModelError.unknownBroadcastKey("nope")) { try broadcaster.update("nope", to: .number(1)) }
        #expect(throws: ModelError.broadcastTypeMismatch(key: "content.offsetY", expected: "number")) {
            try broadcaster.update("content.offsetY", to: .boolean(true))
        }
        #expect(throws: ModelError.alreadyBroadcasting("content.offsetY")) { try broadcaster.startBroadcasting("content.offsetY") }
    }

    @Test func removingAnObserverAffectsOnlyThatKey() throws {
        let broadcaster = Broadcaster()
        for key in ["content.isZooming", "content.isDragging"] { try broadcaster.startBroadcasting(key) }
        let spy = Spy()
        try broadcaster.addObserver(spy, for: "content.isZooming")
        try broadcaster.addObserver(spy, for: "content.isDragging")
        broadcaster.removeObserver(spy, for: "content.isZooming")
        try broadcaster.update("content.isZooming", to: .boolean(true))
        try broadcaster.update("content.isDragging", to: .boolean(true))
        #expect(spy.values == ["content.isDragging=boolean(true)"])
    }

    @Test func everyWindowBroadcastsTheDeclaredKeys() {
        let browser = Browser(browserState: BrowserState(name: "p"))
        #expect(BroadcastKey.declared.allSatisfy { browser.broadcaster.isBroadcasting($0.name) })
        #expect(browser.broadcaster.value(of: "toolbar.topHeight") == nil)
    }
}
