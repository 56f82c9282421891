import ArgumentParser
import BrowserdClient
import BrowserdRenderer
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// The entry point: every option may come from the environment too (``RendererCommand/environmentArguments(_:given:)``).
@main
enum RendererMain {
    static func main() async {
        RendererExecutor.install()
        let given = Array(CommandLine.arguments.dropFirst())
        await RendererCommand.main(given + RendererCommand.environmentArguments(ProcessInfo.processInfo.environment, given: given))
    }
}

/// `browserd-renderer`: a real Chromium renders a browserd profile's tabs, and its pages drive the model back.
struct RendererCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browserd-renderer",
        abstract: "Attach a real Chromium (over its DevTools pipe) to a browserd profile.",
        discussion: """
            Each window's active tab and its --live-tabs most recently active or opened tabs get a live \
            page; what the pages do (links, redirects, pushState, titles, favicons, loading) reaches \
            browserd, and what browserd's clients do (navigate, back, forward, reload, activate, close) \
            reaches the pages.

            Every option may be given in the environment instead: BROWSERD_RENDERER_ and its name in \
            capitals with _ for - (BROWSERD_RENDERER_SERVER, BROWSERD_RENDERER_MAX_PROFILES); a repeatable \
            one's values separated by commas. The command line wins.
            """)

    @Option(help: "browserd's base URL.") var server: String
    @Option(help: "A bearer token (the admin token, or the profile's with --profile).") var token: String?
    @Option(help: "The one profile whose windows to render; without it, the profiles browserd gives this renderer (the admin token).")
    var profile: String?
    @Option(help: "Without --profile: how many profiles browserd may give this renderer.") var capacity = 100
    @Option(help: "Without --profile: how many of its profiles run their Chromium at once.") var maxProfiles = 10
    @Option(
        help:
            "Without --profile: seconds a profile nobody watches or uses keeps its Chromium when another profile needs the room (it starts again when watched or used)."
    )
    var profileIdleSeconds = 60
    @Option(help: "Tabs per window besides the active one that keep a live page.") var liveTabs = 3
    @Option(
        help:
            "Live pages at most across every profile and window of this renderer (each window's active tab first, the most recently active windows first); 0: no bound but --live-tabs."
    )
    var maxLivePages = 0
    @Option(help: "The Chromium binary (default: Debian's /usr/lib/chromium/chromium).") var chromium: String?
    @Option(help: "Where Chromium's profile directory is kept.") var stateDir = "./renderer-state"
    @Option(help: "An origin on this machine or a private network that pages may reach, e.g. http://127.0.0.1:9000 (repeatable).")
    var allowOrigin: [String] = []
    @Option(help: "A range of private addresses pages may reach, e.g. 10.20.0.0/16 or fd00::/8 (repeatable).")
    var allowNetwork: [String] = []
    @Option(help: "Where automation clients (Playwright, Puppeteer) attach, found through browserd: HOST:PORT (port 0: any free one), or 'off'.")
    var devtoolsListen = "127.0.0.1:0"
    @Option(help: "The ws:// URL clients reach --devtools-listen at, when it is not the address itself (a container's name, a proxy).")
    var devtoolsUrl: String?
    @Option(help: "Without --profile: the host name clients reach each profile's gateway at (its own port), e.g. a container's name.")
    var devtoolsHost: String?
    @Option(help: "The renderer's name at browserd (its registration, its leases).") var name = ProcessInfo.processInfo.hostName
    @Option(help: "Where /healthz and /metrics (Prometheus) answer: HOST:PORT (port 0: any free one), or 'off'.")
    var statusListen = "127.0.0.1:9464"
    @Option(
        help:
            "on: Chromium runs in its own sandbox; off: without it (--no-sandbox), for a container whose seccomp profile forbids the user namespaces the sandbox makes (as root it is always off)."
    )
    var chromiumSandbox = "on"
    @Option(
        help:
            "How much nicer than the renderer Chromium runs (0-19; 0: as the renderer): while Chromium renders on every core, a page's commit still reaches watchers within a frame; pages load slower when other work fills the cores."
    )
    var chromiumNice = ChromiumLaunch.defaultNiceness
    @Option(help: "trace, debug, info, notice, warning, error or critical.") var logLevel = "info"

    /// The options (and flags) the environment may give, by name.
    static let environmentOptions: [(name: String, repeatable: Bool)] = [
        ("server", false), ("token", false), ("profile", false), ("capacity", false), ("max-profiles", false), ("profile-idle-seconds", false), ("live-tabs", false),
        ("max-live-pages", false),
        ("chromium", false), ("state-dir", false), ("allow-origin", true), ("allow-network", true), ("devtools-listen", false),
        ("devtools-url", false), ("devtools-host", false), ("name", false), ("status-listen", false), ("log-level", false), ("chromium-sandbox", false),
        ("chromium-nice", false),
    ]

    /// The arguments the environment gives (`BROWSERD_RENDERER_<NAME>`) for the options `given` does not name.
    static func environmentArguments(_ environment: [String: String], given: [String]) -> [String] {
        var arguments: [String] = []
        for (name, repeatable) in environmentOptions {
            let flag = "--" + name
            guard let value = environment["BROWSERD_RENDERER_" + name.uppercased().replacingOccurrences(of: "-", with: "_")], !value.isEmpty,
                !given.contains(where: { $0 == flag || $0.hasPrefix(flag + "=") })
            else { continue }
            let values = repeatable ? value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } : [value]
            for value in values where !value.isEmpty { arguments += [flag, value] }
        }
        // A container's status address may come as a host and a port of their own.
        if environment["BROWSERD_RENDERER_STATUS_LISTEN"] == nil, !given.contains(where: { $0.hasPrefix("--status-listen") }),
            let port = environment["BROWSERD_RENDERER_STATUS_PORT"], !port.isEmpty
        {
            arguments += ["--status-listen", "\(environment["BROWSERD_RENDERER_STATUS_HOST"] ?? "127.0.0.1"):\(port)"]
        }
        return arguments
    }

    /// `--status-listen` as host and port (nil: off).
    var statusEndpoint: (host: String, port: Int)? {
        get throws {
            guard statusListen != "off" else { return nil }
            guard let colon = statusListen.lastIndex(of: ":"), let port = Int(statusListen[statusListen.index(after: colon)...]),
                (0...65535).contains(port), colon != statusListen.startIndex
            else { throw ValidationError("--status-listen must be HOST:PORT, e.g. 127.0.0.1:9464, or 'off'") }
            return (statusListen[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
        }
    }

    /// `--devtools-listen` as host and port (nil: off).
    var devtoolsEndpoint: Renderer.DevToolsEndpoint? {
        get throws {
            guard devtoolsListen != "off" else { return nil }
            guard let colon = devtoolsListen.lastIndex(of: ":"), let port = Int(devtoolsListen[devtoolsListen.index(after: colon)...]),
                (0...65535).contains(port), colon != devtoolsListen.startIndex
            else { throw ValidationError("--devtools-listen must be HOST:PORT, e.g. 127.0.0.1:9222, or 'off'") }
            let host = devtoolsListen[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            var endpoint = Renderer.DevToolsEndpoint(host: host, port: port, advertisedURL: devtoolsUrl)
            endpoint.advertisedHost = devtoolsHost
            return endpoint
        }
    }

    func validate() throws {
        guard URL(string: server)?.scheme != nil else { throw ValidationError("--server must be a URL such as http://127.0.0.1:8080") }
        guard (0...64).contains(liveTabs) else { throw ValidationError("--live-tabs must be within 0...64") }
        guard (0...100_000).contains(maxLivePages) else { throw ValidationError("--max-live-pages must be within 0...100000") }
        for network in allowNetwork where IPNetwork(network) == nil {
            throw ValidationError("--allow-network \(network) is not a range such as 10.20.0.0/16 or fd00::/8")
        }
        for origin in allowOrigin where NetworkPolicy(allowedOrigins: [origin]).allowedDestinations.isEmpty {
            throw ValidationError("--allow-origin \(origin) is not an origin such as http://127.0.0.1:9000")
        }
        _ = try devtoolsEndpoint
        _ = try statusEndpoint
        guard ["on", "off"].contains(chromiumSandbox) else { throw ValidationError("--chromium-sandbox must be on or off") }
        guard (0...19).contains(chromiumNice) else { throw ValidationError("--chromium-nice must be within 0...19") }
        if let devtoolsUrl {
            guard let url = URL(string: devtoolsUrl), ["ws", "wss"].contains(url.scheme ?? ""), url.query == nil, !devtoolsUrl.hasSuffix("/") else {
                throw ValidationError("--devtools-url must be a ws:// or wss:// URL without a query or a trailing slash, e.g. ws://renderer:9222")
            }
        }
        guard (1...128).contains(name.count) else { throw ValidationError("--name must be 1 to 128 characters") }
        if profile == nil {
            guard (1...64).contains(name.utf8.count),
                name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-_".unicodeScalars.contains($0)) })
            else { throw ValidationError("--name must be 1 to 64 characters of A-Z, a-z, 0-9, ., _ and - (browserd registers it)") }
            guard (1...10_000).contains(capacity) else { throw ValidationError("--capacity must be within 1...10000") }
            guard (1...1_000).contains(maxProfiles) else { throw ValidationError("--max-profiles must be within 1...1000") }
            guard (1...86_400).contains(profileIdleSeconds) else { throw ValidationError("--profile-idle-seconds must be within 1...86400") }
            guard devtoolsUrl == nil else {
                throw ValidationError("--devtools-url names one profile's gateway: it goes with --profile (each profile's gateway listens on a port of its own)")
            }
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard chromium ?? ChromiumLaunch.defaultExecutable() != nil else {
            throw ValidationError("no Chromium found: install Debian's chromium or give --chromium PATH")
        }
    }

    func run() async throws {
        var logger = Logger(label: "browserd-renderer")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        var options = Renderer.Options(
            profileID: profile ?? "", liveTabs: liveTabs, chromium: chromium ?? ChromiumLaunch.defaultExecutable()!,
            stateDirectory: stateDir, allowedOrigins: allowOrigin, allowedNetworks: allowNetwork.compactMap(IPNetwork.init))
        options.devtools = try devtoolsEndpoint
        options.name = name
        options.chromiumSandbox = chromiumSandbox == "on"
        options.chromiumNiceness = chromiumNice
        if maxLivePages > 0 { options.livePageAllocator = LivePageAllocator(maximum: maxLivePages) }
        let metrics = RendererMetrics()
        options.metrics = metrics
        let run: Task<Void, any Error>
        // How long a stop may take before Chromium is killed: one Chromium, or a fleet's (drained first).
        let deadline: Double
        let healthy: @Sendable () async -> String?
        let beforeScrape: @Sendable () async -> Void
        if let profile {
            options.profileID = profile
            let renderer = Renderer(
                options: options, client: BrowserdClient(server: URL(string: server)!, token: token, middlewares: [metrics.timing]), logger: logger)
            run = Task { try await renderer.run() }
            deadline = 4.5
            healthy = { await renderer.chromiumPID == nil ? "Chromium is not running" : nil }
            beforeScrape = {
                let live = await renderer.livePages().values.reduce(0) { $0 + $1.count }
                metrics.livePages.set(Double(live))
                let running: Double = await renderer.chromiumPID == nil ? 0 : 1
                metrics.profilesRunning.set(running)
            }
        } else {
            var fleetOptions = RendererFleet.Options(name: name, capacity: capacity, maxProfiles: maxProfiles, template: options)
            fleetOptions.metrics = metrics
            fleetOptions.idleAfter = Double(profileIdleSeconds)
            let fleet = RendererFleet(options: fleetOptions, server: URL(string: server)!, token: token, logger: logger)
            logger.info("serving the profiles browserd gives renderer \(name)", metadata: ["capacity": "\(capacity)", "maxProfiles": "\(maxProfiles)"])
            run = Task { await fleet.run() }
            deadline = 20
            healthy = { await fleet.unhealthy() }
            beforeScrape = { await fleet.countLivePages() }
        }
        var status: RendererStatusServer?
        if let endpoint = try statusEndpoint {
            status = try await RendererStatusServer.start(
                host: endpoint.host, port: endpoint.port, metrics: metrics, healthy: healthy, beforeScrape: beforeScrape)
            logger.info("/healthz and /metrics answer on \(endpoint.host):\(status?.port ?? endpoint.port)")
        }
        // SIGTERM and SIGINT end the run: Chromium is closed cleanly (its profile written), then the process exits.
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let signals = ([SIGTERM, SIGINT] as [Int32]).map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                run.cancel()
                // Within a deadline whatever the pages do: past it, Chromium is killed and the process exits.
                DispatchQueue.global().asyncAfter(deadline: .now() + deadline) {
                    ChromiumProcess.killAll()
                    Glibc.exit(1)
                }
            }
            source.resume()
            return source
        }
        defer { for source in signals { source.cancel() } }
        let result = await run.result
        await status?.stop()
        try result.get()
    }
}
