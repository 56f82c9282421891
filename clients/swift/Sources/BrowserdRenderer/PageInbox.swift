/// A live page's waiting inputs, bounded whatever the page does (a value: ``PageMailbox`` carries it
/// between the renderer, which sends, and the page's task, which takes them one at a time).
///
/// - Only what the page's task acts on is kept (``LivePage/PageEvent``, its bindings' calls): the
///   connection drops the session's other events undecoded, and a stray one is dropped here.
/// - Stale news is coalesced as it arrives: only the latest state of the tab in the model (and the
///   latest command among them: a state that asks for a load), a frame's latest loading news, the
///   latest page state (title, favicon), and of same-document commits in a row (pushState, fragments)
///   only the latest, marked (``coalescedMark``): the page's task asks Chromium for the whole list
///   then, instead of reporting each commit from its step.
/// - Past ``capacity`` (a page that loads documents in a loop), the waiting commits and loading news
///   go, and one ``LivePage/Input/resync(loaderID:)`` takes their place: the page's list is asked for
///   once, with the loader of the latest document dropped (a load of the renderer's own is matched by it).
struct PageInbox: Sendable {
    static let capacity = 256

    private(set) var items: [LivePage.Input] = []
    private var head = 0

    init() {}

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }

    /// Whether a commit (or a resync) waits: a newer list than the one being read is coming.
    var hasPendingCommit: Bool {
        items[head...].contains {
            switch $0 {
            case .resync: return true
            case .devtools(let event): return Self.isCommit(event)
            case .model, .stepTimeout, .loadAnswered, .flushPageState: return false
            }
        }
    }

    mutating func push(_ input: LivePage.Input) {
        switch input {
        case .model(let tab):
            // The latest state stands for those before it, but a command (a state that asks for a load)
            // is kept until a later command: an echo that follows it must not hide it.
            removeAll {
                guard case .model(let pending) = $0 else { return false }
                return tab.asksForALoad || !pending.asksForALoad
            }
        case .resync, .stepTimeout, .loadAnswered, .flushPageState:
            break
        case .devtools(var event):
            guard let kind = Self.kept(event) else { return }
            switch kind {
            case .frameStartedLoading, .frameStoppedLoading:
                // A frame's loading is a state: its latest news stands for what came before (a
                // pushState storm starts and stops loading with each entry).
                let frame = event.params["frameId"]?.string
                removeAll {
                    guard case .devtools(let other) = $0, Self.isLoadingNews(other) else { return false }
                    return other.params["frameId"]?.string == frame
                }
            case .bindingCalled where event.params["name"]?.string == pageStateBinding:
                remove {
                    guard case .devtools(let other) = $0 else { return false }
                    return other.method == LivePage.PageEvent.bindingCalled.rawValue && other.params["name"]?.string == pageStateBinding
                }
            case .frameRequestedNavigation, .frameStartedNavigating:
                let frame = event.params["frameId"]?.string
                removeAll {
                    guard case .devtools(let other) = $0 else { return false }
                    return other.method == event.method && other.params["frameId"]?.string == frame
                }
            case .navigatedWithinDocument:
                // The previous same-document commit of this frame, unless a new document came between.
                let frame = event.params["frameId"]?.string
                if let last = items[head...].lastIndex(where: {
                    if case .devtools(let other) = $0 { return Self.isCommit(other) }
                    return false
                }),
                    case .devtools(let other) = items[last], other.method == LivePage.PageEvent.navigatedWithinDocument.rawValue, other.params["frameId"]?.string == frame
                {
                    items.remove(at: last)
                    // The steps of the commits between are gone with them: the page's task reads the list.
                    event.params = Self.marked(event.params)
                    items.append(.devtools(event))
                    if count > Self.capacity { overflow() }
                    return
                }
            default:
                break
            }
        }
        items.append(input)
        if count > Self.capacity { overflow() }
    }

    mutating func pop() -> LivePage.Input? {
        guard !isEmpty else { return nil }
        let item = items[head]
        head += 1
        if head > 64, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    /// Drops everything waiting (the page is closing).
    mutating func removeAll() {
        items = []
        head = 0
    }

    /// A frame's loading news: its latest stands for those before it.
    static func isLoadingNews(_ event: DevToolsEvent) -> Bool {
        event.method == LivePage.PageEvent.frameStartedLoading.rawValue || event.method == LivePage.PageEvent.frameStoppedLoading.rawValue
    }

    /// A commit of a frame's: a new document or a same-document one.
    static func isCommit(_ event: DevToolsEvent) -> Bool {
        event.method == LivePage.PageEvent.frameNavigated.rawValue || event.method == LivePage.PageEvent.navigatedWithinDocument.rawValue
    }

    /// The member a same-document commit carries when earlier ones were coalesced into it.
    static let coalescedMark = "browserdCoalesced"

    private static func marked(_ params: JSONValue) -> JSONValue {
        guard case .object(var members) = params else { return params }
        members[coalescedMark] = true
        return .object(members)
    }

    /// The kind of an event a page's task acts on (``LivePage/PageEvent``; of bindings' calls, its
    /// own two), nil for anything else: dropped as it comes.
    static func kept(_ event: DevToolsEvent) -> LivePage.PageEvent? {
        guard let kind = LivePage.PageEvent(rawValue: event.method) else { return nil }
        guard kind == .bindingCalled else { return kind }
        let name = event.params["name"]?.string
        return name == pageStateBinding || name == navigationBinding ? kind : nil
    }

    private mutating func removeAll(where matches: (LivePage.Input) -> Bool) {
        let pending = items[head...].filter { !matches($0) }
        items = Array(pending)
        head = 0
    }

    private mutating func remove(where matches: (LivePage.Input) -> Bool) {
        if let index = items[head...].lastIndex(where: matches) { items.remove(at: index) }
    }

    /// Too much waits: commits and loading news go (their latest document's loader is kept for a
    /// resync); the model's state, the page state and a detach or crash stay.
    private mutating func overflow() {
        var loaderID: String?
        var kept: [LivePage.Input] = []
        for item in items[head...] {
            switch item {
            case .model, .loadAnswered, .flushPageState: kept.append(item)
            case .resync(let loader): loaderID = loader ?? loaderID
            case .stepTimeout: break
            case .devtools(let event):
                switch LivePage.PageEvent(rawValue: event.method) {
                case .frameNavigated:
                    if event.params["frame"]?["parentId"] == nil { loaderID = event.params["frame"]?["loaderId"]?.string ?? loaderID }
                case .navigatedWithinDocument, .frameStartedLoading, .frameStoppedLoading, .domContentEventFired, .frameRequestedNavigation,
                    .frameStartedNavigating:
                    break
                case .bindingCalled where event.params["name"]?.string == navigationBinding: break
                default: kept.append(item)
                }
            }
        }
        items = kept + [.resync(loaderID: loaderID)]
        head = 0
    }
}
