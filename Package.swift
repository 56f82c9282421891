// swift-tools-version:6.2
import PackageDescription

/// Settings every Swift target shares: Swift 6 mode (strict concurrency), `any` spelled out,
/// and imports internal unless a file says `public import` on purpose.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// What only the `PostgreSQL` trait builds.
let withPostgreSQL: TargetDependencyCondition? = .when(traits: ["PostgreSQL"])

let package = Package(
    name: "browserd",
    // Linux only (Debian 12, Ubuntu 24.04): the HTTP edge, the SQLite wrapper and MiniHTTPClient call Glibc.
    products: [
        .executable(name: "browserd", targets: ["browserd"]),
    ],
    // The default build is the embedded one (SQLite; nothing of NIO is compiled). PostgreSQL and
    // the cluster are a trait: `swift build --traits PostgreSQL` (the Makefile's `*-postgres` goals,
    // the container image, the cluster tests).
    traits: [
        .trait(
            name: "PostgreSQL",
            description: "Several instances on one PostgreSQL database (--database-url): postgres-nio, swift-nio, async-http-client."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        // C libraries, reached only through these thin wrapper modules.
        .systemLibrary(
            name: "CMicroHTTPD", path: "Sources/0-C/CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        // epoll and eventfd for the event loops (the stream loops, the cluster's relay; headers only).
        .systemLibrary(name: "CLinuxEvents", path: "Sources/0-C/CLinuxEvents"),
        .systemLibrary(
            name: "CLZ4", path: "Sources/0-C/CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite", path: "Sources/0-C/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),

        // The files browserd serves from its binary: the contract (a link to the top-level openapi.yaml,
        // one source of truth) and the inspector page, compiled in by C23 `#embed` (no build step, no CDN).
        .target(name: "CEmbeddedFiles", path: "Sources/0-C/CEmbeddedFiles", exclude: ["openapi.yaml", "inspector"]),

        // The durable form of the model as plain values: what mediators emit and persistence stores.
        .target(name: "BrowserRecords", path: "Sources/2-Model/BrowserRecords", swiftSettings: swiftSettings),
        // SQLite persistence of the records: schema, migrations, group-committing writer.
        .target(name: "BrowserPersistence", dependencies: ["SQLite", "BrowserRecords"], path: "Sources/3-Storage/BrowserPersistence", swiftSettings: swiftSettings),
        // PostgreSQL persistence of the same records (`--database-url`): the shared store of several instances.
        .target(name: "BrowserPostgres", dependencies: [
            "BrowserRecords",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/3-Storage/BrowserPostgres", swiftSettings: swiftSettings),

        // Who calls and what a request names, as values: principals, the tokens that prove them,
        // request subjects. No HTTP: the API reads them from requests, the cluster's decisions take them.
        .target(name: "BrowserAccess", dependencies: [
            "BrowserModel", "BrowserRecords", .product(name: "Crypto", package: "swift-crypto"),
        ], path: "Sources/2-Model/BrowserAccess", swiftSettings: swiftSettings),
        // Which regular profiles are in memory: the residency machine (a value) and the one shell that
        // carries out its actions for either store's backend.
        .target(name: "BrowserResidency", dependencies: [
            "BrowserAccess", "BrowserModel", "BrowserRecords", "BrowserServices",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], path: "Sources/4-Services/BrowserResidency", swiftSettings: swiftSettings),

        // The HTTP edge of the API: parse, check, dispatch or read a snapshot, encode.
        .target(name: "BrowserAPI", dependencies: [
            "BrowserAccess", "BrowserResidency", "HTTPServer", "BrowserServices", "BrowserModel", "BrowserRecords", "FirefoxSession",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "DequeModule", package: "swift-collections"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], path: "Sources/5-API/BrowserAPI", swiftSettings: swiftSettings),
        // Firefox's session files (mozLz4 through liblz4, their JSON) read into an ImportedSession.
        .target(name: "FirefoxSession", dependencies: ["CLZ4", "JSONWriter", "BrowserModel", "BrowserServices"], path: "Sources/4-Services/FirefoxSession", swiftSettings: swiftSettings),

        // The cluster's decisions as values (placement, leases, the owner cache, peer proofs, timing): no
        // NIO, no PostgreSQL, no sockets, so they build and their tests run in every build.
        .target(name: "ClusterCore", dependencies: [
            "BrowserAccess", "BrowserModel", "BrowserRecords", .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/4-Services/ClusterCore", swiftSettings: swiftSettings),
        // Several instances on one PostgreSQL database: placement, leases, the owner cache, the
        // directory and forwarding. Its decisions are value state machines (Placement, LeaseKeeper).
        .target(name: "BrowserCluster", dependencies: [
            "BrowserAccess", "BrowserAPI", "BrowserModel", "BrowserPostgres", "BrowserRecords", "BrowserResidency", "BrowserServices", "CLinuxEvents",
            "ClusterCore", "HTTPServer", "ProcessMemory", "Sockets",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], path: "Sources/6-App/BrowserCluster", swiftSettings: swiftSettings),

        // Infrastructure layers: they know nothing of browsers.
        // A socket that owns its descriptor (closed exactly once), resolved addresses, and the core every
        // event loop shares (EventLoopCore: epoll, the eventfd, handed-over work, registrations by tag).
        .target(name: "Sockets", dependencies: ["CLinuxEvents"], path: "Sources/1-Infrastructure/Sockets", swiftSettings: swiftSettings),
        .target(
            name: "HTTPServer",
            dependencies: [
                "CLinuxEvents", "CMicroHTTPD", "JSONWriter", "Sockets",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/1-Infrastructure/HTTPServer",
            swiftSettings: swiftSettings
        ),
        .target(name: "SQLite", dependencies: ["CSQLite"], path: "Sources/1-Infrastructure/SQLite", swiftSettings: swiftSettings),
        // A fast JSON writer, shared by the HTTP edge and the event mediators.
        .target(name: "JSONWriter", path: "Sources/1-Infrastructure/JSONWriter", swiftSettings: swiftSettings),
        .target(name: "MiniHTTPClient", dependencies: ["Sockets"], path: "Sources/1-Infrastructure/MiniHTTPClient", swiftSettings: swiftSettings),
        // The process's memory: glibc's allocator settings (MemoryPolicy) and the threads loads run on
        // so that what they allocate leaves with them (LoadThread).
        .target(name: "ProcessMemory", dependencies: ["CLinuxEvents"], path: "Sources/1-Infrastructure/ProcessMemory", swiftSettings: swiftSettings),

        // The model: pure Swift, no I/O; imports neither HTTP nor SQLite.
        .target(name: "BrowserModel", path: "Sources/2-Model/BrowserModel", swiftSettings: swiftSettings),
        // Mediators and the service façade: they watch the model and hand out value snapshots.
        .target(name: "BrowserServices", dependencies: ["BrowserModel", "BrowserRecords", "JSONWriter", "ProcessMemory"], path: "Sources/4-Services/BrowserServices", swiftSettings: swiftSettings),

        // The application: configuration, wiring, operations endpoints.
        .target(
            name: "BrowserdApp",
            dependencies: [
                "CEmbeddedFiles",
                "CLinuxEvents",
                "HTTPServer",
                "BrowserAccess",
                "BrowserAPI",
                "BrowserResidency",
                .target(name: "BrowserCluster", condition: withPostgreSQL),
                // The renderers' assignments are ClusterCore's decisions, with either store.
                "ClusterCore",
                "BrowserModel",
                "BrowserServices",
                "BrowserPersistence",
                .target(name: "BrowserPostgres", condition: withPostgreSQL),
                "BrowserRecords",
                "MiniHTTPClient",
                "ProcessMemory",
                "SQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/6-App/BrowserdApp",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "browserd",
            dependencies: [
                "BrowserdApp", .target(name: "BrowserPostgres", condition: withPostgreSQL), "BrowserServices", "HTTPServer",
                "MiniHTTPClient", "ProcessMemory",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/6-App/browserd",
            swiftSettings: swiftSettings
        ),

        // What an imported file goes through, for the fuzz targets and the corpus replay (`make fuzz`).
        .target(name: "ImportFuzzing", dependencies: ["BrowserAPI", "BrowserModel", "BrowserRecords", "BrowserServices", "CFuzzerDriver", "FirefoxSession"], path: "fuzz/Sources/ImportFuzzing",
            swiftSettings: swiftSettings),
        .systemLibrary(name: "CFuzzerDriver", path: "fuzz/Sources/CFuzzerDriver"),

        // Helpers shared by the test targets: a seeded generator, and the trait that runs suites off the
        // cooperative pool (OffThePool).
        .target(name: "TestSupport", path: "Tests/TestSupport", swiftSettings: swiftSettings),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "MiniHTTPClient", "Sockets", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "JSONWriterTests", dependencies: ["JSONWriter", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "BrowserModelTests", dependencies: ["BrowserModel", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "BrowserPersistenceTests", dependencies: ["BrowserPersistence", "BrowserRecords", "SQLite", "TestSupport"], swiftSettings: swiftSettings),
        // One suite for both stores (SQLite and PostgreSQL): write, restore, idempotency, migrations, faults.
        .testTarget(name: "StoreConformanceTests", dependencies: [
            "BrowserPersistence", .target(name: "BrowserPostgres", condition: withPostgreSQL), "BrowserRecords", "SQLite", "TestSupport",
            .product(name: "PostgresNIO", package: "postgres-nio", condition: withPostgreSQL),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: swiftSettings),
        // BrowserPostgres by itself (the URL, lookups, notifications) against a real PostgreSQL; leases
        // and fencing are in the store conformance suite, beside the stores they fence.
        .testTarget(name: "BrowserPostgresTests", dependencies: [
            .target(name: "BrowserPostgres", condition: withPostgreSQL), "BrowserRecords", "TestSupport",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: swiftSettings),
        // The cluster's decisions, without PostgreSQL or sockets: in every build.
        .testTarget(
            name: "ClusterCoreTests",
            dependencies: [
                "ClusterCore", "BrowserAccess", "BrowserModel", "BrowserRecords", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // The cluster's sockets: the relay against scripted owners.
        .testTarget(
            name: "BrowserClusterTests",
            dependencies: [
                .target(name: "BrowserCluster", condition: withPostgreSQL), .target(name: "ClusterCore", condition: withPostgreSQL),
                .target(name: "BrowserAccess", condition: withPostgreSQL), .target(name: "BrowserAPI", condition: withPostgreSQL),
                .target(name: "Sockets", condition: withPostgreSQL), "BrowserRecords", "HTTPServer", "TestSupport",
                .target(name: "BrowserModel", condition: withPostgreSQL),
                .product(name: "Logging", package: "swift-log", condition: withPostgreSQL),
                .product(name: "Crypto", package: "swift-crypto", condition: withPostgreSQL),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "BrowserAPITests",
            dependencies: [
                "BrowserAccess", "BrowserAPI", "BrowserModel", "BrowserRecords", "BrowserServices", "HTTPServer", "TestSupport",
                .product(name: "Metrics", package: "swift-metrics"),
            ], swiftSettings: swiftSettings),
        // The residency machine's transitions, and the shell that carries them out.
        .testTarget(
            name: "BrowserResidencyTests",
            dependencies: [
                "BrowserAccess", "BrowserAPI", "BrowserResidency", "BrowserModel", "BrowserRecords", "BrowserServices", "TestSupport",
                .product(name: "Metrics", package: "swift-metrics"),
            ], swiftSettings: swiftSettings),
        .testTarget(
            name: "FirefoxSessionTests",
            dependencies: ["FirefoxSession", "BrowserServices", "BrowserModel", "BrowserRecords", "ImportFuzzing", "JSONWriter", "TestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(name: "BrowserServicesTests", dependencies: ["BrowserServices", "BrowserModel", "BrowserRecords", "ProcessMemory", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "BrowserdAppTests",
            dependencies: [
                "BrowserdApp", .target(name: "BrowserPostgres", condition: withPostgreSQL), "BrowserServices", "FirefoxSession", "HTTPServer",
                "MiniHTTPClient", "ProcessMemory", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

// The benchmarks' and the fuzzers' executables (`make bench`, `make fuzz`), in every build but make
// test's (BROWSERD_CLIENT_TESTS=1 below), which runs none of them: six fewer executables to compile and
// link there.
if Context.environment["BROWSERD_CLIENT_TESTS"] != "1" {
    package.targets += [
        // A bare HTTPServer with a stream hub, for bench/streams.py.
        .executableTarget(name: "StreamBench", dependencies: ["HTTPServer", .product(name: "Logging", package: "swift-log")],
                          path: "bench/Sources/StreamBench", swiftSettings: swiftSettings),
        // Model operation costs and memory, for bench/run.sh.
        .executableTarget(name: "ModelBench", dependencies: ["BrowserModel"], path: "bench/Sources/ModelBench", swiftSettings: swiftSettings),
        // JSONText against Foundation's JSONEncoder, for bench/run.sh.
        .executableTarget(name: "JSONBench", dependencies: ["JSONWriter"], path: "bench/Sources/JSONBench", swiftSettings: swiftSettings),
        // Persistence throughput and restore time, for bench/run.sh.
        .executableTarget(name: "PersistenceBench", dependencies: ["BrowserPersistence", "BrowserRecords", "BrowserServices", "SQLite"],
                          path: "bench/Sources/PersistenceBench", swiftSettings: swiftSettings),
        // libFuzzer targets (`make fuzz` builds them with -sanitize=fuzzer); built plainly, they replay files.
        .executableTarget(name: "FuzzFirefoxSession", dependencies: ["ImportFuzzing"], path: "fuzz/Sources/FuzzFirefoxSession", swiftSettings: swiftSettings),
        .executableTarget(name: "FuzzProfileDocument", dependencies: ["ImportFuzzing"], path: "fuzz/Sources/FuzzProfileDocument", swiftSettings: swiftSettings),
    ]
}

// The Swift client's suites, and browserd-renderer's, with make test (BROWSERD_CLIENT_TESTS=1): its
// test build then holds the client package too, which shares swift-nio, swift-crypto and
// async-http-client with the PostgreSQL build instead of compiling them a second time. Without it (make
// run, make build) the client package is not in the graph. (The client's generated code is committed:
// no build compiles swift-openapi-generator.)
if Context.environment["BROWSERD_CLIENT_TESTS"] == "1" {
    package.dependencies += [
        .package(path: "clients/swift"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        // HTTPRequest and HTTPField for KeepAliveTransportTests (in the graph already, under swift-openapi-runtime).
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ]
    package.targets += [
        .testTarget(
            name: "BrowserdClientTests",
            dependencies: [
                .product(name: "BrowserdClient", package: "swift"), .product(name: "TabStripCore", package: "swift"),
                .product(name: "BrowserdRenderer", package: "swift"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"), .product(name: "Logging", package: "swift-log"),
                // KeepAliveTransportTests' own misbehaving server.
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "TestSupport",
            ],
            path: "clients/swift/Tests/BrowserdClientTests",
            swiftSettings: swiftSettings),
    ]
}
