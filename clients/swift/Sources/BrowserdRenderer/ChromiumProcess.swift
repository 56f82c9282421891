import CRendererSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How to start one Chromium for one profile.
public struct ChromiumLaunch: Sendable, Equatable {
    /// The browser binary (Debian: `/usr/lib/chromium/chromium`, not the `/usr/bin` wrapper script).
    public var executable: String
    /// Its profile directory: one Chromium per directory (a second one on it exits 21).
    public var userDataDirectory: String
    /// Hosts pages may reach on loopback (besides nothing): `--allow-origin`'s, as host:port.
    public var allowedLoopbackHosts: [String]
    /// `--no-sandbox` (Chromium refuses to start as root without it; never otherwise).
    public var runsAsRoot: Bool

    public init(executable: String, userDataDirectory: String, allowedLoopbackHosts: [String] = [], runsAsRoot: Bool = getuid() == 0) {
        self.executable = executable
        self.userDataDirectory = userDataDirectory
        self.allowedLoopbackHosts = allowedLoopbackHosts
        self.runsAsRoot = runsAsRoot
    }

    /// Where Debian and Ubuntu put it; nil when none is installed.
    public static func defaultExecutable() -> String? {
        ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The command line: new headless mode, the DevTools pipe, a quiet browser (puppeteer's defaults,
    /// trimmed), its own profile directory.
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
            "--disable-ipc-flooding-protection",
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
        if runsAsRoot { arguments.append("--no-sandbox") }
        arguments.append("about:blank")
        return arguments
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
                browserd_spawn_devtools(launch.executable, argv, envp, commands[0], events[1], logFD)
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
    public func stop(gracefully: Bool, grace: Duration = .seconds(3)) async {
        if gracefully, !hasExited {
            _ = try? await connection.call("Browser.close", timeout: .seconds(2))
            let deadline = ContinuousClock.now + grace
            while !hasExited, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        }
        killpg(pid, SIGKILL)
        connection.close()
        while !hasExited { try? await Task.sleep(for: .milliseconds(10)) }
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
