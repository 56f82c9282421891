import Logging
import Synchronization

/// After a failed commit, runs the recovery (roll memory back to the disk, then wait for a write to
/// commit again) at once and then once a second until it succeeds.
final class StorageRecovery: Sendable {
    private let attempt = Mutex<(@Sendable () async throws -> Void)?>(nil)
    private let running = Mutex<Task<Void, Never>?>(nil)
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func configure(_ attempt: @escaping @Sendable () async throws -> Void) {
        self.attempt.withLock { $0 = attempt }
    }

    func start() {
        guard let attempt = attempt.withLock({ $0 }) else { return }
        running.withLock { task in
            guard task == nil else { return }
            let logger = self.logger
            task = Task { [weak self] in
                var attempts = 0
                // The first attempt at once (it undoes what was not committed), then once a second.
                while !Task.isCancelled {
                    attempts += 1
                    do {
                        try await attempt()
                        break
                    } catch {
                        if attempts == 1 || attempts % 30 == 0 {
                            logger.warning("storage still failing", metadata: ["attempts": "\(attempts)", "error": "\(error)"])
                        }
                    }
                    try? await Task.sleep(for: .seconds(1))
                }
                self?.running.withLock { $0 = nil }
            }
        }
    }

    func stop() {
        running.withLock { $0?.cancel() }
    }
}
