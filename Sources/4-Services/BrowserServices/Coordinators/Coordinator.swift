import BrowserModel

/// A node of a window's presentation tree (Chromium's `BrowserCoordinator`): it creates, starts and
/// stops child coordinators and handles navigation commands; it holds no business logic (anything
/// that changes tabs is dispatched to a mediator).
///
/// Rules: `start` and `stop` are idempotent; stopping stops the children first (last child first);
/// a removed child is stopped; a child never reaches its parent's concrete type (it sends commands
/// through the window's dispatcher).
class Coordinator {
    let id: String
    let browser: Browser
    private(set) var children: [Coordinator] = []
    private(set) weak var parent: Coordinator?
    private(set) var isStarted = false
    /// Where changes of the tree are reported (the root, through a protocol).
    weak var changes: (any PresentationChanges)?

    init(id: String, browser: Browser) {
        self.id = id
        self.browser = browser
    }

    /// The node's kind, parameters and the commands its screen may send.
    var kind: String { fatalError("subclass") }
    var params: [String: String] { [:] }
    var navigator: [String] { [] }
    /// Whether a route may dismiss it (a share sheet is closed only by its user).
    var isDismissable: Bool { true }

    var node: UINode {
        UINode(id: id, kind: kind, params: params, children: children.map(\.node), navigator: navigator)
    }

    func addChild(_ child: Coordinator) {
        guard child.parent == nil else { return }
        child.parent = self
        child.changes = changes
        children.append(child)
    }

    /// Stops and detaches `child` (no-op for a coordinator that is not a child).
    func removeChild(_ child: Coordinator) {
        guard let index = children.firstIndex(where: { $0 === child }) else { return }
        child.stop()
        children.remove(at: index)
        child.parent = nil
    }

    func start() {
        guard !isStarted else { return }
        isStarted = true
        didStart()
    }

    func stop() {
        guard isStarted else { return }
        for child in children.reversed() { child.stop() }
        isStarted = false
        didStop()
    }

    /// Registers what the coordinator handles (called once per start).
    func didStart() {}
    /// Unregisters it.
    func didStop() { browser.dispatcher.unregisterAll(owner: self) }

    /// Registers a UI command on the window's dispatcher, owned by this coordinator.
    func handle(_ command: Command<CommandArguments, CommandResult>, _ handler: @escaping (CommandArguments) throws -> CommandResult) {
        browser.dispatcher.install(command, owner: self, handlerName: String(describing: type(of: self)), handler)
    }

    /// Depth-first search of the subtree.
    func find(_ id: String) -> Coordinator? {
        if self.id == id { return self }
        for child in children { if let found = child.find(id) { return found } }
        return nil
    }
}

/// How a coordinator reports changes of the presentation tree it made itself (a pushed page popped,
/// the omnibox focused): the root collects them for the answer and the presentation consumer.
protocol PresentationChanges: AnyObject {
    func presented(_ coordinator: Coordinator)
    func dismissed(_ coordinator: Coordinator)
    func pushed(_ coordinator: Coordinator)
    func popped(_ coordinator: Coordinator)
    func changed(_ coordinator: Coordinator)
}
