// swift-tools-version: 6.0
import PackageDescription

// The sample app's logic (EntitledSampleCore): everything but the SwiftUI views in App/, so that it
// builds and is tested on Linux too. The Xcode app target adds App/*.swift and this library.
let package = Package(
    name: "EntitledSample",
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .library(name: "EntitledSampleCore", targets: ["EntitledSampleCore"])
    ],
    dependencies: [
        .package(path: "../../Clients/EntitledKit")
    ],
    targets: [
        .target(
            name: "EntitledSampleCore", dependencies: [.product(name: "EntitledKit", package: "EntitledKit")],
            swiftSettings: [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")])
    ]
)
