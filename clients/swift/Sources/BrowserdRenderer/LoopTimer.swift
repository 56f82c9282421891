import NIOCore
import NIOPosix

/// Work due after a delay, armed on the event loop of the thread that asks when it runs on one (a
/// renderer's tasks do: ``RendererExecutor``), so that arming it wakes no other thread and cancelling
/// it none at all; elsewhere on one of NIO's loops. A sleeping task per timer (what the renderer had)
/// cost a task, a thread of Dispatch's to arm it and a wake to end it, twice a navigation.
enum LoopTimer {
    @discardableResult
    static func after(_ delay: Duration, _ body: @escaping @Sendable () -> Void) -> Scheduled<Void> {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
        return loop.scheduleTask(in: TimeAmount(delay), body)
    }
}
