// swift-tools-version:6.2
// BrowserdClient: a Swift client for browserd's REST API and event streams, generated at build time from
// the server's own contract (`openapi.yaml`, linked into the target: one source of truth), and
// browserd-tabs, a terminal tab strip built on it. Its own package, so the server build never compiles it.
import PackageDescription

let package = Package(
    name: "BrowserdClient",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "BrowserdClient", targets: ["BrowserdClient"]),
        .executable(name: "browserd-tabs", targets: ["browserd-tabs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .target(name: "TabStripCore", dependencies: ["BrowserdClient"]),
        .executableTarget(
            name: "browserd-tabs",
            dependencies: [
                "BrowserdClient", "TabStripCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "BrowserdClientTests", dependencies: ["BrowserdClient", "TabStripCore"]),
    ]
)
