public import BrowserModel
import Foundation

/// A route kept until the window can take it (it arrived during restore).
public struct SavedRoute: Sendable, Equatable {
    public var id: String
    public var url: String
    public var route: Route
}

// Presentation: the coordinators' tree, routes, presentation commands, the incognito lock and the
// action log, all through the window's dispatcher on the profile's executor.
extension BrowserService {
    /// The window's presentation tree.
    public func presentation(of id: BrowserID) async throws -> UINode {
        try await withWindow(id, ifMatch: nil, mutating: false) { _, browser in
            guard let coordinator = browser.userData.get(BrowserCoordinator.self) else { throw ModelError.browserNotFound(id) }
            return coordinator.node
        }
    }

    /// Takes a window to a `browserd://` route, through its dispatcher (so the action log has it).
    /// - Returns: the tree and its changes, and the window's version.
    /// - Throws: ``RoutingError`` (nothing changed), or a model error of the tab change it asked for.
    public func route(_ url: String, in id: BrowserID) async throws -> (result: PresentationResult, version: Int) {
        let route = try RouteBuilder.route(from: url)
        return try await withWindow(id, ifMatch: nil) { _, browser in
            let result = try browser.dispatcher.dispatch(UICommands.route, route)
            return (result, browser.userData.get(WindowMediator.self)?.version ?? 0)
        }
    }

    /// Keeps a route for a window that cannot take it yet (restore in progress); a newer one for the
    /// same window replaces it.
    /// - Throws: ``RoutingError/invalidRoute(_:)`` for a URL that is no route.
    public func saveRoute(_ url: String, for id: BrowserID) throws -> SavedRoute {
        let saved = SavedRoute(
            id: "r" + String(UInt64.random(in: 0...UInt64.max), radix: 16), url: url,
            route: try RouteBuilder.route(from: url))
        savedRoutes.withLock { $0[id] = saved }
        return saved
    }

    /// Follows the saved routes of windows that exist now; their outcomes go to the windows' action
    /// logs and `ui` streams.
    /// - Returns: each saved route with its outcome (an error's description when it failed).
    @discardableResult
    public func runSavedRoutes() async -> [(window: BrowserID, route: SavedRoute, outcome: String)] {
        let saved = savedRoutes.withLock { routes in
            defer { routes = [:] }
            return routes
        }
        var outcomes: [(BrowserID, SavedRoute, String)] = []
        for (window, route) in saved.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            do {
                _ = try await self.route(route.url, in: window)
                outcomes.append((window, route, "ok"))
            } catch {
                outcomes.append((window, route, "\(error)"))
            }
        }
        return outcomes
    }

    /// Locks or unlocks incognito for a regular profile (and its off-the-record one).
    public func setIncognitoLock(profile id: ProfileID, locked: Bool) async throws {
        guard let entry = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        guard entry.rootID == id else {
            throw ServiceError.wrongProfileKind("the incognito lock belongs to the regular profile; use its id")
        }
        let snapshots = self.snapshots
        try await run(entry.executor, mutating: false) { session in
            ProfileMediator.attach(to: session, snapshots: snapshots).incognitoLock.isLocked = locked
        }
    }

    /// The window's action log after `seq`, oldest first.
    public func actions(of id: BrowserID, after seq: Int, limit: Int) async throws -> [ActionEntry] {
        try await withWindow(id, ifMatch: nil, mutating: false) { _, browser in
            browser.userData.get(ActionLog.self)?.entries(after: seq, limit: limit) ?? []
        }
    }
}
