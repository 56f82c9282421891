public import ServiceLifecycle

/// The application as a service of a `ServiceGroup`: starts it, waits for graceful shutdown
/// (SIGTERM or SIGINT), then stops it cleanly.
public struct ServerService: Service {
    let application: Application

    public init(application: Application) { self.application = application }

    public func run() async throws {
        try await application.start()
        try? await gracefulShutdown()
        await application.shutdown()
    }
}
