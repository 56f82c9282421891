import BrowserModel

/// Mirrors every declared broadcast property of a window to a ``BroadcastConsumer`` (the
/// broadcaster's own semantics: current value first, no value twice).
final class BroadcastMediator: BroadcastObserver {
    private unowned let broadcaster: Broadcaster
    private weak var consumer: (any BroadcastConsumer)?

    init(broadcaster: Broadcaster, consumer: any BroadcastConsumer) {
        self.broadcaster = broadcaster
        self.consumer = consumer
        for key in broadcaster.keys { try? broadcaster.addObserver(self, for: key.name) }
    }

    func stop() {
        for key in broadcaster.keys { broadcaster.removeObserver(self, for: key.name) }
        consumer = nil
    }

    func broadcaster(_ broadcaster: Broadcaster, didUpdate key: BroadcastKey, value: BroadcastValue) {
        consumer?.broadcast(key: key.name, value: value)
    }
}
