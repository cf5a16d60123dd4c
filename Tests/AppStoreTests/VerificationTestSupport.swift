import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation

/// Test-only payload shapes (the real models live elsewhere in AppStore); just enough for the checks.

/// A flat payload: transaction-like, with optional identity fields.
struct FlatPayload: Codable, VerifiablePayload, DeclaresAppIdentifierChecks {
    var signedDate: Int64?
    var environment: String?
    var bundleId: String?
    var appAppleId: Int64?
    var transactionId: String?

    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId] }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? { environment.map(AppStoreEnvironment.init(rawValue:)) }
    var verificationBundleId: String? { bundleId }
    var verificationAppAppleId: Int64? { appAppleId }
}

/// Renewal-info-like: no identifiers are compared.
struct RenewalLikePayload: Codable, VerifiablePayload, DeclaresAppIdentifierChecks {
    var signedDate: Int64?
    var environment: String?
    static var appIdentifierChecks: AppIdentifierChecks { [] }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? { environment.map(AppStoreEnvironment.init(rawValue:)) }
    var verificationBundleId: String? { nil }
    var verificationAppAppleId: Int64? { nil }
}

/// Notification-like: identity comes from `data`.
struct NotificationLikePayload: Codable, VerifiablePayload, DeclaresAppIdentifierChecks {
    struct AppData: Codable {
        var environment: String?
        var bundleId: String?
        var appAppleId: Int64?
    }
    var notificationType: String
    var signedDate: Int64?
    var data: AppData?

    static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
    var verificationSignedDate: Int64? { signedDate }
    var verificationEnvironment: AppStoreEnvironment? { data?.environment.map(AppStoreEnvironment.init(rawValue:)) }
    var verificationBundleId: String? { data?.bundleId }
    var verificationAppAppleId: Int64? { data?.appAppleId }
}

/// 2025-11-01, inside the default test CA's validity.
let testNowMilliseconds: Int64 = 1_761_962_975_000

func makeTestVerifier(
    ca: TestCertificateAuthority, roots: [[UInt8]]? = nil, bundleId: String? = "com.example", appAppleId: Int64? = nil,
    environments: Set<AppStoreEnvironment> = [.sandbox], mode: SignedDataVerifier.Mode = .offline,
    clock: any EpochClock = FixedClock(milliseconds: testNowMilliseconds),
    revocationChecker: (any RevocationChecker)? = nil, cache: VerifiedChainCache = VerifiedChainCache()
) throws -> SignedDataVerifier {
    try SignedDataVerifier(
        configuration: .init(
            trustedRoots: roots ?? [ca.rootDER], bundleId: bundleId, appAppleId: appAppleId,
            environments: environments, mode: mode),
        clock: clock, revocationChecker: revocationChecker, chainCache: cache)
}

func sampleTransactionPayload(environment: String = "Sandbox", bundleId: String? = "com.example", signedDate: Int64? = testNowMilliseconds)
    -> FlatPayload
{
    FlatPayload(signedDate: signedDate, environment: environment, bundleId: bundleId, appAppleId: nil, transactionId: "1000")
}

/// The package root, found by walking up from this file to `Package.swift`.
func appStorePackageRoot(file: String = #filePath) -> URL {
    var url = URL(fileURLWithPath: file).deletingLastPathComponent()
    while url.path != "/" {
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        url = url.deletingLastPathComponent()
    }
    fatalError("no Package.swift above \(file)")
}

/// Where Apple's test data lives (outside the package, next to it: ``AppleTestData``).
enum AppleFixturePaths {
    static let root = AppleTestData.root
}
