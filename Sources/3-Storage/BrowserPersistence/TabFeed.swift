public import BrowserRecords
import Foundation
import Synchronization

/// Reads the tabs of windows on its own thread, in the order the restore will ask for them, so
/// reading and decoding the file overlaps rebuilding the model (the two take about as long).
///
/// ``tabs(ofWindow:)`` blocks until that window's tabs are read. Call ``finish()`` before the store
/// is used again (it is the feed's until then).
public final class TabFeed: @unchecked Sendable {
    // @unchecked Sendable: `store` is used only by the feed's thread until `finish()` has waited for
    // it; everything else the threads share is in `state` (a Mutex) and `signal` (an NSCondition).

    private struct State {
        var ready: [String: [String: TabRecord]] = [:]
        var failure: (any Error)?
        var done = false
    }

    private let state = Mutex(State())
    private let signal = NSCondition()

    /// Starts reading the tabs of `windows`, in that order.
    public init(store: PersistenceStore, windows: [String]) {
        // The store is the reading thread's alone until `finish()` (see the note on the class).
        nonisolated(unsafe) let store = store
        let thread = Thread { [self] in
            Thread.current.name = "bd-restore-read"
            read(store, windows)
        }
        thread.start()
    }

    private func read(_ store: PersistenceStore, _ windows: [String]) {
        var failure: (any Error)?
        for window in windows {
            do {
                let tabs = try store.loadTabs(ofWindow: window)
                state.withLock { $0.ready[window] = tabs }
            } catch {
                failure = error
                break
            }
            wake()
        }
        state.withLock {
            $0.failure = failure
            $0.done = true
        }
        wake()
    }

    private func wake() {
        signal.lock()
        signal.broadcast()
        signal.unlock()
    }

    /// The tabs of `window`, by id, once read (each window's are handed out once).
    /// - Throws: the read's error.
    public func tabs(ofWindow window: String) throws -> [String: TabRecord] {
        signal.lock()
        defer { signal.unlock() }
        while true {
            let (tabs, failure, done) = state.withLock { state in
                (state.ready.removeValue(forKey: window), state.failure, state.done)
            }
            if let tabs { return tabs }
            if let failure { throw failure }
            if done { return [:] }
            signal.wait()
        }
    }

    /// Waits until the reading thread has ended.
    public func finish() {
        signal.lock()
        while !state.withLock({ $0.done }) { signal.wait() }
        signal.unlock()
    }
}
