public import Glibc
import Synchronization

/// A child process for tests, spawned with `posix_spawn` — not Foundation's `Process`, whose `run()` on
/// Linux crashes now and then in Swift 6.3 (a buffer over-read while it lists `/proc/self/fd`,
/// swift-corelibs-foundation#5472: a `memmove` in `Process.run()`, seen here in about one suite run in
/// five). Its output (standard output and error together) is read by a thread of its own until its
/// end: the pipe is made close-on-exec, so no other child holds it open and the end comes when this
/// child ends.
public final class ChildProcess: Sendable {
    /// Where the child's output goes.
    public enum Output: Sendable {
        /// To `handler`, chunk by chunk, from a reading thread (the chunks in order; nothing at the end).
        case pipe(@Sendable ([UInt8]) -> Void)
        /// To `/dev/null`.
        case discarded
        /// Standard output to `/dev/null`, errors to this process's standard error.
        case errorsShown
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public let description: String
    }

    public let pid: pid_t
    /// The wait status once the child was reaped (reaped once, under this lock).
    private let reaped = Mutex<Int32?>(nil)

    /// Whether the reader of the child's output reached its end (true when it has no pipe): the
    /// child's exit is seen before its last output is read, so a test that reads what it printed
    /// waits for this too (``waitForOutputEnd(timeout:)``).
    private let outputEnded = Flag(true)

    /// The spawns of this process, one at a time (see `init`).
    private static let spawning = Mutex(())

    /// Spawns `executable` with `arguments` and exactly `environment`.
    public convenience init(executable: String, arguments: [String], environment: [String: String], output: Output) throws {
        let (pid, readEnd) = try Self.spawning.withLock { _ in
            try Self.spawn(executable: executable, arguments: arguments, environment: environment, output: output)
        }
        self.init(pid: pid)
        if case .pipe(let handler) = output, let readEnd {
            outputEnded.set(false)
            let ended = outputEnded
            Thread {
                Self.read(readEnd, into: handler)
                ended.set(true)
            }.start()
        }
    }

    private init(pid: pid_t) { self.pid = pid }

    /// Spawns it; returns its pid and the read end of its output's pipe, if it has one.
    private static func spawn(
        executable: String, arguments: [String], environment: [String: String], output: Output
    ) throws -> (pid_t, Int32?) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var ends: [Int32] = [-1, -1]
        switch output {
        case .pipe:
            guard pipe(&ends) == 0 else { throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))") }
            // Close-on-exec, so that no other child holds it; the spawns of this process take turns
            // (``spawning``), so none starts between `pipe` and these.
            _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
            posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
            posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
        case .discarded:
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .errorsShown:
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") }
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let spawned = (argv + [nil]).withUnsafeBufferPointer { args in
            (envp + [nil]).withUnsafeBufferPointer { env in
                posix_spawn(&child, executable, &actions, nil, args.baseAddress!, env.baseAddress!)
            }
        }
        if ends[1] >= 0 { close(ends[1]) }
        guard spawned == 0 else {
            if ends[0] >= 0 { close(ends[0]) }
            throw SpawnError(description: "posix_spawn \(executable): \(String(cString: strerror(spawned)))")
        }
        return (child, ends[0] >= 0 ? ends[0] : nil)
    }

    /// Reads until the end of the child's output, then closes the pipe.
    private static func read(_ descriptor: Int32, into handler: @Sendable ([UInt8]) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                handler(Array(buffer[0..<count]))
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        close(descriptor)
    }

    /// The wait status, if the child ended (reaped here, once).
    private func status() -> Int32? {
        reaped.withLock { reaped in
            if reaped != nil { return reaped }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { reaped = status }
            return reaped
        }
    }

    public var isRunning: Bool { status() == nil }

    /// Its exit code, or the number of the signal that ended it (as Foundation's `terminationStatus`).
    /// - Precondition: it ended.
    public var terminationStatus: Int32 {
        guard let status = status() else { preconditionFailure("the child is still running") }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : signal
    }

    /// Whether a signal ended it.
    public var endedBySignal: Bool { status().map { $0 & 0x7F != 0 } ?? false }

    public func signal(_ signal: Int32) { kill(pid, signal) }

    /// Waits until it ends, and its output (if collected) has been read to its end.
    public func waitUntilExit() {
        while isRunning { usleep(5_000) }
        waitForOutputEnd()
    }

    /// Waits (up to `timeout`: a grandchild may hold the pipe) until all the child printed was read.
    public func waitForOutputEnd(timeout: Duration = .seconds(5)) {
        let deadline = ContinuousClock.now + timeout
        while !outputEnded.value, ContinuousClock.now < deadline { usleep(2_000) }
    }

    deinit {
        // A test never leaves a process behind, nor a zombie: a child still running when its handle
        // goes (a test that failed before stopping it) is killed, and every child is reaped here.
        guard status() == nil else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }
}

/// A flag set from one thread and read from another.
private final class Flag: Sendable {
    private let state: Mutex<Bool>
    init(_ value: Bool) { state = Mutex(value) }
    var value: Bool { state.withLock { $0 } }
    func set(_ value: Bool) { state.withLock { $0 = value } }
}

/// A thread, for the reader (Foundation's `Thread` is not imported here).
private final class Thread: Sendable {
    private let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    func start() {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self)
        let created = pthread_create(
            &thread, nil,
            { pointer in
                let box = Unmanaged<Thread>.fromOpaque(pointer!).takeRetainedValue()
                box.body()
                return nil
            }, box.toOpaque())
        if created == 0 {
            pthread_detach(thread)
        } else {
            box.release()
        }
    }
}

/// What a child printed, collected from its reading thread.
public final class CollectedOutput: Sendable {
    private let bytes = Mutex<[UInt8]>([])

    public init() {}

    public func append(_ more: [UInt8]) { bytes.withLock { $0 += more } }

    /// Everything so far, as text.
    public var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }

    /// The first line, once it is whole.
    public var firstLine: String? {
        bytes.withLock { bytes in bytes.firstIndex(of: UInt8(ascii: "\n")).map { String(decoding: bytes[..<$0], as: UTF8.self) } }
    }
}
