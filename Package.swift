// swift-tools-version: 6.0
import PackageDescription

/// One settings list for every Swift target: Swift 6 mode with strict concurrency.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Entitled",
    // The server targets build on macOS and Linux. EntitledKit (Clients/EntitledKit) and the
    // sample app's logic (Examples/EntitledSample) are packages of their own, with the client's
    // lower floor; depending on them by path puts them in this package's one build and test run.
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "entitled", targets: ["entitled"]),
        .library(name: "AppStore", targets: ["AppStore"]),
        .library(name: "Entitlements", targets: ["Entitlements"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
    ],
    dependencies: [
        .package(path: "Clients/EntitledKit"),
        .package(path: "Examples/EntitledSample"),
    ],
    targets: [
        // System libraries: each is imported (`internal import`) by exactly one wrapper module.
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(
            name: "CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        .systemLibrary(
            name: "CZstd", pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]),
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]),

        // Wraps COpenSSL: digests, HMAC, ECDSA P-256, X.509, OCSP, certificate minting.
        .target(name: "EntitledCrypto", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        // Wraps CCurl: the one outbound HTTP client (byte cap, total deadline, no redirects) behind
        // the `OutboundHTTP` protocol; webhooks, the Server API client and OCSP all call out through it.
        .target(name: "HTTPClient", dependencies: ["CCurl"], swiftSettings: swiftSettings),
        // Apple's wire formats and the JWS / X.509 verifier (HTTPClient: OCSP revocation checks;
        // Entitlements: the App Store's open vocabularies, `Tokens.swift`, which its payloads use).
        .target(
            name: "AppStore", dependencies: ["EntitledCrypto", "HTTPClient", "Entitlements", "JSONCoding"], swiftSettings: swiftSettings),
        // The App Store Server API client: JWT auth, retries, every endpoint, verified answers.
        .target(
            name: "AppStoreServerAPI", dependencies: ["AppStore", "EntitledCrypto", "HTTPClient"], swiftSettings: swiftSettings),
        // A test certificate authority and JWS signer for tests, benchmarks and the simulator.
        .target(
            name: "AppStoreTesting", dependencies: ["AppStore", "EntitledCrypto"],
            swiftSettings: swiftSettings),
        // A local fake App Store: virtual clock, catalog, customers, signed V2 notifications, delivery, control API.
        .target(
            name: "AppStoreSimulator",
            dependencies: ["AppStore", "AppStoreTesting", "HTTPServer", "HTTPClient", "EntitledCrypto", "Entitlements"],
            swiftSettings: swiftSettings),
        // Google Play's wire formats (Pub/Sub push, developer notifications, Developer API resources),
        // push OIDC verification, service-account auth and the Developer API client.
        .target(
            name: "GooglePlay", dependencies: ["AppStore", "Entitlements", "EntitledCrypto", "HTTPClient", "JSONCoding"],
            swiftSettings: swiftSettings),
        // A local fake Google: token endpoint, Developer API with stateful purchases, JWKS, OIDC-signed Pub/Sub pushes.
        .target(
            name: "GooglePlaySimulator", dependencies: ["GooglePlay", "AppStore", "EntitledCrypto", "HTTPClient", "HTTPServer"],
            swiftSettings: swiftSettings),
        // The pure domain core: facts + policy + now -> customer state. No I/O, no clock, no C.
        .target(name: "Entitlements", swiftSettings: swiftSettings),
        // JSON with one job: Foundation's values and bytes, faster. The strict reader and nesting
        // scan, the tape decoder, the sorted-keys writer and the one seam choosing them
        // (`JSONCodec`); no domain types, no dependencies.
        .target(name: "JSONCoding", swiftSettings: swiftSettings),
        // The ledger and projections on SQLite and PostgreSQL (zstd: the stored JSON, compressed;
        // zlib: reading what older versions deflated; JSONCoding: the facts' text).
        .target(
            name: "Storage", dependencies: ["Entitlements", "EntitledCrypto", "JSONCoding", "CSQLite", "CPostgres", "CZlib", "CZstd"],
            swiftSettings: swiftSettings),
        // HTTP/1.1 on libmicrohttpd; knows nothing of subscriptions (JSONCoding: the one JSON string
        // escaper, for log lines).
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "JSONCoding"], swiftSettings: swiftSettings),
        // Scheduled exports' building blocks: AWS SigV4, the S3-compatible uploader, the file
        // destination and the CSV / JSONL writers (EntitledCrypto: the digests; AppStore: the clock).
        .target(name: "Exports", dependencies: ["EntitledCrypto", "HTTPClient", "AppStore"], swiftSettings: swiftSettings),
        // The configuration file: value types, loading, validation (HTTPServer for its address types,
        // Storage's parser for database URLs, Entitlements for the one RestoreBehavior, EntitledCrypto
        // to check the Server API key, GooglePlay to check a service-account key file, Exports for the
        // export destinations and formats).
        .target(
            name: "EntitledConfig", dependencies: ["Entitlements", "HTTPServer", "Storage", "EntitledCrypto", "GooglePlay", "Exports"],
            swiftSettings: swiftSettings),
        // The composition root (`buildApplication`) and the API: routes, auth, ingest.
        .target(
            name: "EntitledServer",
            dependencies: [
                "AppStore", "AppStoreServerAPI", "HTTPClient", "EntitledCrypto", "Entitlements", "Storage", "HTTPServer", "EntitledConfig",
                "Exports",
                "GooglePlay", "JSONCoding",
            ],
            swiftSettings: swiftSettings),
        // `entitled dev`: the server and the simulator on one virtual clock, the dashboard and its `/dev/` routes;
        // `entitled simulate`'s runner.
        .target(
            name: "EntitledDev",
            dependencies: [
                "EntitledServer", "EntitledConfig", "HTTPServer", "HTTPClient", "AppStore", "Entitlements", "Storage",
                "AppStoreSimulator", "EntitledCrypto", "GooglePlay", "GooglePlaySimulator",
            ],
            swiftSettings: swiftSettings),
        // `entitled bench`'s benchmarks (the command parses their options).
        .target(
            name: "EntitledBenchmarks",
            dependencies: [
                "EntitledServer", "EntitledConfig", "HTTPServer", "HTTPClient", "AppStore", "AppStoreTesting", "Entitlements",
                "Storage", "EntitledCrypto", "GooglePlay", "GooglePlaySimulator",
            ],
            swiftSettings: swiftSettings),
        // The command-line tool: command parsing and help; the targets above do the work.
        .executableTarget(
            name: "entitled",
            dependencies: [
                "EntitledServer", "EntitledDev", "EntitledBenchmarks", "EntitledConfig", "HTTPServer", "AppStore", "AppStoreTesting",
                "Entitlements", "Storage", "AppStoreSimulator", "EntitledCrypto",
            ],
            swiftSettings: swiftSettings),

        // libFuzzer target for the JWS/JSON parsing path (scripts/fuzz.sh); a plain corpus runner otherwise.
        .executableTarget(
            name: "FuzzJWS", dependencies: ["AppStore", "EntitledCrypto", "FuzzSupport", "JSONCoding"], swiftSettings: swiftSettings),
        // The fuzz targets' shared entry point: libFuzzer's driver, or a plain corpus runner.
        .target(name: "FuzzSupport", swiftSettings: swiftSettings),
        // libFuzzer target for app receipts: the DER reader, PKCS#7 framing, receipt payloads.
        .executableTarget(
            name: "FuzzReceipt", dependencies: ["AppStore", "EntitledCrypto", "FuzzSupport"], swiftSettings: swiftSettings),
        // libFuzzer target for the entitlement engine: arbitrary facts (extreme dates included) through `evaluate`.
        .executableTarget(name: "FuzzEngine", dependencies: ["Entitlements", "FuzzSupport"], swiftSettings: swiftSettings),

        .testTarget(
            name: "AppStoreTests", dependencies: ["AppStore", "AppStoreTesting", "EntitledCrypto", "Entitlements", "JSONCoding"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "AppStoreSimulatorTests",
            dependencies: [
                "AppStoreSimulator", "AppStore", "AppStoreTesting", "HTTPServer", "HTTPClient", "EntitledCrypto", "Entitlements",
            ],
            exclude: ["Fixtures"], swiftSettings: swiftSettings),
        .testTarget(
            name: "AppStoreServerAPITests",
            dependencies: [
                "AppStoreServerAPI", "AppStore", "AppStoreSimulator", "AppStoreTesting", "HTTPServer", "HTTPClient", "EntitledCrypto",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "GooglePlayTests", dependencies: ["GooglePlay", "GooglePlaySimulator", "EntitledConfig", "Entitlements", "AppStore", "AppStoreTesting", "EntitledCrypto", "HTTPClient", "HTTPServer"],
            swiftSettings: swiftSettings),
        // EntitledCrypto: the SHA-256 an experiment's split is computed with (the core takes it as a function).
        .testTarget(name: "EntitlementsTests", dependencies: ["Entitlements", "EntitledCrypto"], swiftSettings: swiftSettings),
        .testTarget(
            name: "StorageTests", dependencies: ["Storage", "Entitlements", "AppStoreTesting", "EntitledCrypto", "JSONCoding"], exclude: ["Fixtures"],
            swiftSettings: swiftSettings),
        // SigV4 against AWS's published examples; uploads, and scheduled exports from a store, against a moto S3 server
        // the tests start (and a folder).
        .testTarget(
            name: "ExportsTests",
            dependencies: [
                "Exports", "AppStore", "AppStoreTesting", "EntitledCrypto", "HTTPClient", "EntitledServer", "EntitledConfig", "Storage",
                "Entitlements",
            ],
            swiftSettings: swiftSettings),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer"], swiftSettings: swiftSettings),
        // The benchmarks' arithmetic: ratios, verdicts and the reports' lines (no timed test).
        .testTarget(name: "EntitledBenchmarksTests", dependencies: ["EntitledBenchmarks"], swiftSettings: swiftSettings),
        // The outbound client against hostile servers on loopback (endless, trickling, redirecting).
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient"], swiftSettings: swiftSettings),
        // The server's suites, in three modules that compile side by side (one module was the
        // build's longest job, on one core), over one harness module: a running API on loopback,
        // the stub verifier and signed-data builders, the stores behind it, the built binary.
        .testTarget(
            name: "EntitledTestSupport",
            dependencies: [
                "EntitledServer", "EntitledConfig", "HTTPServer", "HTTPClient", "AppStore", "AppStoreTesting", "Entitlements",
                "Storage", "EntitledCrypto", "GooglePlay", "GooglePlaySimulator",
            ],
            swiftSettings: swiftSettings),
        // The API, ingest, events, webhooks, the console and charts, against a server in process.
        .testTarget(
            name: "EntitledTests",
            dependencies: [
                "EntitledTestSupport", "EntitledServer", "AppStoreServerAPI", "EntitledConfig", "HTTPServer", "HTTPClient", "AppStore",
                "AppStoreTesting", "Entitlements", "Storage", "AppStoreSimulator", "EntitledKit", "GooglePlay", "JSONCoding",
            ],
            exclude: ["Scenarios", "Fixtures"], swiftSettings: swiftSettings),
        // The `entitled` commands (serve, dev, simulate, import, checks) and the configuration they read.
        .testTarget(
            name: "EntitledCommandTests",
            dependencies: [
                "EntitledTestSupport", "EntitledServer", "EntitledConfig", "HTTPServer", "HTTPClient", "AppStore", "AppStoreTesting",
                "AppStoreServerAPI", "Entitlements", "Storage", "AppStoreSimulator", "EntitledDev", "GooglePlay", "GooglePlaySimulator",
                "JSONCoding",
            ],
            swiftSettings: swiftSettings),
        // Google Play through the server: pushes, the Developer API, events, refunds, catch-up.
        .testTarget(
            name: "EntitledPlayTests",
            dependencies: [
                "EntitledTestSupport", "EntitledServer", "EntitledConfig", "HTTPServer", "HTTPClient", "AppStore", "AppStoreTesting",
                "Entitlements", "Storage", "GooglePlay", "GooglePlaySimulator", "JSONCoding",
            ],
            swiftSettings: swiftSettings),
        // EntitledKit and the sample app's logic against a real server and the simulator over
        // loopback (the tests may use the server's targets; the library may not).
        .testTarget(
            name: "EntitledKitTests",
            dependencies: [
                .product(name: "EntitledKit", package: "EntitledKit"),
                .product(name: "EntitledSampleCore", package: "EntitledSample"), "EntitledServer", "EntitledConfig", "EntitledCrypto",
                "HTTPServer", "AppStore", "AppStoreSimulator", "Storage",
            ],
            swiftSettings: swiftSettings),
    ]
)
