import BrowserdClient
import Foundation
import Logging
import NIOConcurrencyHelpers

/// One live tab's page in Chromium (a target in a Chromium window of its own, so that it renders as
/// a visible tab): made when the tab becomes live, closed when it stops being live. Its inputs (the
/// model's states of the tab, the page's DevTools events) wait in a bounded inbox (``PageInbox``:
/// stale news coalesced) and are handled one at a time, in order, by its own task, through
/// ``PageSync``; this type only carries the actions out. One page's work delays only itself.
final class LivePage: Sendable {
    enum Input: Sendable {
        case model(ModelTab)
        case devtools(DevToolsEvent)
        /// The inbox overflowed: commits were dropped; the page's list is asked for once
        /// (`loaderID`: the latest document's loader among them).
        case resync(loaderID: String?)
        /// The commit numbered so has waited ``RendererPolicy/stepWait`` for its step.
        case stepTimeout(Int)
        /// `Page.navigate` of the page's load numbered so answered (``PageSync/Event/loadAnswered(number:loaderID:errorText:)``).
        case loadAnswered(number: Int, loaderID: String?, errorText: String?)
        /// The page state held since the timer numbered so was armed goes (``PageStateBatch``).
        case flushPageState(Int)
    }

    let tabID: String
    private let mailbox = PageMailbox()
    private let task: Task<Void, Never>

    /// A target Chromium made by itself (a popup), attached and waiting for the debugger: the page
    /// adopts it instead of making one.
    struct Adopted: Sendable {
        var targetID: String
        var sessionID: String
    }

    /// - Parameters:
    ///   - adopting: a popup's target, for the tab made for it; nil makes a target for the tab.
    ///   - session: the session Chromium attached to a target the page made (every new target is
    ///     attached, waiting for the debugger, and the page resumes it once its policy is in place).
    ///   - register: called with the page's DevTools session and target once attached (its events
    ///     come through ``send(_:)``).
    init(
        tab: ModelTab, connection: DevToolsConnection, client: BrowserdClient, browserContextID: String?, adopting: Adopted? = nil,
        policy: RendererPolicy = .standard, logger: Logger, commitObserver: (@Sendable (_ tab: String, _ url: String) -> Void)? = nil,
        session: @escaping @Sendable (_ target: String) async -> String?,
        register: @escaping @Sendable (_ session: String, _ target: String) async -> Void
    ) {
        tabID = tab.id
        let mailbox = mailbox
        task = Task {
            var worker = Worker(
                tab: tab, adopting: adopting != nil, mailbox: mailbox, connection: connection, client: client, policy: policy, logger: logger)
            await worker.run(
                browserContextID: browserContextID, adopting: adopting, commitObserver: commitObserver, session: session, register: register)
        }
    }

    func send(_ input: Input) { mailbox.send(input) }

    /// The events of its session a page's task acts on (the page's `handle` switches over them, so a
    /// method handled is a method let through, and the other way round); every other event is dropped
    /// undecoded on the connection's reader thread (``DevToolsConnection/session(_:events:deliver:)``).
    /// A load's DOMContentLoaded is `Page.domContentEventFired` (the top document's alone): lifecycle
    /// events stay off, as do the Runtime domain's (execution contexts, console calls: a page could
    /// send those without end).
    enum PageEvent: String, CaseIterable {
        case frameRequestedNavigation = "Page.frameRequestedNavigation"
        case frameStartedNavigating = "Page.frameStartedNavigating"
        case frameNavigated = "Page.frameNavigated"
        case navigatedWithinDocument = "Page.navigatedWithinDocument"
        case frameStartedLoading = "Page.frameStartedLoading"
        case domContentEventFired = "Page.domContentEventFired"
        case frameStoppedLoading = "Page.frameStoppedLoading"
        case detachedFromTarget = "Target.detachedFromTarget"
        case inspectorDetached = "Inspector.detached"
        case targetCrashed = "Inspector.targetCrashed"
        case bindingCalled = "Runtime.bindingCalled"
    }

    /// The methods of ``PageEvent``, as the connection's filter takes them.
    static let eventMethods = Set(PageEvent.allCases.map(\.rawValue))

    /// Whether browserd answered a report with "this tab does not exist": it was closed while the
    /// report was on its way (the page closes next), so nothing was refused and nothing is retried.
    static func tabIsGone(_ error: any Error) -> Bool {
        BrowserdProblem.from(error)?.type == "/problems/tab-not-found"
    }

    /// Ends it at once: what waits is dropped; its picture is taken and its target closed (unless the
    /// browser is gone: then its task is cancelled, and every call under way fails at once).
    func close(closingTarget: Bool) async {
        mailbox.finish()
        if !closingTarget { task.cancel() }
        await task.value
    }
}

/// A page's inbox between the renderer (which sends) and the page's task (which waits for the next
/// input): ``PageInbox`` under a lock, and the task's wait.
final class PageMailbox: Sendable {
    private struct State {
        var inbox = PageInbox()
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = NIOLockedValueBox(State())

    func send(_ input: LivePage.Input) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard !state.finished else { return nil }
            state.inbox.push(input)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// No more inputs: what waits is dropped, and ``next()`` answers nil.
    func finish() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            state.inbox.removeAll()
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Whether a newer commit waits (a list being read now is stale already).
    var hasPendingCommit: Bool { state.withLockedValue { $0.inbox.hasPendingCommit } }

    /// The next input; nil once finished or when the task is cancelled.
    func next() async -> LivePage.Input? {
        while !Task.isCancelled {
            let (input, finished) = state.withLockedValue { ($0.inbox.pop(), $0.finished) }
            if let input { return input }
            if finished { return nil }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLockedValue { state in
                        guard state.inbox.isEmpty, !state.finished, !Task.isCancelled else { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
        }
        return nil
    }
}

/// The binding the page's script reports through.
let pageStateBinding = "__browserdPageState"

/// The page's script: reports the top document's title and favicon through a binding whenever
/// they change (`document.title` set late, a `<link rel=icon>` added), as Chromium's tab strip sees them.
let pageStateScript = """
    (() => {
      if (window !== window.top) return;
      let last = null;
      const report = () => {
        const icon = document.querySelector('link[rel~="icon"]');
        // What the model keeps, no more (PageSync fits it again: a page may call the binding itself).
        const full = document.title;
        const title = Array.from(full.length > 4096 ? full.slice(0, 4096) : full).slice(0, 1024).join('');
        const favicon = icon && icon.href.length <= 65536 ? icon.href : null;
        const state = JSON.stringify({ url: location.href, title, favicon });
        if (state === last) return;
        last = state;
        try { globalThis.\(pageStateBinding)(state); } catch (e) {}
      };
      new MutationObserver(report).observe(document, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['href', 'rel'] });
      document.addEventListener('DOMContentLoaded', report);
      window.addEventListener('load', report);
    })();
    """

/// The binding the renderer's own world reports a page's navigations through, and that world's name
/// (an isolated world: the page can neither call the binding nor touch the script).
let navigationBinding = "__browserdNavigation"
let navigationWorld = "browserd"

/// The renderer's world's script: how each navigation of the top document moves in the page's list, as
/// the Navigation API says it (`push`, `replace`, `reload`, `traverse`): a navigation the page starts,
/// before it does (`navigate`: the `intent`, matched to its commit by its loader), a new document's
/// (`navigation.activation`), a same-document one's (`currententrychange`).
let navigationScript = """
    (() => {
      if (window !== window.top || !globalThis.navigation) return;
      const tell = (kind, type, url) => {
        try { globalThis.\(navigationBinding)(JSON.stringify({ kind, type, url })); } catch (e) {}
      };
      if (navigation.activation) tell('document', navigation.activation.navigationType, location.href);
      navigation.addEventListener('navigate', (event) => {
        if (!event.destination.sameDocument) tell('intent', event.navigationType, event.destination.url);
      });
      navigation.addEventListener('currententrychange', (event) => tell('same', event.navigationType, location.href));
    })();
    """

private struct Worker {
    var sync: PageSync
    let mailbox: PageMailbox
    let connection: DevToolsConnection
    let client: BrowserdClient
    /// Its reports of commits and page state (the hot two: ``TabReports``).
    var reports: TabReports { TabReports(client: client) }
    let policy: RendererPolicy
    let logger: Logger
    var targetID: String?
    var sessionID: String?
    /// The page's session, once attached: its events, its calls.
    var devtools: DevToolsSession?
    var mainFrameID: String?
    /// A commit of the page's own waiting for its step (``navigationScript``'s message) to be
    /// reported from it (``PageSync/Event/stepped``), numbered for its timeout.
    var awaitingStep: (loaderID: String?, url: String?, sameDocument: Bool, number: Int)?
    var steps = 0
    /// The reason of the top frame's navigation the page asked for, until it starts, and the
    /// transition of the one started last (`typed` when nobody in the page asked: a client's).
    var requestedReason: String?
    var startedTransition = "link"
    /// The step of the new-document navigation the page said it starts (its `navigate` event), until
    /// it starts; then the started navigation's step, by its loader: its commit is reported at once.
    var intent: PageSync.Step?
    var startedStep: (loaderID: String, step: PageSync.Step)?
    /// Whether a document of the page's own has committed (a picture is taken only then).
    var documentCommitted = false
    /// The page's pictures (one taken at a time, the same one never put twice).
    let pictures = PagePictures()
    /// Subframes whose first document is loading (its commit makes no entry), at most
    /// ``maximumInitialFrameLoads`` (a page making frames in a loop: past it the set starts again, and
    /// a first document's commit is only read for nothing).
    var initialFrameLoads: Set<String> = []
    static let maximumInitialFrameLoads = 1_024
    /// Page state held to go as one report (``RendererPolicy/pageStateDelay``), and the number of its
    /// timer (nil: none armed).
    var heldPageState = PageStateBatch()
    var pageStateTimer: Int?
    var pageStateTimers = 0
    /// The members of a report browserd refused, logged once each for this page.
    var refusalsLogged: Set<String> = []
    let clock = ContinuousClock()
    let started = ContinuousClock.now

    init(
        tab: ModelTab, adopting: Bool, mailbox: PageMailbox, connection: DevToolsConnection, client: BrowserdClient, policy: RendererPolicy,
        logger: Logger
    ) {
        sync = adopting ? PageSync(adopting: tab) : PageSync(model: tab)
        self.mailbox = mailbox
        self.connection = connection
        self.client = client
        self.policy = policy
        self.logger = logger
    }

    var now: Double {
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    mutating func run(
        browserContextID: String?, adopting: LivePage.Adopted?, commitObserver: (@Sendable (String, String) -> Void)?,
        session attachedSession: @Sendable (String) async -> String?, register: @Sendable (String, String) async -> Void
    ) async {
        do {
            if let adopting {
                targetID = adopting.targetID
                sessionID = adopting.sessionID
            } else {
                var params: [String: JSONValue] = ["url": "about:blank", "newWindow": true]
                if let browserContextID { params["browserContextId"] = .string(browserContextID) }
                let target = try await connection.call("Target.createTarget", .object(params))
                targetID = target["targetId"]?.string
                guard let targetID else { return }
                sessionID = await attachedSession(targetID)
                if sessionID == nil { logger.warning("page for tab \(sync.model.id): Chromium attached no session to its target") }
            }
            guard let targetID, let sessionID else { return }
            await register(sessionID, targetID)
            // The page's events come straight from the connection's reader into its inbox (its
            // ``DevToolsSession``): no other page's work stands between.
            let (tabID, mailbox) = (sync.model.id, mailbox)
            devtools = connection.session(sessionID, events: LivePage.eventMethods) { event in
                if let commitObserver, event.method == "Page.frameNavigated", event.params["frame"]?["parentId"] == nil,
                    let url = event.params["frame"]?["url"]?.string
                {
                    commitObserver(tabID, url)
                }
                mailbox.send(.devtools(event))
            }
            // What the page may reach is the fence's (``FencingProxy``), for every request Chromium sends.
            // The page's own domains, its binding and script: sent in order, answered once the target
            // runs (a popup's renderer answers only after `runIfWaitingForDebugger`, which goes last,
            // so Chromium takes them all before the page's first document).
            let (connection, session) = (connection, sessionID)
            async let page = connection.call("Page.enable", session: session)
            async let runtime = connection.call("Runtime.enable", session: session)
            async let binding = connection.call("Runtime.addBinding", ["name": .string(pageStateBinding)], session: session)
            async let script = connection.call("Page.addScriptToEvaluateOnNewDocument", ["source": .string(pageStateScript)], session: session)
            async let stepBinding = connection.call(
                "Runtime.addBinding", ["name": .string(navigationBinding), "executionContextName": .string(navigationWorld)], session: session)
            async let stepScript = connection.call(
                "Page.addScriptToEvaluateOnNewDocument", ["source": .string(navigationScript), "worldName": .string(navigationWorld)], session: session)
            async let tree = connection.call("Page.getFrameTree", session: session)
            async let inspector = connection.call("Inspector.enable", session: session)
            // Every new target waits for the debugger until the policy and the script are in place.
            async let run = connection.call("Runtime.runIfWaitingForDebugger", session: session)
            _ = try await (page, runtime, binding, script, inspector, run, stepBinding, stepScript)
            mainFrameID = try await tree["frameTree"]?["frame"]?["id"]?.string
            // A popup's first document loads on its own, and its commit becomes the tab's entry.
            if adopting == nil { await perform(sync.start()) }
        } catch {
            logger.warning("page for tab \(sync.model.id) not made: \(error)")
        }
        while let input = await mailbox.next() {
            switch input {
            case .model(let tab):
                await readAwaitedCommit()
                await perform(sync.event(.model(tab), now: now))
            case .devtools(let event): await handle(event)
            case .resync(let loaderID):
                await readAwaitedCommit()
                await historyChanged(loaderID: loaderID, url: nil)
            case .stepTimeout(let number):
                guard awaitingStep?.number == number else { break }
                logger.debug("tab \(sync.model.id): no step for a commit within \(policy.stepWait): the list is read")
                await readAwaitedCommit()
            case .loadAnswered(let number, let loaderID, let errorText):
                if let errorText { logger.debug("tab \(sync.model.id): load \(number) ended: \(errorText)") }
                await perform(sync.event(.loadAnswered(number: number, loaderID: loaderID, errorText: errorText), now: now))
            case .flushPageState(let number):
                guard pageStateTimer == number else { break }
                await flushPageState()
            }
        }
        if !Task.isCancelled { await flushPageState() }
        // Closed: its picture as it leaves (what the tab switcher shows of it from now on), then the
        // target goes too, unless the browser is gone (then the task was cancelled).
        if !Task.isCancelled, !sync.closedByPage, let targetID {
            await takeSnapshot()
            await closeTarget(targetID)
        }
        devtools?.end()
    }

    /// Closes the page's target, and closes it again while it is still there: Chromium answers
    /// `Target.closeTarget` of a page in the middle of a load and keeps the page (seen for about one
    /// page in ten while a window's tabs open quickly); a second close, once the load went on, ends it.
    func closeTarget(_ targetID: String) async {
        for attempt in 0..<policy.closeAttempts {
            _ = try? await connection.call("Target.closeTarget", ["targetId": .string(targetID)], timeout: policy.quickCommandTimeout)
            try? await Task.sleep(for: policy.closeRetryInterval)
            // Gone: getTargetInfo fails with "No target with given id found".
            guard (try? await connection.call("Target.getTargetInfo", ["targetId": .string(targetID)], timeout: policy.quickCommandTimeout)) != nil
            else {
                return
            }
            logger.debug("page for tab \(sync.model.id): its target is still open after a close (attempt \(attempt + 1))")
        }
        logger.warning("page for tab \(sync.model.id): its target did not close")
    }

    /// Takes the page's picture off its inbox's path (``PagePictures``): a screenshot asked while the
    /// page navigates waits for the next document to paint (seconds, when a client navigates again at
    /// once), and the commits behind it must not.
    func takeSnapshotSoon() {
        guard let sessionID, documentCommitted, !sync.model.crashed else { return }
        let (pictures, connection, client, policy, logger, tab) = (pictures, connection, client, policy, logger, sync.model.id)
        Task { await pictures.take(tab: tab, session: sessionID, connection: connection, client: client, policy: policy, logger: logger) }
    }

    /// Takes the page's picture and waits for it (the page is closing: its last picture).
    func takeSnapshot() async {
        guard let sessionID, documentCommitted, !sync.model.crashed else { return }
        // One under way is let finish first (it may show an older document).
        await pictures.settle(within: policy.snapshotTimeout)
        await pictures.take(tab: sync.model.id, session: sessionID, connection: connection, client: client, policy: policy, logger: logger)
    }

    @discardableResult
    func call(_ method: String, _ params: JSONValue = [:], timeout: Duration? = nil) async throws -> JSONValue {
        try await connection.call(method, params, session: sessionID, timeout: timeout ?? policy.commandTimeout)
    }

    /// A commit waits for its step no more: the page's list is read for it.
    mutating func readAwaitedCommit() async {
        guard let awaiting = awaitingStep else { return }
        awaitingStep = nil
        await historyChanged(loaderID: awaiting.loaderID, url: awaiting.url)
    }

    /// A commit of the top document: reported from its step when it comes (``PageSync/followsSteps``),
    /// else (or once it is late) from the page's list.
    mutating func committed(loaderID: String?, url: String?, sameDocument: Bool) async {
        await readAwaitedCommit()
        // Commits queued behind this one (a storm): the list, which tells them all at once.
        guard policy.followsSteps, sync.followsSteps, !mailbox.hasPendingCommit, let url else {
            startedStep = nil
            return await historyChanged(loaderID: loaderID, url: url)
        }
        // A new document whose step was known as it started: reported now.
        if !sameDocument, let started = startedStep, started.loaderID == loaderID {
            startedStep = nil
            if sync.follows(started.step, to: url) { return await step(started.step, to: url, sameDocument: false) }
        }
        steps += 1
        awaitingStep = (loaderID, url, sameDocument, steps)
        let (mailbox, number) = (mailbox, steps)
        LoopTimer.after(policy.stepWait) { mailbox.send(.stepTimeout(number)) }
    }

    /// The renderer's world told how the page navigates or navigated (``navigationScript``).
    mutating func stepTold(_ payload: String) async {
        guard let told = try? JSONValue.parse(Array(payload.utf8)), let kind = told["kind"]?.string, let url = told["url"]?.string else { return }
        let step = told["type"]?.string.flatMap(PageSync.Step.init(rawValue:))
        if kind == "intent" {
            intent = step
            return
        }
        guard let awaiting = awaitingStep else { return }
        guard url == awaiting.url, (kind == "same") == awaiting.sameDocument, let step, sync.follows(step, to: url) else {
            return await readAwaitedCommit()
        }
        awaitingStep = nil
        await self.step(step, to: url, sameDocument: awaiting.sameDocument)
    }

    /// Reports a commit from its step, then (the report gone) reads the page's list for the ids of the
    /// entries steps made, unless a newer commit waits: a list read later for a storm of commits lines
    /// its entries up by them (without them, a storm past Chromium's 50 entries was once taken for a
    /// replaced entry). A traversal to an entry still unnamed asks for the list itself
    /// (``PageSync/Action/readHistory``).
    mutating func step(_ step: PageSync.Step, to url: String, sameDocument: Bool) async {
        if !sameDocument, PageSync.pageCanShow(url) { documentCommitted = true }
        let transition = sameDocument ? "link" : startedTransition
        await perform(sync.event(.stepped(url: url, step: step, sameDocument: sameDocument, transition: transition), now: now))
        guard !mailbox.hasPendingCommit, let read = try? await call("Page.getNavigationHistory", timeout: policy.quickCommandTimeout),
            let history = PageHistory(read)
        else { return }
        await perform(sync.event(.refreshed(history), now: now))
    }

    /// Sends the page state held (``PageStateBatch``), before `next` when another report follows.
    mutating func flushPageState(before next: PageSync.Action? = nil) async {
        pageStateTimer = nil
        guard let report = heldPageState.take(before: next),
            case .reportPageState(let title, let loading, let progress, let favicon) = report
        else { return }
        await reportPageState(report, title: title, loading: loading, progress: progress, favicon: favicon)
    }

    /// Holds a page-state report for ``RendererPolicy/pageStateDelay`` (its timer armed once).
    mutating func hold(_ report: PageSync.Action) {
        _ = heldPageState.hold(report)
        guard pageStateTimer == nil else { return }
        pageStateTimers += 1
        pageStateTimer = pageStateTimers
        let (mailbox, number) = (mailbox, pageStateTimers)
        LoopTimer.after(policy.pageStateDelay) { mailbox.send(.flushPageState(number)) }
    }

    mutating func handle(_ event: DevToolsEvent) async {
        logger.trace("page event", metadata: ["tab": "\(sync.model.id)", "method": "\(event.method)"])
        guard let kind = LivePage.PageEvent(rawValue: event.method) else { return }
        switch kind {
        case .frameRequestedNavigation:
            guard event.params["frameId"]?.string == mainFrameID else {
                // A subframe's first document (its `src`) makes no entry: its commit needs no reading.
                if event.params["reason"]?.string == "initialFrameNavigation", let frame = event.params["frameId"]?.string {
                    if initialFrameLoads.count >= Self.maximumInitialFrameLoads { initialFrameLoads.removeAll() }
                    initialFrameLoads.insert(frame)
                }
                return
            }
            requestedReason = event.params["reason"]?.string
        case .frameStartedNavigating:
            guard event.params["frameId"]?.string == mainFrameID else { return }
            startedTransition = requestedReason.map(PageSync.transition(forReason:)) ?? "typed"
            let step = PageSync.startedStep(
                kind: event.params["navigationType"]?.string, to: event.params["url"]?.string, requested: requestedReason != nil, intent: intent,
                showing: sync.page?.current?.url)
            startedStep = event.params["loaderId"]?.string.flatMap { loader in step.map { (loader, $0) } }
            requestedReason = nil
            intent = nil
            if event.params["navigationType"]?.string == "differentDocument" {
                sync.navigationStarted(loaderID: event.params["loaderId"]?.string, url: event.params["url"]?.string)
            }
        case .frameNavigated:
            guard event.params["frame"]?["parentId"] == nil else {
                // A subframe's own navigation after its first document (a link in an iframe, a script's,
                // a traversal) may make or move to an entry of the tab's (Chromium's manual subframe
                // navigation): the list tells.
                guard let frame = event.params["frame"]?["id"]?.string, initialFrameLoads.remove(frame) == nil else { return }
                await readAwaitedCommit()
                return await historyChanged(loaderID: nil, url: nil, subframe: true)
            }
            mainFrameID = event.params["frame"]?["id"]?.string ?? mainFrameID
            let frame = event.params["frame"]
            let url = frame?["url"]?.string.map { $0 + (frame?["urlFragment"]?.string ?? "") }
            await committed(loaderID: frame?["loaderId"]?.string, url: url, sameDocument: false)
        case .navigatedWithinDocument:
            guard event.params["frameId"]?.string == mainFrameID else { return }
            // Coalesced in the inbox (a pushState storm): the steps between are gone, the list tells.
            if event.params[PageInbox.coalescedMark] != nil {
                await readAwaitedCommit()
                return await historyChanged(loaderID: nil, url: event.params["url"]?.string)
            }
            await committed(loaderID: nil, url: event.params["url"]?.string, sameDocument: true)
        case .frameStartedLoading:
            guard event.params["frameId"]?.string == mainFrameID else { return }
            await perform(sync.event(.loading(true, progress: 0.1), now: now))
        case .domContentEventFired:
            await perform(sync.event(.loading(true, progress: 0.7), now: now))
        case .frameStoppedLoading:
            guard event.params["frameId"]?.string == mainFrameID else { return }
            // The page has loaded: its picture too, for a tab switcher (Chrome's tab grid), when due.
            await perform(sync.event(.loading(false, progress: 1), now: now))
        case .detachedFromTarget, .inspectorDetached:
            // The page closed itself (`window.close()`, which Chromium allows a page with one history
            // entry or opened by script): its tab closes, as Chromium's `WebStateDelegate::CloseWebState`.
            // (A target the renderer closes is no longer followed by then.)
            guard kind == .detachedFromTarget || event.params["reason"]?.string == "target_closed" else { return }
            await perform(sync.event(.closedByPage, now: now))
        case .targetCrashed:
            await perform(sync.event(.crashed, now: now))
        case .bindingCalled where event.params["name"]?.string == navigationBinding:
            guard let payload = event.params["payload"]?.string else { return }
            await stepTold(payload)
        case .bindingCalled:
            guard event.params["name"]?.string == pageStateBinding, let payload = event.params["payload"]?.string,
                let state = try? JSONValue.parse(Array(payload.utf8))
            else { return }
            await perform(
                sync.event(
                    .pageState(title: state["title"]?.string ?? "", faviconURL: state["favicon"]?.string, url: state["url"]?.string), now: now))
        }
    }

    mutating func historyChanged(loaderID: String?, url: String?, subframe: Bool = false) async {
        var answer: PageHistory?
        reading: for attempt in 0..<policy.historyAttempts where !Task.isCancelled {
            do {
                guard let history = PageHistory(try await call("Page.getNavigationHistory")) else { break }
                let reading =
                    subframe
                    ? PageSync.subframeReading(
                        history, before: sync.page, attempt: attempt, attempts: policy.historyAttempts, newerCommitWaits: mailbox.hasPendingCommit)
                    : PageSync.reading(
                        history, committed: url, attempt: attempt, attempts: policy.historyAttempts, newerCommitWaits: mailbox.hasPendingCommit)
                switch reading {
                case .use(let taken):
                    answer = taken
                    break reading
                case .askAgain:
                    // Kept should the next asks fail.
                    answer = PageSync.filled(history, committed: url)
                }
                logger.debug("tab \(sync.model.id): navigation history not showing the commit yet (attempt \(attempt))")
            } catch {
                logger.debug("tab \(sync.model.id): no navigation history (attempt \(attempt)): \(error)")
            }
            try? await Task.sleep(for: policy.historyRetryInterval)
        }
        guard var history = answer else { return }
        if !subframe, sync.firstCommitLeavesBlankEntry(history), (try? await call("Page.resetNavigationHistory")) != nil,
            let again = try? await call("Page.getNavigationHistory"), let fresh = PageHistory(again)
        {
            history = fresh
        }
        logger.trace("page history", metadata: ["tab": "\(sync.model.id)", "history": "\(history)"])
        if let current = history.current, PageSync.pageCanShow(current.url) { documentCommitted = true }
        await perform(sync.event(.committed(history, loaderID: loaderID, url: url, subframe: subframe), now: now))
    }

    mutating func perform(_ actions: [PageSync.Action]) async {
        for action in actions {
            logger.trace("page action", metadata: ["tab": "\(sync.model.id)", "action": "\(action)"])
            switch action {
            case .reportPageState where policy.pageStateDelay > .zero:
                hold(action)
                continue
            case .reportNavigation, .reportMove, .reportCommit, .reportDiscard, .reportCrash, .reportClosed:
                // What the page showed before goes first, in order.
                if !heldPageState.isEmpty { await flushPageState(before: action) }
            default:
                break
            }
            do {
                switch action {
                case .load(let url):
                    // Answered when the load commits or fails (seconds for a slow server): the page's
                    // task goes on meanwhile, so that a newer navigation replaces this one at once.
                    let (number, stale) = sync.loadSent(url: url)
                    if stale {
                        logger.debug("tab \(sync.model.id): a load a newer one replaced is not sent")
                        continue
                    }
                    let (connection, session, timeout, mailbox) = (connection, sessionID, policy.commandTimeout, mailbox)
                    Task {
                        let result = try? await connection.call("Page.navigate", ["url": .string(url)], session: session, timeout: timeout)
                        guard let number else { return }
                        mailbox.send(.loadAnswered(number: number, loaderID: result?["loaderId"]?.string, errorText: result?["errorText"]?.string))
                    }
                case .traverse(let entryID):
                    try await call("Page.navigateToHistoryEntry", ["entryId": .number(Double(entryID))])
                case .reload:
                    try await call("Page.reload")
                case .readHistory:
                    // A failed read names nothing: the load goes by URL then.
                    let read = try? await call("Page.getNavigationHistory", timeout: policy.quickCommandTimeout)
                    guard let history = read.flatMap(PageHistory.init) ?? sync.page else { continue }
                    await perform(sync.event(.refreshed(history), now: now))
                case .reportNavigation(let url, let transition, let replace, let sameDocument):
                    let tab = try await reports.navigate(
                        sync.model.id, url: url, transition: Components.Schemas.NavigateTab.TransitionPayload(rawValue: transition)?.rawValue ?? "link", replace: replace,
                        sameDocument: sameDocument)
                    await perform(sync.reported(action, answer: tab, now: now))
                case .reportMove(let offset):
                    let tab = try await client.api.goTab(path: .init(tabId: sync.model.id), body: .json(.init(offset: offset, committed: true))).ok.body.json
                    await perform(sync.reported(action, answer: ModelTab(tab), now: now))
                case .reportCommit(let id, let url):
                    let tab = try await client.api.commitPendingNavigation(path: .init(tabId: sync.model.id), body: .json(.init(id: id, url: url)))
                        .ok.body.json
                    await perform(sync.reported(action, answer: ModelTab(tab), now: now))
                case .reportDiscard(let id):
                    let tab = try await client.api.discardPendingNavigation(path: .init(tabId: sync.model.id), body: .json(.init(id: id))).ok.body.json
                    await perform(sync.reported(action, answer: ModelTab(tab), now: now))
                case .reportCrash:
                    let tab = try await client.api.updateTab(
                        path: .init(tabId: sync.model.id), body: .json(.init(loading: false, crashed: true))
                    ).ok.body.json
                    await perform(sync.reported(action, answer: ModelTab(tab), now: now))
                case .reportPageState(let title, let loading, let progress, let favicon):
                    await reportPageState(action, title: title, loading: loading, progress: progress, favicon: favicon)
                case .reportClosed:
                    _ = try await client.api.closeTab(path: .init(tabId: sync.model.id)).noContent
                case .takePicture:
                    takeSnapshotSoon()
                }
            } catch {
                if Task.isCancelled { return }
                if LivePage.tabIsGone(error) {
                    // Closed at browserd while this report was on its way (the page closes next).
                    logger.debug("tab \(sync.model.id): \(action): the tab is gone")
                    return
                }
                logger.warning("tab \(sync.model.id): \(action): \(error)")
            }
        }
    }

    /// `PATCH` of the page's state; a refused one (4xx) is sent again member by member, so that the
    /// title, the favicon and the loading state never go with a sibling browserd refused. A refusal is
    /// logged once per member for the page, with the value's length (never the value).
    mutating func reportPageState(_ action: PageSync.Action, title: String?, loading: Bool?, progress: Double?, favicon: String??) async {
        let (reports, tabID) = (reports, sync.model.id)
        func patch(title: String? = nil, loading: Bool? = nil, progress: Double? = nil, favicon: String? = nil) async throws -> ModelTab {
            try await reports.update(tabID, title: title, loading: loading, progress: progress, faviconURL: favicon)
        }
        do {
            let tab = try await patch(title: title, loading: loading, progress: progress, favicon: favicon ?? nil)
            await perform(sync.reported(action, answer: tab, now: now))
            return
        } catch {
            if LivePage.tabIsGone(error) {
                // The tab was closed while its state was held: nothing is refused, there is no one to tell.
                logger.debug("tab \(sync.model.id): page state not sent: the tab is gone")
                return
            }
            guard let status = BrowserdProblem.from(error)?.status, (400..<500).contains(status) else {
                if !Task.isCancelled { logger.warning("tab \(sync.model.id): \(action): \(error)") }
                return
            }
        }
        var members: [(name: String, length: Int, alone: PageSync.Action)] = []
        if let title {
            members.append(("title", title.unicodeScalars.count, .reportPageState(title: title, loading: nil, progress: nil, faviconURL: nil)))
        }
        if loading != nil || progress != nil {
            members.append(("loading", 0, .reportPageState(title: nil, loading: loading, progress: progress, faviconURL: nil)))
        }
        if let favicon {
            members.append(("faviconUrl", favicon?.utf8.count ?? 0, .reportPageState(title: nil, loading: nil, progress: nil, faviconURL: favicon)))
        }
        for member in members {
            guard case .reportPageState(let title, let loading, let progress, let favicon) = member.alone else { continue }
            do {
                let tab = try await patch(title: title, loading: loading, progress: progress, favicon: favicon ?? nil)
                await perform(sync.reported(member.alone, answer: tab, now: now))
            } catch {
                if Task.isCancelled { return }
                if refusalsLogged.insert(member.name).inserted {
                    let problem = BrowserdProblem.from(error).map { "\($0.status) \($0.title)" } ?? "\(error)"
                    logger.warning("tab \(sync.model.id): browserd refused the page's \(member.name) (length \(member.length)): \(problem)")
                }
            }
        }
    }
}

/// One page's pictures (Chrome's tab grid, iOS's `SnapshotTabHelper`): a small JPEG of what it shows (a
/// tenth of its pixels), put as the tab's picture unless it is the one put last. One is taken at a
/// time; asked for while one is under way, none more is taken.
final class PagePictures: Sendable {
    private struct State {
        var last: Data?
        var underWay = false
    }
    private let state = NIOLockedValueBox(State())

    /// Waits until no picture is under way (at most `limit`).
    func settle(within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while state.withLockedValue({ $0.underWay }), ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    func take(tab: String, session: String, connection: DevToolsConnection, client: BrowserdClient, policy: RendererPolicy, logger: Logger) async {
        guard
            state.withLockedValue({ state in
                defer { state.underWay = true }
                return !state.underWay
            })
        else { return }
        defer { state.withLockedValue { $0.underWay = false } }
        do {
            let metrics = try await connection.call("Page.getLayoutMetrics", session: session, timeout: policy.quickCommandTimeout)
            let viewport = metrics["cssLayoutViewport"]
            let width = viewport?["clientWidth"]?.double ?? 800
            let height = viewport?["clientHeight"]?.double ?? 600
            let shot = try await connection.call(
                "Page.captureScreenshot",
                [
                    "format": "jpeg", "quality": .number(Double(policy.snapshotQuality)), "optimizeForSpeed": true,
                    "clip": ["x": 0, "y": 0, "width": .number(width), "height": .number(height), "scale": .number(policy.snapshotScale)],
                ], session: session, timeout: policy.snapshotTimeout)
            guard let base64 = shot["data"]?.string, let bytes = Data(base64Encoded: base64), bytes.starts(with: [0xFF, 0xD8, 0xFF]) else {
                return
            }
            guard bytes != state.withLockedValue({ $0.last }) else { return }
            _ = try await client.api.putTabSnapshot(path: .init(tabId: tab), body: .jpeg(.init(bytes))).ok
            state.withLockedValue { $0.last = bytes }
            logger.debug("tab \(tab): snapshot put (\(bytes.count) bytes)")
        } catch {
            logger.debug("tab \(tab): no snapshot: \(error)")
        }
    }
}
