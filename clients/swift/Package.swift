// swift-tools-version:6.2
// BrowserdClient: a Swift client for browserd's REST API and event streams, its code generated from the
// server's own contract (`openapi.yaml`: one source of truth) by swift-openapi-generator and committed
// (`make client-generate`; `make test` checks it was made from today's openapi.yaml), so no build
// compiles the generator; browserd-tabs, a terminal tab strip built on it; browserd-renderer. Its own
// package, so the server build never compiles it.
import PackageDescription

let package = Package(
    name: "BrowserdClient",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "BrowserdClient", targets: ["BrowserdClient"]),
        .library(name: "TabStripCore", targets: ["TabStripCore"]),
        .executable(name: "browserd-tabs", targets: ["browserd-tabs"]),
        .library(name: "BrowserdRenderer", targets: ["BrowserdRenderer"]),
        .executable(name: "browserd-renderer", targets: ["browserd-renderer"]),
        .executable(name: "renderer-bench", targets: ["RendererBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", from: "1.5.0"),
        // Its HTTPClient, configured (connections per host): already in the tree through the transport above.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // browserd-renderer's /metrics (as browserd's own).
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // browserd-renderer's fence (FencingProxy): already in the tree through async-http-client.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .target(
            name: "BrowserdClient",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                // URLSession streams bodies on Apple platforms; on Linux it buffers them (no event
                // streams), so there the transport is async-http-client's.
                .product(
                    name: "OpenAPIURLSession", package: "swift-openapi-urlsession",
                    condition: .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS])),
                .product(
                    name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client",
                    condition: .when(platforms: [.linux])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(platforms: [.linux])),
                // KeepAliveTransport (requests on Linux): NIO's HTTP/1.1 codecs, in the tree through async-http-client.
                .product(name: "NIOCore", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: .when(platforms: [.linux])),
            ],
            exclude: ["Generated/openapi.sha256"]
        ),
        .target(name: "TabStripCore", dependencies: ["BrowserdClient"]),
        .executableTarget(
            name: "browserd-tabs",
            dependencies: [
                "BrowserdClient", "TabStripCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // browserd-renderer: a real Chromium over its DevTools pipe (Linux: posix_spawn through a small C shim).
        .target(name: "CRendererSupport"),
        .target(
            name: "BrowserdRenderer",
            dependencies: [
                "BrowserdClient", "CRendererSupport", .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The DevTools gateway automation clients attach to (DevToolsGateway).
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        .executableTarget(
            name: "browserd-renderer",
            dependencies: [
                "BrowserdClient", "BrowserdRenderer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // bench/renderer.py: Chromium's commit to a watcher's event, CPU per navigation, memory per live page.
        .executableTarget(
            name: "RendererBench",
            dependencies: ["BrowserdClient", "BrowserdRenderer", .product(name: "Logging", package: "swift-log")]),
        // The tests of this package's targets are built and run by the server's package (../../Package.swift:
        // BrowserdClientTests), which shares swift-nio and async-http-client with the server's build.
    ]
)
