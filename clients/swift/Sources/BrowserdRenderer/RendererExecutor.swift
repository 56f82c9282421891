import NIOCore
import NIOPosix

/// Where the renderer's tasks run: on NIO's event loops (``MultiThreadedEventLoopGroup/singleton``,
/// one a core), which also carry its HTTP client's connections and its timers (``LoopTimer``),
/// instead of Swift concurrency's own pool beside them. A page's report then goes on with its answer
/// on the thread that read it, rather than waking a pool thread for it (bench/renderer.py; figures in
/// docs/benchmarks.md); the DevTools pipes are read on one of those loops (``DevToolsConnection/loop``),
/// so a page's event resumes its task there too. A task must then never block: it would hold up a
/// loop's sockets and pipes (none does: name lookups run on the fence's threads of their own).
public enum RendererExecutor {
    /// Makes NIO's loops Swift concurrency's global executor: call it once, first thing in `main`
    /// (NIO's rule). False where NIO cannot (the executor stays Swift's own: slower, not wrong).
    @discardableResult
    public static func install() -> Bool {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
