import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation
import Testing

/// Compatibility with Apple's own test data (see ../shared/apple-fixtures/INDEX.md): the same
/// inputs must give the same verdicts as Apple's libraries.
@Suite("Apple fixtures")
struct AppleFixtureVerificationTests {
    static let resources = AppleFixturePaths.root.appendingPathComponent("app-store-server-library-python/tests/resources")
    static let constants = AppleFixturePaths.root.appendingPathComponent("extracted-cert-constants")
    /// EFFECTIVE_DATE in Apple's chain tests (2025-11-01).
    static let effectiveDate: Int64 = 1_761_962_975

    static func text(_ path: String) throws -> String {
        try String(contentsOf: resources.appendingPathComponent(path), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func der(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: constants.appendingPathComponent(name)))
    }

    static var testRoot: [UInt8] {
        get throws { Array(try Data(contentsOf: resources.appendingPathComponent("certs/testCA.der"))) }
    }

    /// Apple's test verifier: root testCA.der, offline, com.example, appAppleId 1234.
    static func verifier(
        environment: AppStoreEnvironment = .sandbox, bundleId: String = "com.example", appAppleId: Int64 = 1234,
        roots: [[UInt8]]? = nil
    ) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            configuration: .init(
                trustedRoots: try roots ?? [testRoot], bundleId: bundleId, appAppleId: appAppleId, environment: environment),
            clock: FixedClock(seconds: effectiveDate))
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func fixturesArePresent() {
        #expect(FileManager.default.fileExists(atPath: Self.resources.appendingPathComponent("mock_signed_data/testNotification").path))
    }

    // MARK: mock_signed_data

    @Test(.enabled(if: AppleTestData.suitesRun)) func testNotificationVerifies() async throws {
        let notification = try await Self.verifier().verify(
            try Self.text("mock_signed_data/testNotification"), as: NotificationLikePayload.self)
        #expect(notification.notificationType == "TEST")
        #expect(notification.data?.appAppleId == 1234)
        #expect(notification.signedDate == 1_681_314_324_000)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func testNotificationAgainstProduction() async throws {
        let token = try Self.text("mock_signed_data/testNotification")
        #expect(await verificationCode { try await Self.verifier(environment: .production).verify(token, as: NotificationLikePayload.self) }
            == .invalidEnvironment)
        // The app id is checked before the environment.
        #expect(await verificationCode {
            try await Self.verifier(environment: .production, appAppleId: 1235).verify(token, as: NotificationLikePayload.self)
        } == .invalidAppIdentifier)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func testNotificationDecodedAsTransactionHasNoBundle() async throws {
        let token = try Self.text("mock_signed_data/testNotification")
        #expect(await verificationCode { try await Self.verifier(appAppleId: 1235).verify(token, as: FlatPayload.self) } == .invalidAppIdentifier)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func transactionInfoVerifies() async throws {
        let token = try Self.text("mock_signed_data/transactionInfo")
        let transaction = try await Self.verifier().verify(token, as: FlatPayload.self)
        #expect(transaction.environment == "Sandbox")
        #expect(await verificationCode { try await Self.verifier(bundleId: "com.example.x").verify(token, as: FlatPayload.self) }
            == .invalidAppIdentifier)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func renewalInfoVerifies() async throws {
        let renewal = try await Self.verifier().verify(try Self.text("mock_signed_data/renewalInfo"), as: RenewalLikePayload.self)
        #expect(renewal.environment == "Sandbox")
    }

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: ["com.examplex", "com.example"])
    func wrongBundleId(configured: String) async throws {
        let token = try Self.text("mock_signed_data/wrongBundleId")
        #expect(await verificationCode { try await Self.verifier(bundleId: configured).verify(token, as: NotificationLikePayload.self) }
            == .invalidAppIdentifier)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func missingX5CHeaderClaim() async throws {
        let token = try Self.text("mock_signed_data/missingX5CHeaderClaim")
        #expect(await verificationCode { try await Self.verifier().verify(token, as: NotificationLikePayload.self) } == .invalidJWTFormat)
    }

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: ["a.b.c.d", "a.b.c"])
    func garbageTokens(token: String) async throws {
        #expect(await verificationCode { try await Self.verifier().verify(token, as: NotificationLikePayload.self) } == .invalidJWTFormat)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func chainAAndChainBShareTheCacheOnlyByLeafAndIntermediate() async throws {
        // testNotification and transactionInfo carry an alternate x5c[2]; both verify against testCA.der.
        let verifier = try Self.verifier()
        _ = try await verifier.verify(try Self.text("mock_signed_data/testNotification"), as: NotificationLikePayload.self)
        _ = try await verifier.verify(try Self.text("mock_signed_data/transactionInfo"), as: FlatPayload.self)
        #expect(verifier.x509ValidationCount == 1)
        _ = try await verifier.verify(try Self.text("mock_signed_data/renewalInfo"), as: RenewalLikePayload.self)
        #expect(verifier.x509ValidationCount == 2)
    }

    // MARK: xcode

    /// Xcode payloads have fractional millisecond dates.
    struct XcodePayload: Decodable, VerifiablePayload {
        var bundleId: String?
        var environment: String?
        var receiptType: String?
        var signedDate: Double?
        var transactionId: String?
        var autoRenewStatus: Int?
        var verificationSignedDate: Int64? { signedDate.map { Int64($0.rounded(.down)) } }
        var verificationEnvironment: AppStoreEnvironment? { (environment ?? receiptType).map(AppStoreEnvironment.init(rawValue:)) }
        var verificationBundleId: String? { bundleId }
        var verificationAppAppleId: Int64? { nil }
    }

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: ["xcode-signed-app-transaction", "xcode-signed-transaction", "xcode-signed-renewal-info"])
    func xcodePayloadsDecodeWithXcodeConfiguration(name: String) async throws {
        let verifier = try Self.verifier(environment: .xcode, bundleId: "com.example.naturelab.backyardbirds.example")
        let verified = try await verifier.verifyPayload(try Self.text("xcode/\(name)"), as: XcodePayload.self)
        #expect(!verified.signatureChecked)
        #expect(verified.value.verificationEnvironment == .xcode)
        if name == "xcode-signed-transaction" {
            #expect(verified.value.transactionId == "0")
            #expect(verified.value.verificationSignedDate == 1_697_679_936_056)
        }
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func xcodeAppTransactionFailsForProduction() async throws {
        let verifier = try Self.verifier(environment: .production, bundleId: "com.example.naturelab.backyardbirds.example")
        #expect(await verificationCode { try await verifier.verify(try Self.text("xcode/xcode-signed-app-transaction"), as: XcodePayload.self) }
            == .invalidChainLength)
    }

    // MARK: models turned into LocalTesting JWS, as Apple's tests do (alg ES256, no x5c, random key)

    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [
        ("signedNotification.json", 41234 as Int64?), ("signedConsumptionRequestNotification.json", 41234),
        ("signedRescindConsentNotification.json", 41234),
    ])
    func localTestingNotificationsDecodeWithoutSignature(name: String, appAppleId: Int64?) async throws {
        struct RescindAware: Decodable, VerifiablePayload, DeclaresAppIdentifierChecks {
            struct App: Decodable { var environment: String?; var bundleId: String?; var appAppleId: Int64? }
            var notificationType: String
            var signedDate: Int64?
            var data: App?
            var appData: App?
            static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
            var verificationSignedDate: Int64? { signedDate }
            var verificationEnvironment: AppStoreEnvironment? { (data ?? appData)?.environment.map(AppStoreEnvironment.init(rawValue:)) }
            var verificationBundleId: String? { (data ?? appData)?.bundleId }
            var verificationAppAppleId: Int64? { (data ?? appData)?.appAppleId }
        }
        let json = Array(try Data(contentsOf: Self.resources.appendingPathComponent("models/\(name)")))
        let token = try JWSSigner(key: try P256PrivateKey(), certificateChain: nil).sign(payloadJSON: json)
        let local = try SignedDataVerifier(
            configuration: .init(trustedRoots: [try Self.testRoot], bundleId: "com.example", appAppleId: appAppleId, environment: .localTesting),
            clock: FixedClock(seconds: Self.effectiveDate))
        let verified = try await local.verifyPayload(token, as: RescindAware.self)
        #expect(!verified.signatureChecked)
        #expect(verified.payloadJSON == json)
        // The same token is refused by a Sandbox verifier: no x5c.
        #expect(await verificationCode { try await Self.verifier().verify(token, as: RescindAware.self) } == .invalidJWTFormat)
    }

    // MARK: extracted certificate constants (chain B)

    @Test(.enabled(if: AppleTestData.suitesRun)) func validChainReturnsTheLeafKey() throws {
        let key = try Self.verifier().verifyCertificateChain(
            [try Self.der("test_leaf.der"), try Self.der("test_intermediate_ca.der"), try Self.der("test_root_ca.der")],
            at: Self.effectiveDate)
        let pem = try String(contentsOf: Self.constants.appendingPathComponent("test_leaf_public_key.pem"), encoding: .utf8)
        #expect(key == (try P256PublicKey(pem: pem)))
        #expect(try Self.der("test_root_ca.der") == (try Self.testRoot))
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func chainFailures() throws {
        let leaf = try Self.der("test_leaf.der")
        let intermediate = try Self.der("test_intermediate_ca.der")
        let root = try Self.der("test_root_ca.der")
        func failure(_ chain: [[UInt8]], at time: Int64 = Self.effectiveDate, roots: [[UInt8]]? = nil) -> VerificationError.Code? {
            do {
                _ = try Self.verifier(roots: roots).verifyCertificateChain(chain, at: time)
                return nil
            } catch let error as VerificationError {
                return error.code
            } catch {
                return nil
            }
        }
        #expect(failure([leaf, intermediate]) == .invalidChainLength)
        #expect(failure([Array("abc".utf8), intermediate, root]) == .invalidCertificate)
        #expect(failure([Array(Base64.encode(Array("abc".utf8)).utf8), intermediate, root]) == .invalidCertificate)
        #expect(failure([leaf, intermediate, root], at: 2_280_946_846) == .certificateExpired)
        #expect(failure([leaf, intermediate, root], roots: [try Self.der("real_apple_root_ca_g3.der")]) == .chainUntrusted)
        #expect(failure([leaf, intermediate, root], roots: [AppleRootCertificates.appleRootCAG3DER]) == .chainUntrusted)
        #expect(failure([try Self.der("test_leaf_for_intermediate_invalid_oid.der"), try Self.der("test_intermediate_ca_invalid_oid.der"), root])
            == .missingAppleOID)
        #expect(failure([try Self.der("test_leaf_invalid_oid.der"), intermediate, root]) == .missingAppleOID)
        #expect(throws: VerificationError(.invalidCertificate)) { try Self.verifier(roots: [Array("abc".utf8)]) }
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func realAppleChainValidatesOfflineAtTheEffectiveDate() throws {
        let verifier = try SignedDataVerifier(
            configuration: .init(bundleId: nil, environment: .production),  // default roots: the embedded G3
            clock: FixedClock(seconds: Self.effectiveDate))
        let chain = [
            try Self.der("real_apple_receipt_signing_leaf.der"), try Self.der("real_apple_wwdr_g6_intermediate.der"),
            try Self.der("real_apple_root_ca_g3.der"),
        ]
        #expect(throws: Never.self) { try verifier.verifyCertificateChain(chain, at: Self.effectiveDate) }
        #expect(try Self.der("real_apple_root_ca_g3.der") == AppleRootCertificates.appleRootCAG3DER)
        // Before the leaf was issued (2025-09-19) it is not yet valid.
        let fresh = try SignedDataVerifier(
            configuration: .init(bundleId: nil, environment: .production), clock: FixedClock(seconds: 0))
        #expect(throws: VerificationError(.certificateExpired)) { try fresh.verifyCertificateChain(chain, at: 1_700_000_000) }
    }
}
