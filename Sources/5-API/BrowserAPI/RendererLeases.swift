public import BrowserModel
public import Foundation
import Synchronization

/// Which renderer holds which profile, as each renderer announces it (`PUT /v1/profiles/{id}/renderer`):
/// where its DevTools gateway is, the key browserd's calls to it carry, Chromium's version, and the
/// target of each tab's live page. A lease lasts ``duration`` from its last announcement (a renderer
/// renews every 5 s); one that ran out is gone, and the navigations pending for its pages commit
/// (``takeExpired()``, every ``expirySweep``). Kept in memory only: after a restart the renderers'
/// next renewals put them back within seconds.
///
/// Bounded: one lease per profile (a profile that exists), each bounded by the announcement's limits.
public final class RendererLeases: Sendable {
    public struct Browser: Sendable, Equatable {
        public var product: String
        public var protocolVersion: String
        public var userAgent: String
        public var v8Version: String
        public var webkitVersion: String
    }

    public struct Lease: Sendable, Equatable {
        public var name: String
        /// `ws://host:port` (or `wss://…`, maybe with a path prefix), no trailing slash.
        public var devtoolsURL: String
        /// Never answered; browserd's calls to the renderer carry it.
        public var controlKey: String
        public var browser: Browser
        /// Tab → target, in the renderer's order.
        public var pages: [(tab: TabID, target: String)]
        public var expiresAt: Date
        var expires: ContinuousClock.Instant

        public static func == (a: Lease, b: Lease) -> Bool {
            a.name == b.name && a.devtoolsURL == b.devtoolsURL && a.controlKey == b.controlKey && a.browser == b.browser
                && a.pages.map(\.tab) == b.pages.map(\.tab) && a.pages.map(\.target) == b.pages.map(\.target) && a.expiresAt == b.expiresAt
        }

        /// The target of `tab`'s page (nil: it has none).
        public func target(of tab: TabID) -> String? { pages.first { $0.tab == tab }?.target }

        /// The gateway's plain HTTP address (ws → http, wss → https).
        public var controlURL: String {
            devtoolsURL.hasPrefix("wss://") ? "https://" + devtoolsURL.dropFirst(6) : "http://" + devtoolsURL.dropFirst(5)
        }
    }

    /// How long a lease lasts after each announcement.
    public let duration: Duration
    private let leases = Mutex<[ProfileID: Lease]>([:])
    private let unsettled = Mutex<[ProfileID: Set<TabID>]>([:])

    /// The time leases are judged by (the monotonic clock; a test's own clock in tests).
    private let now: @Sendable () -> ContinuousClock.Instant

    public init(duration: Duration = .seconds(15), now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.duration = duration
        self.now = now
    }

    /// Puts (or renews) the lease of `profile`: it replaces the one before.
    @discardableResult
    public func put(
        _ profile: ProfileID, name: String, devtoolsURL: String, controlKey: String, browser: Browser, pages: [(tab: TabID, target: String)]
    ) -> Lease {
        let now = self.now()
        let lease = Lease(
            name: name, devtoolsURL: devtoolsURL, controlKey: controlKey, browser: browser, pages: pages,
            expiresAt: Date().addingTimeInterval(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18),
            expires: now + duration)
        leases.withLock { $0[profile] = lease }
        return lease
    }

    /// The live lease of `profile` (nil: none, or it ran out). A lease that ran out stays until
    /// ``takeExpired()`` takes it (its pages' pending navigations are settled then).
    public func lease(of profile: ProfileID) -> Lease? {
        let now = self.now()
        return leases.withLock { leases in
            guard let lease = leases[profile], lease.expires > now else { return nil }
            return lease
        }
    }

    /// The tabs the last lease of `profile` named, whether or not it ran out since: what a new
    /// announcement or a removal leaves without a page.
    public func lastPages(of profile: ProfileID) -> [TabID] {
        leases.withLock { $0[profile]?.pages.map(\.tab) ?? [] }
    }

    /// Removes the leases that ran out and returns the tabs each named: their renderer stopped
    /// renewing (it died, or lost its way to browserd) without giving them up.
    public func takeExpired() -> [(profile: ProfileID, tabs: [TabID])] {
        let now = self.now()
        return leases.withLock { leases in
            let expired = leases.filter { $0.value.expires <= now }
            for profile in expired.keys { leases[profile] = nil }
            return expired.map { ($0.key, $0.value.pages.map(\.tab)) }
        }
    }

    /// Notes tabs of `profile` whose pending navigation could not be settled yet (storage failed at
    /// that moment): ``takeUnsettled()`` gives them back to the next sweep. Bounded as an
    /// announcement's pages are (``maximumPages`` a profile; past it the newest are not noted).
    public func settleLater(_ profile: ProfileID, tabs: some Collection<TabID>) {
        guard !tabs.isEmpty else { return }
        unsettled.withLock { unsettled in
            var held = unsettled[profile, default: []]
            for tab in tabs where held.count < Self.maximumPages { held.insert(tab) }
            unsettled[profile] = held
        }
    }

    /// The tabs noted by ``settleLater(_:tabs:)``, taken (each is noted again if it fails again).
    public func takeUnsettled() -> [(profile: ProfileID, tabs: [TabID])] {
        unsettled.withLock { unsettled in
            defer { unsettled = [:] }
            return unsettled.map { ($0.key, Array($0.value)) }
        }
    }

    /// The most pages an announcement names, and the most unsettled tabs kept for a profile.
    public static let maximumPages = 4096

    /// How often the app takes the leases that ran out (``takeExpired()``).
    public static let expirySweep: Duration = .seconds(1)

    /// Gives the lease of `profile` up (its renderer stopped, or the profile went).
    public func remove(_ profile: ProfileID) { _ = leases.withLock { $0.removeValue(forKey: profile) } }
}
