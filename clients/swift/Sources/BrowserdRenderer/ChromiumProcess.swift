import CRendererSupport
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#endif

/// How to start one Chromium for one profile.
public struct ChromiumLaunch: Sendable, Equatable {
    /// The browser binary (Debian: `/usr/lib/chromium/chromium`, not the `/usr/bin` wrapper script).
    public var executable: String
    /// Its profile directory: one Chromium per directory (a second one on it exits 21).
    public var userDataDirectory: String
    /// The fence's port on 127.0.0.1 (``FencingProxy``): every request of Chromium's goes through it,
    /// loopback's too. Nil only for a Chromium that loads nothing of the network (tests of the process).
    public var proxyPort: Int?
    /// `--no-sandbox`: Chromium refuses to start as root without it; otherwise only when asked
    /// (`--chromium-sandbox off`: a container whose seccomp profile forbids the namespaces Chromium's
    /// sandbox makes).
    public var runsAsRoot: Bool
    /// How much nicer than the renderer Chromium runs (`nice`; 0: as nice as the renderer): while
    /// Chromium renders on every core, a commit's report, browserd and its watchers get the CPU
    /// first, so a page's commit reaches a watcher within a frame (issue 54, 2 cores: p99 7–8 ms at
    /// 5, 6–17 at 10; at 0: 21–29 ms). The cost: on a host whose other work fills the cores, Chromium
    /// waits behind it and its pages load slower — the model stays current, the pages lag (as
    /// Chromium itself lowers its background renderers' priority below the browser's).
    public var niceness: Int

    /// Chromium's default niceness: 5 (at 5 the commit path met its aim as at 10, with a Chromium
    /// that keeps about a quarter of a core's share against a busy neighbour rather than a tenth).
    public static let defaultNiceness = 5

    public init(executable: String, userDataDirectory: String, proxyPort: Int?, runsAsRoot: Bool = getuid() == 0, niceness: Int = defaultNiceness) {
        self.executable = executable
        self.userDataDirectory = userDataDirectory
        self.proxyPort = proxyPort
        self.runsAsRoot = runsAsRoot
        self.niceness = niceness
    }

    /// Where Debian and Ubuntu put it; nil when none is installed.
    public static func defaultExecutable() -> String? {
        ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The command line: new headless mode, the DevTools pipe, a quiet browser (puppeteer's defaults,
    /// trimmed), its own profile directory. Not puppeteer's `--disable-ipc-flooding-protection`: pages
    /// are hostile, and Chromium's own guard (200 `pushState`s or navigations in 10 s, the rest
    /// ignored) keeps a page's storm from flooding its browser process, which every page of the
    /// profile shares (without it, an endless storm kept the renderer's DevTools calls waiting for
    /// more than 10 s).
    public var arguments: [String] {
        var arguments = [
            executable,
            "--headless",
            "--remote-debugging-pipe",
            "--user-data-dir=\(userDataDirectory)",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-sync",
            "--disable-breakpad",
            "--disable-crash-reporter",
            "--disable-dev-shm-usage",
            "--disable-hang-monitor",
            "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows",
            "--disable-background-timer-throttling",
            "--metrics-recording-only",
            "--password-store=basic",
            "--use-mock-keychain",
            "--mute-audio",
            "--hide-scrollbars",
            "--window-size=1280,800",
            // The omnibox's WebUI popups are never shown headless (73 MB saved, measured).
            // The back/forward cache off: a page left is gone, as browserd's unrealized tabs are (a page restored
            // from it swapped its DevTools session away in tests).
            "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,Translate,MediaRouter,OptimizationHints,BackForwardCache",
        ]
        if let proxyPort {
            arguments += [
                // Every request through the fence, loopback's included (Chromium bypasses the proxy for
                // loopback unless told `<-loopback>`); no DNS of Chromium's own: the fence resolves.
                "--proxy-server=http://127.0.0.1:\(proxyPort)",
                "--proxy-bypass-list=<-loopback>",
                // (WebRTC's UDP, which goes around any proxy, is off by ``ChromiumPreferences``.)
            ]
        }
        if runsAsRoot { arguments.append("--no-sandbox") }
        arguments.append("about:blank")
        return arguments
    }
}

/// Preferences the fence needs that Chromium takes from its profile, not its command line, merged
/// into the profile's files before each start (a value: what to set; ``ChromiumProcess`` writes it).
/// - `webrtc.ip_handling_policy = disable_non_proxied_udp`: WebRTC's UDP goes around any HTTP proxy,
///   so a page's peer connection gets no UDP at all (full Chromium reads the policy from this
///   preference only; `--force-webrtc-ip-handling-policy` is a content shell's). Incognito contexts
///   inherit it.
/// - `net.max_connections_per_proxy` (Local State): every request goes through the one proxy, whose
///   default of 32 connections would let one page's hanging requests stall the profile's others.
public enum ChromiumPreferences {
    public static var profile: [String: [String: Any]] {
        ["webrtc": ["ip_handling_policy": "disable_non_proxied_udp", "multiple_routes_enabled": false, "nonproxied_udp_enabled": false]]
    }
    public static var localState: [String: [String: Any]] { ["net": ["max_connections_per_proxy": 99]] }

    /// `existing` (a preferences file's JSON, or nil when there is none) with `settings` merged in (one
    /// level deep). A file that is not a JSON object starts afresh, as Chromium itself resets a
    /// preferences file it cannot parse.
    public static func merged(_ settings: [String: [String: Any]], into existing: Data?) -> Data {
        var root = existing.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] } ?? [:]
        for (section, values) in settings {
            var merged = root[section] as? [String: Any] ?? [:]
            for (key, value) in values { merged[key] = value }
            root[section] = merged
        }
        return (try? JSONSerialization.data(withJSONObject: root, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    /// Writes both into the profile directory `userDataDirectory`.
    static func write(to userDataDirectory: String) throws {
        let root = URL(fileURLWithPath: userDataDirectory)
        let profile = root.appendingPathComponent("Default")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        for (file, settings) in [(profile.appendingPathComponent("Preferences"), Self.profile), (root.appendingPathComponent("Local State"), localState)] {
            // Absent: a new profile. Present but unreadable (an I/O error): Chromium does not start
            // (retried with backoff) rather than its settings be overwritten with ours alone.
            let existing = FileManager.default.fileExists(atPath: file.path) ? try Data(contentsOf: file) : nil
            try merged(settings, into: existing).write(to: file, options: .atomic)
        }
    }
}

/// A running Chromium: its process group, and the DevTools connection over its pipe.
public final class ChromiumProcess: @unchecked Sendable {
    // `@unchecked Sendable`: `pid` and `connection` are set once in `init`; `exited` is read and written
    // under `lock`.
    public let pid: pid_t
    public let connection: DevToolsConnection
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Spawns it (its own process group; the pipe on its fds 3 and 4; its output to `log`, else discarded).
    public init(_ launch: ChromiumLaunch, log: FileHandle? = nil) throws {
        try FileManager.default.createDirectory(atPath: launch.userDataDirectory, withIntermediateDirectories: true)
        try ChromiumPreferences.write(to: launch.userDataDirectory)
        var commands: [Int32] = [-1, -1]
        var events: [Int32] = [-1, -1]
        guard browserd_pipe_cloexec(&commands) == 0 else { throw POSIXError(.EMFILE) }
        guard browserd_pipe_cloexec(&events) == 0 else {
            close(commands[0])
            close(commands[1])
            throw POSIXError(.EMFILE)
        }
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        let logFD = log?.fileDescriptor ?? null
        let arguments = launch.arguments
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let spawned = Self.withCStrings(arguments) { argv in
            Self.withCStrings(environment) { envp in
                browserd_spawn_devtools(launch.executable, argv, envp, commands[0], events[1], logFD, Int32(clamping: launch.niceness))
            }
        }
        close(null)
        // The child's ends are its own now.
        close(commands[0])
        close(events[1])
        guard spawned > 0 else {
            close(commands[1])
            close(events[0])
            throw POSIXError(POSIXErrorCode(rawValue: -spawned) ?? .ENOENT)
        }
        pid = spawned
        Self.running.withLockedValue { _ = $0.insert(spawned) }
        connection = DevToolsConnection(commandFD: commands[1], eventFD: events[0])
    }

    /// Whether it has exited (reaped), without waiting.
    public var hasExited: Bool {
        if lock.withLock({ exitStatus != nil }) { return true }
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, WNOHANG)
        if reaped == pid || (reaped < 0 && errno == ECHILD) {
            lock.withLock { exitStatus = status }
            return true
        }
        return false
    }

    /// Ends it: `Browser.close` (a clean exit: its profile is written) when `gracefully`, then SIGKILL to
    /// the whole group (the helpers linger otherwise) unless it exited within `grace`; reaps it.
    /// The whole stop takes at most `grace` and a moment (a renderer told SIGTERM ends within 5 s).
    public func stop(gracefully: Bool, grace: Duration = .seconds(2)) async {
        if gracefully, !hasExited {
            let deadline = ContinuousClock.now + grace
            // Not the stopping task's cancellation: the close is asked for because it ends.
            _ = await Task { try? await connection.call("Browser.close", timeout: grace) }.value
            while !hasExited, ContinuousClock.now < deadline { await Self.pause(.milliseconds(20)) }
        }
        killpg(pid, SIGKILL)
        connection.close()
        while !hasExited { await Self.pause(.milliseconds(10)) }
        Self.running.withLockedValue { _ = $0.remove(pid) }
    }

    /// A wait that a cancelled task (a renderer told to stop) still waits out.
    private static func pause(_ duration: Duration) async {
        await Task { try? await Task.sleep(for: duration) }.value
    }

    /// The process groups of every Chromium this process started and has not reaped.
    private static let running = NIOLockedValueBox(Set<pid_t>())

    /// Kills every Chromium this process started (a last resort: a stop that overran its deadline).
    public static func killAll() {
        for pid in running.withLockedValue({ $0 }) { killpg(pid, SIGKILL) }
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
