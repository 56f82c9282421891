import NIOCore
import NIOPosix

/// Work due after a delay, armed on NIO's shared loop of the thread that asks when it runs on one (a
/// renderer's tasks do: ``RendererExecutor``), so that arming it wakes no other thread and cancelling
/// it none at all; elsewhere on the next of those loops (never on another group's loop, such as the
/// fence's, whose timers end with it). A sleeping task per timer (what the renderer had)
/// cost a task, a thread of Dispatch's to arm it and a wake to end it, twice a navigation.
enum LoopTimer {
    @discardableResult
    static func after(_ delay: Duration, _ body: @escaping @Sendable () -> Void) -> Scheduled<Void> {
        MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(delay), body)
    }
}
