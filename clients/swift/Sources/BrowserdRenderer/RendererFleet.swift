import BrowserdClient
import Foundation
import HTTPTypes
import Logging
public import OpenAPIRuntime

/// A renderer that serves the profiles browserd gives it (issue 55): it registers under its name
/// (`PUT /v1/renderers/{name}`), renews every third of its lease, and runs one ``Renderer`` — one
/// Chromium with its own user-data directory under the state directory — per profile it holds, at
/// most ``Options/maxProfiles`` at once (``RendererProfiles`` decides which). Each profile's reports
/// carry its fence (``FenceHeader``): a report browserd refuses as fenced stops that profile at once,
/// as does a renewal that no longer lists it.
///
/// It never renders a profile past its lease: when renewals fail until the lease it last got would
/// lapse, every profile stops (browserd gives them to others then). Cancelled (SIGTERM), it drains
/// (its profiles go to the others at once), stops its Chromiums and leaves.
public actor RendererFleet {
    public struct Options: Sendable {
        /// Its name at browserd (1 to 64 of A-Z, a-z, 0-9, `.`, `_`, `-`).
        public var name: String
        /// How many profiles browserd may give it.
        public var capacity: Int
        /// How many of them run their Chromium at once.
        public var maxProfiles: Int
        /// How long a profile nobody watches or uses keeps its Chromium when another needs the room (seconds).
        public var idleAfter: Double = 60
        /// What each profile's ``Renderer`` runs with (its `profileID` is set per profile).
        public var template: Renderer.Options
        /// Where it counts (nil: nowhere).
        public var metrics: RendererMetrics?

        public init(name: String, capacity: Int, maxProfiles: Int, template: Renderer.Options) {
            self.name = name
            self.capacity = capacity
            self.maxProfiles = maxProfiles
            self.template = template
        }
    }

    let options: Options
    let server: URL
    let token: String?
    let logger: Logger
    private let admin: BrowserdClient
    private var profiles: RendererProfiles
    private var running: [String: (fence: UInt64, renderer: Renderer, task: Task<Void, Never>)] = [:]
    private let started = ContinuousClock.now
    /// How long browserd says a registration lasts (from its first answer).
    private var lease: Duration = .seconds(10)
    /// When the lease browserd last granted lapses, by this renderer's clock (counted from before
    /// the renewal was sent).
    private var leaseEnds: ContinuousClock.Instant?
    /// How many renewals failed in a row (logged once per run of failures).
    private var failures = 0
    /// Profiles whose reports were refused as fenced, stopped until a renewal says otherwise.
    private var fenced: Set<String> = []

    public init(options: Options, server: URL, token: String?, logger: Logger = Logger(label: "browserd-renderer")) {
        self.options = options
        self.server = server
        self.token = token
        self.logger = logger
        admin = BrowserdClient(server: server, token: token)
        profiles = RendererProfiles(maximumRunning: options.maxProfiles, recentlyUsed: options.idleAfter)
    }

    /// The profiles it renders now, with their fences (for tests and the status line).
    public func rendering() -> [String: UInt64] { running.mapValues(\.fence) }

    /// Why it is not healthy now (nil: it is): it holds a live lease, or has not registered yet
    /// since it started (within its first lease).
    public func unhealthy() -> String? {
        guard let leaseEnds else {
            return ContinuousClock.now - started < lease ? nil : "not registered with browserd (\(failures) attempts failed)"
        }
        return ContinuousClock.now < leaseEnds ? nil : "no renewal within the lease (\(failures) failed in a row)"
    }

    /// Counts the live pages of every running profile into the metrics.
    public func countLivePages() async {
        var count = 0
        for entry in running.values { count += await entry.renderer.livePages().values.reduce(0) { $0 + $1.count } }
        options.metrics?.livePages.set(Double(count))
    }

    /// The renderer of `profile`, while it runs.
    public func renderer(of profile: String) -> Renderer? { running[profile]?.renderer }

    private var clock: Double {
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static let renewalAtLeastEvery = Duration.seconds(2)

    /// How long between renewals when nothing wakes it: every third of the lease, and at least
    /// every 2 s.
    private var renewalInterval: Duration { min(lease / 3, Self.renewalAtLeastEvery) }

    /// Registers and renews until cancelled; then drains, stops every profile and leaves. It renews
    /// every ``renewalInterval`` and at once when browserd says its profiles changed (its stream
    /// `GET /v1/renderers/{name}/events`: a profile's first window is placed then, not at the next
    /// renewal; a first page's time is measured by bench/renderers.py).
    public func run() async {
        let (kicks, kick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        kick.yield()
        let ticker = Task { [weak self] in
            while !Task.isCancelled {
                guard let every = await self?.renewalInterval else { return }
                try? await Task.sleep(for: every)
                kick.yield()
            }
        }
        let (admin, name, logger) = (self.admin, options.name, self.logger)
        let listener = Task {
            var told = false
            while !Task.isCancelled {
                do {
                    for try await _ in admin.rendererWakeups(name) { kick.yield() }
                } catch {
                    // Not registered yet (404), or a server without the stream: renewals go on anyway.
                    if !told { logger.debug("wake-up stream: \(Renderer.brief(error)); renewing every interval meanwhile") }
                    told = true
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        for await _ in kicks {
            guard !Task.isCancelled else { break }
            await renew()
        }
        ticker.cancel()
        listener.cancel()
        await leave()
    }

    private func renew() async {
        let sent = ContinuousClock.now
        do {
            let answer = try await admin.api.registerRenderer(
                path: .init(rendererName: options.name), body: .json(.init(capacity: options.capacity))
            ).ok.body.json
            lease = .seconds(max(2, answer.leaseSeconds))
            leaseEnds = sent + lease
            options.metrics?.profilesHeld.set(Double(answer.profiles.count))
            if failures > 0 { logger.notice("browserd answers again", metadata: ["failedRenewals": "\(failures)"]) }
            failures = 0
            var given: [String: UInt64] = [:]
            for hold in answer.profiles { given[hold.profileId] = UInt64(hold.fence) }
            fenced = fenced.filter { given[$0] == nil }
            let now = clock
            await carryOut(profiles.held(given.filter { !fenced.contains($0.key) }, now: now))
            // Who watches and uses each profile (not this renderer): demand starts an idle one again.
            for hold in answer.profiles where given[hold.profileId] != nil && !fenced.contains(hold.profileId) {
                await carryOut(profiles.seen(hold.profileId, watched: hold.watched, lastUsed: hold.idleSeconds.map { now - $0 }, now: now))
            }
            await carryOut(profiles.tick(now: now))
        } catch {
            failures += 1
            options.metrics?.renewalFailures.increment()
            if failures == 1 { logger.warning("renewal failed: \(Renderer.brief(error))") }
            // Past the lease browserd last granted, the profiles are others' (or will be): stop them.
            if let leaseEnds, ContinuousClock.now >= leaseEnds - .milliseconds(500), !running.isEmpty {
                logger.warning("lease lapsed without a renewal: stopping every profile", metadata: ["profiles": "\(running.count)"])
                await carryOut(profiles.held([:], now: clock))
            }
        }
    }

    private func carryOut(_ actions: [RendererProfiles.Action]) async {
        for action in actions {
            switch action {
            case .start(let profile, let fence):
                start(profile, fence: fence)
            case .release(let profile), .idle(let profile):
                await stop(profile)
            }
        }
    }

    private func start(_ profile: String, fence: UInt64) {
        var options = self.options.template
        options.profileID = profile
        options.metrics = self.options.metrics
        options.name = self.options.name
        if var devtools = options.devtools {
            // One gateway per profile, each on a port of its own.
            devtools.port = 0
            devtools.advertisedURL = nil
            options.devtools = devtools
        }
        let header = FenceHeader(value: "\(self.options.name); fence=\(fence)") { [weak self] in
            guard let self else { return }
            Task { await self.refused(profile, fence: fence) }
        }
        let client = BrowserdClient(server: server, token: token, middlewares: [header] + (self.options.metrics.map { [$0.timing] } ?? []))
        let make = { [logger] in Renderer(options: options, client: client, logger: logger) }
        let renderer = make()
        let logger = self.logger
        // While it holds the profile: a renderer whose run ends (a stream refused or dropped for good)
        // starts again, a new one, after a pause.
        let task = Task { [weak self] in
            var current = renderer
            while !Task.isCancelled {
                do { try await current.run() } catch { logger.error("profile \(profile) stopped: \(error)") }
                guard !Task.isCancelled else { break }
                logger.warning("profile \(profile)'s renderer ended while this renderer holds it: starting it again in 1 s")
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { break }
                current = make()
                await self?.replaced(profile, fence: fence, by: current)
            }
        }
        running[profile] = (fence, renderer, task)
        self.options.metrics?.profilesRunning.set(Double(running.count))
        logger.info("rendering profile \(profile)", metadata: ["fence": "\(fence)"])
    }

    private func replaced(_ profile: String, fence: UInt64, by renderer: Renderer) {
        guard let entry = running[profile], entry.fence == fence else { return }
        running[profile] = (fence, renderer, entry.task)
    }

    private func stop(_ profile: String) async {
        guard let entry = running.removeValue(forKey: profile) else { return }
        options.metrics?.profilesRunning.set(Double(running.count))
        entry.task.cancel()
        await entry.task.value
        logger.info("stopped rendering profile \(profile)")
    }

    /// browserd refused a report of `profile` under `fence`: another renderer holds it now.
    private func refused(_ profile: String, fence: UInt64) async {
        guard running[profile]?.fence == fence else { return }
        options.metrics?.fencedReports.increment()
        logger.warning("browserd refused a report of profile \(profile) as fenced: another renderer holds it; stopping it")
        fenced.insert(profile)
        var given = profiles.profiles.mapValues(\.fence)
        given[profile] = nil
        await carryOut(profiles.held(given, now: clock))
    }

    private func leave() async {
        // The run was cancelled (SIGTERM): these calls must not be, so they run in tasks of their own.
        let (admin, name) = (self.admin, options.name)
        do {
            _ = try await Task.detached { try await admin.api.drainRenderer(path: .init(rendererName: name)).ok }.value
            logger.info("drained: browserd handed this renderer's profiles to the others")
        } catch {
            logger.warning("drain failed: \(Renderer.brief(error))")
        }
        // Every Chromium closes at once (each writes its profile), not one after the other.
        _ = profiles.held([:], now: clock)
        let stopping = running.values.map(\.task)
        running = [:]
        for task in stopping { task.cancel() }
        for task in stopping { await task.value }
        do {
            _ = try await Task.detached { try await admin.api.unregisterRenderer(path: .init(rendererName: name)).noContent }.value
        } catch {
            logger.warning("leaving failed (the registration lapses by itself): \(Renderer.brief(error))")
        }
    }
}

/// Puts a renderer's `Browserd-Renderer` header on every request of one profile's client, and tells
/// when browserd refuses one as fenced (409, `renderer-fenced`).
public struct FenceHeader: ClientMiddleware {
    static let name = HTTPField.Name("Browserd-Renderer")!
    let value: String
    let onFenced: @Sendable () -> Void

    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[Self.name] = value
        let (response, answer) = try await next(request, body, baseURL)
        guard response.status.code == 409, let answer else { return (response, answer) }
        let bytes = try await [UInt8](collecting: answer, upTo: 64 * 1024)
        if String(decoding: bytes, as: UTF8.self).contains("renderer-fenced") { onFenced() }
        return (response, HTTPBody(bytes))
    }
}
