// swift-tools-version: 6.0
import PackageDescription

// EntitledKit, the Swift client for apps and backends, in a package of its own: SwiftPM's
// `platforms` is package-wide, and the client's floor (StoreKit 2's) is far below the server's.
// The root package depends on it by path, so its build and tests include this one.
let package = Package(
    name: "EntitledKit",
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .library(name: "EntitledKit", targets: ["EntitledKit"])
    ],
    targets: [
        // Foundation only (and StoreKit, SwiftUI where they exist): no server target, no C library.
        .target(
            name: "EntitledKit",
            swiftSettings: [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")])
    ]
)
