import BrowserdClient
import BrowserdRenderer
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What bench/renderer.py runs: browserd-renderer in this process against a live browserd and pages
/// on loopback, measuring
/// - the path from Chromium's commit of a page's own navigation (its DevTools event arriving) to the
///   event of that entry at a watcher of the window's stream, p50 and p99, each commit reported from
///   the page's list (before: `RendererPolicy.followsSteps` off) and from its step — beside, in the same run,
///   the path of a navigation a client sends (its POST sent → the watcher's event): browserd's part alone;
/// - this process's CPU (the renderer's) per page navigation, and the watcher's (a process of its own);
/// - Chromium's memory per live page (its process group's RSS with 1 and with `--live-pages` pages).
///
///     renderer-bench --server URL --pages URL [--navigations 200] [--live-pages 10] [--chromium PATH] [--chromium-nice N]
///     renderer-bench --fence ORIGIN      (the fence alone: bench/fence.py)
///     renderer-bench --server URL --watch WINDOW   (the watcher: "<CLOCK_MONOTONIC ns> <url>" per URL first seen)
///     renderer-bench --server URL --requests N     (a page's reports alone: CPU and time per request)
@main
struct RendererBench {
    static func main() async throws {
        // As browserd-renderer's `main`: the renderer measured as it runs.
        RendererExecutor.install()
        let arguments = Arguments(CommandLine.arguments.dropFirst())
        if let window = arguments["--watch"], let server = arguments["--server"].flatMap(URL.init(string:)) {
            try await watch(window, at: server)
            return
        }
        if let count = arguments["--requests"].flatMap(Int.init), let server = arguments["--server"].flatMap(URL.init(string:)) {
            try await requests(count, at: server)
            return
        }
        if let origin = arguments["--fence"] {
            try await fence(allowing: origin)
            return
        }
        guard let server = arguments["--server"].flatMap(URL.init(string:)), let pages = arguments["--pages"] else {
            FileHandle.standardError.write(Data("usage: renderer-bench --server URL --pages URL [--navigations N] [--live-pages N]\n".utf8))
            exit(2)
        }
        let navigations = Int(arguments["--navigations"] ?? "") ?? 200
        let livePages = Int(arguments["--live-pages"] ?? "") ?? 10
        // browserd-renderer's --chromium-nice (by default the renderer's own default).
        let niceness = Int(arguments["--chromium-nice"] ?? "") ?? ChromiumLaunch.defaultNiceness
        guard let chromium = arguments["--chromium"] ?? ChromiumLaunch.defaultExecutable() else {
            FileHandle.standardError.write(Data("no Chromium found\n".utf8))
            exit(2)
        }
        let client = BrowserdClient(server: server)
        let profile = try await client.api.createProfile(body: .json(.init(name: "renderer-bench"))).created.body.json.id
        let window = try await client.api.createWindow(body: .json(.init(profileId: profile))).created.body.json.id

        // RENDERER_BENCH_TRACE=1: every renderer event and action, each commit and each URL the watcher
        // saw, with its time in milliseconds (stderr), to see where the path from a commit to the
        // watcher spends its time.
        let tracing = ProcessInfo.processInfo.environment["RENDERER_BENCH_TRACE"] == "1"
        // The watcher: when each URL first reached the window's stream. In a process of its own
        // (this executable with --watch), so that its decoding of every event is not counted as the
        // renderer's CPU; its own CPU is printed apart.
        let seen = Times()
        let watcher = try WatcherProcess(server: server, window: window, tracing: tracing, seen: seen)
        while !watcher.ready { try await Task.sleep(for: .milliseconds(10)) }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("renderer-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        let logger = tracing ? Logger(label: "renderer-bench") { _ in MillisecondLog() } : Logger(label: "renderer-bench")
        var quiet = logger
        quiet.logLevel = tracing ? .trace : .warning

        // Baseline: navigations a client sends, from the POST to the watcher's event.
        let baselineTab = try await client.api.openTab(path: .init(browserId: window), body: .json(.init(url: "about:blank"))).created.body.json.id
        var baseline: [Double] = []
        for n in 0..<navigations {
            let url = "https://baseline.example/\(n)"
            let sent = ContinuousClock.now
            _ = try await client.api.navigateTab(path: .init(tabId: baselineTab), body: .json(.init(url: url))).ok
            baseline.append(try await waitSeen(url, in: seen, since: sent))
        }

        /// A page that navigates itself `navigations` times (location.href after each load), under a
        /// renderer of its own with `policy`: each commit's latency and the CPU per navigation.
        func chain(
            _ label: String, from start: Int, policy: RendererPolicy
        ) async throws -> (
            latencies: [Double], seconds: Double, cpu: Double, watcherCPU: Double, chromium: Double, renderer: Renderer, run: Task<Void, any Error>
        ) {
            let commits = Times()
            var options = Renderer.Options(
                profileID: profile, liveTabs: livePages, chromium: chromium, stateDirectory: state.appendingPathComponent(label).path,
                allowedOrigins: [pages],
                commitObserver: { _, url in
                    if commits.note(url, at: .now), tracing { MillisecondLog.line("Chromium committed \(url)") }
                }, policy: policy)
            options.chromiumNiceness = niceness
            let renderer = Renderer(options: options, client: client, logger: quiet)
            let run = Task { try await renderer.run() }
            while await renderer.chromiumPID == nil { try await Task.sleep(for: .milliseconds(20)) }
            let cpuBefore = processCPU()
            let watcherBefore = watcher.cpu
            let chromiumBefore = await renderer.chromiumPID.map(groupCPU) ?? 0
            let chainStart = ContinuousClock.now
            let first = "\(pages)/chain?n=\(start)&last=\(start + navigations)"
            _ = try await client.api.openTab(path: .init(browserId: window), body: .json(.init(url: first))).created.body.json
            let last = "\(pages)/chain?n=\(start + navigations)&last=\(start + navigations)"
            // Waited for without polling: the wait's own wake-ups would count as the renderer's CPU
            // (about 1 ms per navigation when it looked every millisecond).
            guard await seen.wait(for: last, timeout: Duration.seconds(Double(navigations) * 0.5 + 30)) else {
                throw BenchFailure("not seen in time: \(last)")
            }
            try await Task.sleep(for: .milliseconds(300))
            let chainSeconds = seconds(ContinuousClock.now - chainStart)
            let cpuPerNavigation = (processCPU() - cpuBefore) / Double(navigations) * 1000
            let watcherPerNavigation = (watcher.cpu - watcherBefore) / Double(navigations) * 1000
            let chromiumPerNavigation = ((await renderer.chromiumPID.map(groupCPU) ?? 0) - chromiumBefore) / Double(navigations) * 1000
            let (committed, watched) = (commits.all, seen.all)
            var latencies: [Double] = []
            for n in 1...navigations {
                let url = "\(pages)/chain?n=\(start + n)&last=\(start + navigations)"
                if let commit = committed[url], let event = watched[url] { latencies.append(seconds(event - commit) * 1000) }
            }
            return (latencies, chainSeconds, cpuPerNavigation, watcherPerNavigation, chromiumPerNavigation, renderer, run)
        }
        // Before: every commit read from the page's list; after: from its step. One renderer at a time.
        var listPolicy = RendererPolicy.standard
        listPolicy.followsSteps = false
        let listed = try await chain("list", from: 0, policy: listPolicy)
        listed.run.cancel()
        _ = try? await listed.run.value
        let stepped = try await chain("step", from: 100_000, policy: .standard)
        let (renderer, run) = (stepped.renderer, stepped.run)

        // Memory per live page: Chromium's RSS with the chain's one page, then with `livePages` more.
        let pid = await renderer.chromiumPID
        let rssOne = pid.map(groupRSS) ?? 0
        let liveBefore = await renderer.livePages()[window]?.count ?? 0
        for n in 0..<livePages {
            _ = try await client.api.openTab(
                path: .init(browserId: window), body: .json(.init(url: "\(pages)/static?n=\(n)", activate: false))
            ).created.body.json
        }
        for n in 0..<livePages { _ = try await waitSeen("\(pages)/static?n=\(n)", in: seen, since: ContinuousClock.now, timeout: .seconds(30)) }
        try await Task.sleep(for: .seconds(2))
        let livePagesNow = await renderer.livePages()[window]?.count ?? 0
        let rssMany = pid.map(groupRSS) ?? 0

        print("renderer bench: \(navigations) navigations, Chromium \(pid.map(String.init) ?? "-") at --chromium-nice \(niceness)")
        print(
            String(
                format: "  client navigate -> watcher event (baseline)       p50 %6.2f ms   p99 %6.2f ms   (%d)", percentile(baseline, 50),
                percentile(baseline, 99), baseline.count))
        for (name, result) in [("from the list (before)", listed), ("from the step", stepped)] {
            print(
                String(
                    format: "  Chromium commit -> watcher event (page-initiated), %@: p50 %6.2f ms   p99 %6.2f ms   (%d of %d)", name,
                    percentile(result.latencies, 50), percentile(result.latencies, 99), result.latencies.count, navigations))
            print(
                String(
                    format: "    chain of %d navigations: %.2f s; CPU per navigation: renderer %.2f ms, watcher (its own process) %.2f ms, Chromium %.2f ms",
                    navigations, result.seconds, result.cpu, result.watcherCPU, result.chromium))
        }
        let (latencies, cpuPerNavigation) = (stepped.latencies, stepped.cpu)
        print(
            String(
                format: "  Chromium PSS: %.1f MB with %d live pages, %.1f MB with %d; per live page %.1f MB", Double(rssOne) / 1e6, liveBefore,
                Double(rssMany) / 1e6, livePagesNow, Double(rssMany - rssOne) / 1e6 / Double(max(1, livePagesNow - liveBefore))))
        print(
            "RESULT commit_p50_ms=\(percentile(latencies, 50)) commit_p99_ms=\(percentile(latencies, 99))",
            "baseline_p99_ms=\(percentile(baseline, 99)) cpu_ms_per_navigation=\(cpuPerNavigation)",
            "watcher_cpu_ms_per_navigation=\(stepped.watcherCPU) chain_s=\(stepped.seconds)",
            "list_commit_p50_ms=\(percentile(listed.latencies, 50)) list_commit_p99_ms=\(percentile(listed.latencies, 99)) list_cpu_ms_per_navigation=\(listed.cpu)")
        watcher.stop()
        run.cancel()
        _ = try? await run.value
    }

    static func waitSeen(
        _ url: String, in seen: Times, since start: ContinuousClock.Instant, timeout: Duration = .seconds(10)
    ) async throws -> Double {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let at = seen[url] { return seconds(at - start) * 1000 }
            try await Task.sleep(for: .milliseconds(1))
        }
        throw BenchFailure("not seen in time: \(url)")
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p / 100).rounded(.up)) - 1)]
    }

    /// User and system CPU of this process, in seconds.
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// The user and system CPU of every process in `pid`'s process group, in seconds.
    static func groupCPU(_ pid: pid_t) -> Double {
        let group = getpgid(pid)
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let candidate = pid_t(entry), getpgid(candidate) == group,
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) { total += (user + system) / ticks }
        }
        return total
    }

    /// The proportional set size of every process in `pid`'s process group (Chromium and its
    /// helpers): their shared pages counted once in all, not once per process.
    static func groupRSS(_ pid: pid_t) -> Int {
        let group = getpgid(pid)
        var total = 0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let candidate = pid_t(entry), getpgid(candidate) == group,
                let rollup = try? String(contentsOfFile: "/proc/\(entry)/smaps_rollup", encoding: .utf8)
            else { continue }
            for line in rollup.split(separator: "\n") where line.hasPrefix("Pss:") {
                if let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) { total += kilobytes * 1024 }
            }
        }
        return total
    }
}

/// Log lines stamped with the milliseconds since the bench started.
struct MillisecondLog: LogHandler {
    static let start = ContinuousClock.now
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
        Self.line("\(event.message) \(fields)")
    }

    static func line(_ text: String) {
        let elapsed = RendererBench.seconds(ContinuousClock.now - start) * 1000
        FileHandle.standardError.write(Data(String(format: "%10.2f %@\n", elapsed, text).utf8))
    }
}

/// When each URL was first seen, and who waits for one.
final class Times: Sendable {
    private struct State {
        var first: [String: ContinuousClock.Instant] = [:]
        var waiters: [String: [CheckedContinuation<Bool, Never>]] = [:]
    }
    private let state = Mutex(State())
    private var first: [String: ContinuousClock.Instant] { state.withLock { $0.first } }

    /// Notes `url` seen at `time`; whether it was the first time.
    @discardableResult
    func note(_ url: String, at time: ContinuousClock.Instant) -> Bool {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>]? in
            guard state.first[url] == nil else { return nil }
            state.first[url] = time
            return state.waiters.removeValue(forKey: url) ?? []
        }
        for waiter in waiters ?? [] { waiter.resume(returning: true) }
        return waiters != nil
    }

    /// Waits until `url` is seen (true) or `timeout` passes (false), with no wake-up before.
    func wait(for url: String, timeout: Duration) async -> Bool {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            let waiters = state.withLock { $0.waiters.removeValue(forKey: url) } ?? []
            for waiter in waiters { waiter.resume(returning: false) }
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let seen = state.withLock { state in
                if state.first[url] != nil { return true }
                state.waiters[url, default: []].append(continuation)
                return false
            }
            if seen { continuation.resume(returning: true) }
        }
    }

    subscript(url: String) -> ContinuousClock.Instant? { state.withLock { $0.first[url] } }
    var all: [String: ContinuousClock.Instant] { first }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `--name value` pairs.
/// `renderer-bench --fence ORIGIN`: the renderer's fence alone (``FencingProxy``, `ORIGIN` allowed),
/// for bench/fence.py to run a bare Chromium through it beside one without it. Prints its port;
/// runs until its standard input ends.
func fence(allowing origin: String) async throws {
    var logger = Logger(label: "renderer-bench")
    logger.logLevel = ProcessInfo.processInfo.environment["RENDERER_BENCH_TRACE"] == "1" ? .trace : .warning
    let proxy = try await FencingProxy.start(policy: NetworkPolicy(allowedOrigins: [origin]), logger: logger)
    FileHandle.standardOutput.write(Data("\(proxy.port)\n".utf8))
    await Task.detached { while let line = readLine(), !line.isEmpty {} }.value
    print("refused \(proxy.refusals)")
    await proxy.stop()
}

/// `renderer-bench --server URL --requests N`: the reports a page sends for each navigation (its
/// commit, then its state), `N` of each, one at a time as a page sends them, through the client the
/// renderer uses: this process's CPU per request and each request's time.
func requests(_ count: Int, at server: URL) async throws {
    let client = BrowserdClient(server: server)
    let profile = try await client.api.createProfile(body: .json(.init(name: "requests-bench"))).created.body.json.id
    let window = try await client.api.createWindow(body: .json(.init(profileId: profile))).created.body.json.id
    let tab = try await client.api.openTab(path: .init(browserId: window), body: .json(.init(url: "about:blank"))).created.body.json.id
    // The renderer's way (``TabReports``: bytes through the client's middlewares and transport) and,
    // beside it in the same run, the same two requests through the generated client.
    let reports = TabReports(client: client)
    func round(_ n: Int) async throws {
        _ = try await reports.navigate(tab, url: "https://requests.example/\(n)", transition: "link", replace: false, sameDocument: false)
        _ = try await reports.update(tab, title: "Page \(n)", loading: true, progress: 0.7, faviconURL: nil)
    }
    func generated(_ n: Int) async throws {
        _ = try await client.api.navigateTab(
            path: .init(tabId: tab), body: .json(.init(url: "https://generated.example/\(n)", transition: .link, committed: true))
        ).ok.body.json
        _ = try await client.api.updateTab(path: .init(tabId: tab), body: .json(.init(title: "Page \(n)", loading: true, progress: 0.7))).ok.body.json
    }
    func measure(_ send: (Int) async throws -> Void) async throws -> (cpu: Double, times: [Double]) {
        for n in 0..<min(count, 200) { try await send(-n - 1) }  // warm: connections, caches
        var times: [Double] = []
        let cpu = RendererBench.processCPU()
        for n in 0..<count {
            let start = ContinuousClock.now
            try await send(n)
            times.append(RendererBench.seconds(ContinuousClock.now - start) * 1000 / 2)
        }
        return ((RendererBench.processCPU() - cpu) * 1000 / Double(2 * count), times)
    }
    let own = try await measure(round)
    let through = try await measure(generated)
    for (name, figures) in [("reports", own), ("reports through the generated client", through)] {
        print(
            name
                + String(
                    format: ": %d requests, CPU %.3f ms a request, time p50 %.3f ms p99 %.3f ms", 2 * count, figures.cpu,
                    RendererBench.percentile(figures.times, 50), RendererBench.percentile(figures.times, 99)))
    }
    print("RESULT request_cpu_ms=\(own.cpu) request_p50_ms=\(RendererBench.percentile(own.times, 50)) generated_request_cpu_ms=\(through.cpu)")
}

struct Arguments {
    private var values: [String: String] = [:]
    init(_ list: ArraySlice<String>) {
        var iterator = list.makeIterator()
        while let name = iterator.next() { if name.hasPrefix("--") { values[name] = iterator.next() } }
    }
    subscript(name: String) -> String? { values[name] }
}

extension RendererBench {
    /// The watcher's side: each URL's first appearance on the window's stream, with the monotonic
    /// clock's reading when its event was decoded, one line each on standard output.
    static func watch(_ window: String, at server: URL) async throws {
        // Its parent gone (its end of standard input closed): the watcher ends too.
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while true {
                let got = read(0, &byte, 1)
                if got == 0 || (got < 0 && errno != EINTR) { exit(0) }
            }
        }
        let client = BrowserdClient(server: server)
        var seen = Set<String>()
        var ready = false
        for try await event in client.windowEvents(window, topics: ["tabs"]) {
            let now = monotonicNanoseconds()
            // Ready once the stream is open: its first event is the window's snapshot, so a change
            // the bench makes from now on cannot be before it (a "ready" written before the stream
            // was open once lost the first navigation, and the run ended "not seen in time").
            if !ready {
                ready = true
                FileHandle.standardOutput.write(Data("ready\n".utf8))
            }
            let urls: [String] =
                switch event.payload {
                case .tabsUpdate(let update): [update.item.url]
                case .tabsInsert(let insert): [insert.item.url]
                default: []
                }
            for url in urls where seen.insert(url).inserted {
                FileHandle.standardOutput.write(Data("\(now) \(url)\n".utf8))
            }
        }
    }

    static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

/// The watcher in a process of its own (this executable, `--watch`): what it prints becomes
/// ``Times`` in this process's clock.
final class WatcherProcess: Sendable {
    private final class Lines: Sendable {
        let state = Mutex((buffer: [UInt8](), ready: false))
    }
    private let process: Process
    private let lifeline: Pipe
    private let lines = Lines()

    init(server: URL, window: String, tracing: Bool, seen: Times) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["--server", server.absoluteString, "--watch", window]
        let pipe = Pipe()
        process.standardOutput = pipe
        // Held open by this process alone: the watcher ends when it reads its end (this process
        // gone, even killed), rather than keeping the stderr it shares with bench/renderer.py open.
        let lifeline = Pipe()
        process.standardInput = lifeline
        self.lifeline = lifeline
        self.process = process
        // The two clocks, read together: the child's monotonic readings map onto ContinuousClock.
        let anchor = (ContinuousClock.now, RendererBench.monotonicNanoseconds())
        let state = lines
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            let lines = state.state.withLock { state -> [String] in
                state.buffer += chunk
                var lines: [String] = []
                while let end = state.buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: state.buffer[..<end], as: UTF8.self))
                    state.buffer.removeSubrange(...end)
                }
                return lines
            }
            for line in lines {
                if line == "ready" {
                    state.state.withLock { $0.ready = true }
                    continue
                }
                guard let space = line.firstIndex(of: " "), let ns = Int64(line[..<space]) else { continue }
                let url = String(line[line.index(after: space)...])
                let at = anchor.0 + .nanoseconds(ns - anchor.1)
                if seen.note(url, at: at), tracing { MillisecondLog.line("watcher saw \(url)") }
            }
        }
        try process.run()
    }

    var ready: Bool { lines.state.withLock { $0.ready } }

    /// Its user and system CPU so far, in seconds; not a number when /proc could not tell (the
    /// figure then prints as nan, never as a plausible 0).
    var cpu: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return .nan }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
