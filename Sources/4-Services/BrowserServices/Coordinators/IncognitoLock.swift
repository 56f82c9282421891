import BrowserModel

/// The incognito lock of a regular profile (and its off-the-record one): while locked, nothing that
/// would show incognito content is presented.
final class IncognitoLock {
    var isLocked = false
}

/// What a navigation asks for, as interceptors see it.
enum NavigationRequest {
    case route(Route)
    case command(name: String, arguments: CommandArguments)
}

/// Runs before a navigation changes anything, and may refuse it (RouteComposer's
/// `RoutingInterceptor`). Interceptors run one after another; the first refusal stops the navigation.
protocol NavigationInterceptor: AnyObject {
    /// - Throws: ``RoutingError/interceptorRejected(_:)``.
    func check(_ request: NavigationRequest, in browser: Browser) throws
}

/// Refuses, while the profile's incognito lock is on, every route or command that would show
/// incognito content: anything in an incognito window but closing things, and from a regular window
/// the incognito tab grid page or an incognito tab.
final class IncognitoLockInterceptor: NavigationInterceptor {
    private let lock: IncognitoLock

    init(lock: IncognitoLock) { self.lock = lock }

    /// Commands that only close or go back: allowed even while locked.
    static let closing: Set<String> = ["dismissModal", "hideTabGrid", "popSettings", "closeTab"]

    func check(_ request: NavigationRequest, in browser: Browser) throws {
        guard lock.isLocked else { return }
        let shows: Bool
        switch request {
        case .route(let route):
            shows = route.showsIncognitoContent(fromIncognitoWindow: browser.isIncognito)
        case .command(let name, let arguments):
            if browser.isIncognito {
                shows = !Self.closing.contains(name)
            } else {
                shows =
                    (name == "showTabGrid" && arguments["page"] == .string("incognito"))
                    || (name == "openNewTab" && arguments["incognito"] == .bool(true))
            }
        }
        if shows {
            throw RoutingError.interceptorRejected("incognito is locked for this profile: unlock it to show incognito content")
        }
    }
}
