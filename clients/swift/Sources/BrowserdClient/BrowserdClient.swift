import Foundation
import HTTPTypes
public import OpenAPIRuntime

#if canImport(OpenAPIAsyncHTTPClient)
    import AsyncHTTPClient
    import OpenAPIAsyncHTTPClient
#endif
#if canImport(OpenAPIURLSession)
    import OpenAPIURLSession
#endif

/// A client of one browserd server: every operation of its contract (``api``, generated from
/// `openapi.yaml` by `make client-generate`, `Generated/`), typed event streams that resume after a drop (``windowEvents(_:topics:)``,
/// ``profileEvents(_:)``), and problems as typed errors (``BrowserdProblem``).
///
/// ```swift
/// let browserd = BrowserdClient(server: URL(string: "http://127.0.0.1:8080")!, token: token)
/// let window = try await browserd.api.createWindow(body: .json(.init(profileId: profile))).created.body.json
/// for try await event in browserd.windowEvents(window.id) { print(event) }
/// ```
public struct BrowserdClient: Sendable {
    /// Every operation of the contract, as generated (`Client`); a problem answer throws a
    /// `ClientError` whose `underlyingError` is a ``BrowserdProblem`` (``BrowserdProblem/from(_:)``).
    public let api: Client
    /// The server's base URL.
    public let server: URL
    let streams: Client
    /// What ``api`` sends requests through (``send(_:_:json:operationID:expected:)`` too): its transport and middlewares.
    let requests: any ClientTransport
    let middlewares: [any ClientMiddleware]

    /// - Parameters:
    ///   - server: the server's base URL, e.g. `http://127.0.0.1:8080`.
    ///   - token: a bearer token (the admin token or a profile token); nil while authentication is off.
    ///   - transport: how requests travel; nil: URLSession on Apple platforms, async-http-client on Linux
    ///     (URLSession on Linux buffers whole bodies, so event streams need the latter there).
    ///   - middlewares: more middlewares, run first (e.g. a renderer's fence on its reports).
    public init(server: URL, token: String? = nil, transport: (any ClientTransport)? = nil, middlewares extra: [any ClientMiddleware] = []) {
        self.server = server
        let middlewares: [any ClientMiddleware] = extra + [BearerToken(token: token), RawHeaderValues(), ProblemMiddleware()]
        let requests = transport ?? Self.requestTransport(for: server)
        self.requests = requests
        self.middlewares = middlewares
        let configuration = Configuration(dateTranscoder: RFC3339Dates())
        api = Client(serverURL: server, configuration: configuration, transport: requests, middlewares: middlewares)
        streams = Client(
            serverURL: server, configuration: configuration, transport: transport ?? Self.defaultTransport(streaming: true),
            middlewares: middlewares)
    }

    #if canImport(OpenAPIAsyncHTTPClient)
        /// The process's HTTP clients: one for requests, one for event streams. An open stream holds a
        /// connection for as long as it lasts, so streams have a pool of their own with room for many
        /// (AsyncHTTPClient's shared client allows 8 connections per host: a renderer following a few
        /// profiles' windows filled it with streams, and its requests then waited for ever).
        static let requestClient = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: pooled(HTTPClient.Configuration(), connectionsPerHost: 64))
        static let streamClient = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: pooled(HTTPClient.Configuration(), connectionsPerHost: 4096))

        static func pooled(_ configuration: HTTPClient.Configuration, connectionsPerHost: Int) -> HTTPClient.Configuration {
            var configuration = configuration
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
            return configuration
        }
    #endif

    /// Requests (answers read whole): on Linux over kept-alive connections of NIO's own (``KeepAliveTransport``)
    /// when the server is plain HTTP, else as event streams go.
    static func requestTransport(for server: URL) -> any ClientTransport {
        #if canImport(NIOHTTP1)
            if server.scheme?.lowercased() == "http" { return sharedKeepAlive }
        #endif
        return defaultTransport(streaming: false)
    }

    #if canImport(NIOHTTP1)
        /// One for the process, as async-http-client's clients: its idle connections serve every client of a server.
        static let sharedKeepAlive = KeepAliveTransport()
    #endif

    static func defaultTransport(streaming: Bool) -> any ClientTransport {
        #if canImport(OpenAPIAsyncHTTPClient)
            // The timeout bounds the wait for an answer's head; a stream's body then flows for as long as it lasts.
            AsyncHTTPClientTransport(
                configuration: .init(client: streaming ? streamClient : requestClient, timeout: streaming ? .seconds(30) : .seconds(60)))
        #else
            URLSessionTransport()
        #endif
    }
}

/// Sends `Authorization: Bearer <token>` with every request.
struct BearerToken: ClientMiddleware {
    let token: String?

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let token { request.headerFields[.authorization] = "Bearer \(token)" }
        return try await next(request, body, baseURL)
    }
}

/// Dates as the server writes them (RFC 3339 with milliseconds), and without fractions too.
struct RFC3339Dates: DateTranscoder {
    func encode(_ date: Date) throws -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
    }

    func decode(_ text: String) throws -> Date {
        if let date = try? Date(text, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)) {
            return date
        }
        return try Date(text, strategy: .iso8601)
    }
}

/// The generated code writes header parameters URI-encoded (`If-Match: %22v12%22`), as its runtime
/// encodes every parameter; browserd reads header values as RFC 9110 writes them, so the headers the
/// contract defines go out decoded (`If-Match: "v12"`). Their values are visible ASCII.
struct RawHeaderValues: ClientMiddleware {
    static let names: [HTTPField.Name] = [.ifMatch, HTTPField.Name("Idempotency-Key")!, HTTPField.Name("Last-Event-ID")!]

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        for name in Self.names {
            if let value = request.headerFields[name], value.contains("%"), let raw = value.removingPercentEncoding {
                request.headerFields[name] = raw
            }
        }
        return try await next(request, body, baseURL)
    }
}
