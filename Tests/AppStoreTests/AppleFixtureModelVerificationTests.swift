import AppStore
import AppStoreTesting
import Foundation
import Testing

/// Apple's signed fixtures verified straight into the real wire models (not test stand-ins), so
/// the models' identifier declarations give Apple's verdicts.
@Suite("Apple fixtures through the wire models")
struct AppleFixtureModelVerificationTests {
    typealias Fixtures = AppleFixtureVerificationTests

    @Test(.enabled(if: AppleTestData.suitesRun)) func testNotificationAsModel() async throws {
        let token = try Fixtures.text("mock_signed_data/testNotification")
        let notification = try await Fixtures.verifier().verify(token, as: ResponseBodyV2DecodedPayload.self)
        #expect(notification.notificationType == .test)
        #expect(notification.data?.bundleId == "com.example")
        #expect(notification.signedDate == 1_681_314_324_000)
        #expect(await verificationCode {
            try await Fixtures.verifier(environment: .production).verify(token, as: ResponseBodyV2DecodedPayload.self)
        } == .invalidEnvironment)
        #expect(await verificationCode {
            try await Fixtures.verifier(environment: .production, appAppleId: 1235).verify(
                token, as: ResponseBodyV2DecodedPayload.self)
        } == .invalidAppIdentifier)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func notificationDecodedAsTransactionLacksTheBundle() async throws {
        let token = try Fixtures.text("mock_signed_data/testNotification")
        #expect(await verificationCode {
            try await Fixtures.verifier(appAppleId: 1235).verify(token, as: JWSTransactionDecodedPayload.self)
        } == .invalidAppIdentifier)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func transactionAndRenewalAsModels() async throws {
        let transactionToken = try Fixtures.text("mock_signed_data/transactionInfo")
        let transaction = try await Fixtures.verifier().verify(transactionToken, as: JWSTransactionDecodedPayload.self)
        #expect(transaction.environment == .sandbox)
        #expect(await verificationCode {
            try await Fixtures.verifier(bundleId: "com.example.x").verify(transactionToken, as: JWSTransactionDecodedPayload.self)
        } == .invalidAppIdentifier)
        let renewal = try await Fixtures.verifier().verify(
            try Fixtures.text("mock_signed_data/renewalInfo"), as: JWSRenewalInfoDecodedPayload.self)
        #expect(renewal.environment == .sandbox)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func wrongBundleIdIsRejected() async throws {
        let token = try Fixtures.text("mock_signed_data/wrongBundleId")
        #expect(await verificationCode {
            try await Fixtures.verifier().verify(token, as: ResponseBodyV2DecodedPayload.self)
        } == .invalidAppIdentifier)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func xcodeTransactionDecodesOnlyForXcode() async throws {
        let token = try Fixtures.text("xcode/xcode-signed-transaction")
        let transaction = try await Fixtures.verifier(
            environment: .xcode, bundleId: "com.example.naturelab.backyardbirds.example"
        ).verify(token, as: JWSTransactionDecodedPayload.self)
        #expect(transaction.purchaseDate == 1_697_679_936_049)
        #expect(transaction.environment == .xcode)
        #expect(await verificationCode {
            try await Fixtures.verifier(
                environment: .production, bundleId: "com.example.naturelab.backyardbirds.example"
            ).verify(token, as: JWSTransactionDecodedPayload.self)
        } != nil)
    }
}
