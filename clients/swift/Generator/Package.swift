// swift-tools-version:6.2
// The client's code generator, in a package of its own: `make client-generate` builds and runs it when
// openapi.yaml changes, so no other build (make test, make run) ever compiles it.
import PackageDescription

let package = Package(
    name: "BrowserdClientGenerator",
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", from: "1.14.3")
    ]
)
