import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// The API with the real verifier and really signed payloads (a test CA): what Apple signs is
/// applied; anything forged, misaddressed, expired or tampered with is rejected, recorded, and
/// changes nothing.
@Suite struct SignedAPITests {
    static let ca = try! TestCertificateAuthority()
    let t0 = APIHarness.start
    static let day: Int64 = 86_400_000

    /// The harness's configuration trusting `ca`'s root (written to a file, as operators configure it).
    static func configuration(trusting ca: TestCertificateAuthority, environments: [String] = ["Production", "Sandbox"])
        throws -> Configuration
    {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-root-\(UUID()).der")
        try Data(ca.rootDER).write(to: file)
        var configuration = APIHarness.configuration()
        configuration.apps[0].appleRootCertificates = [file.path]
        configuration.apps[0].environments = environments
        return configuration
    }

    static func run(
        environments: [String] = ["Production", "Sandbox"], _ body: (APIHarness) async throws -> Void
    ) async throws {
        let configuration = try configuration(trusting: ca, environments: environments)
        let clock = VirtualClock(APIHarness.start)
        let verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: testFastPaths.codec)
        try await APIHarness.run(configuration: configuration, verifier: verifier, clock: clock, body)
    }

    func signedNotification(
        signer: JWSSigner = SignedAPITests.ca.signer, transactionSigner: JWSSigner? = nil, token: String,
        uuid: String = UUID().uuidString, environment: AppStoreEnvironment = .production,
        bundleId: String = APIHarness.bundleId, expires: Int64? = nil
    ) throws -> String {
        let transaction = Apple.transaction(
            purchase: t0 - Self.day, expires: expires ?? (t0 + 29 * Self.day), token: token, environment: environment,
            bundleId: bundleId)
        let renewal = JWSRenewalInfoDecodedPayload(
            originalTransactionId: "o1", autoRenewProductId: "pro.monthly", productId: "pro.monthly",
            autoRenewStatus: .on, signedDate: t0 - Self.day, environment: environment)
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed, subtype: .initialBuy, notificationUUID: uuid,
            data: NotificationData(
                environment: environment, appAppleId: 1234, bundleId: bundleId, bundleVersion: "1",
                signedTransactionInfo: try (transactionSigner ?? signer).sign(transaction),
                signedRenewalInfo: try signer.sign(renewal)),
            version: "2.0", signedDate: t0 - Self.day)
        return try signer.sign(payload)
    }

    @Test func aGenuineNotificationIsApplied() async throws {
        try await Self.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let reply = try await api.postV2(try signedNotification(token: token))
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "accepted")
            let customer = try await api.customer("u1")
            #expect(customer.entitlement("pro")?["status"] as? String == "active")
            #expect(customer.json["state"] as? String == "active")
        }
    }

    /// Each way a payload can be wrong, and the code the API must answer with.
    @Test(arguments: ["forged", "wrongBundle", "wrongEnvironment", "expiredChain", "badSignature", "forgedNested", "noOID"])
    func aBadNotificationIsRejectedAndChangesNothing(kind: String) async throws {
        try await Self.run(environments: ["Production"]) { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let expected: String
            let payload: String
            switch kind {
            case "forged":
                payload = try signedNotification(signer: try TestCertificateAuthority(options: .init(name: "Mallory")).signer, token: token)
                expected = "CHAIN_UNTRUSTED"
            case "wrongBundle":
                payload = try signedNotification(token: token, bundleId: "com.example.other")
                expected = "INVALID_APP_IDENTIFIER"
            case "wrongEnvironment":
                payload = try signedNotification(token: token, environment: .sandbox)
                expected = "INVALID_ENVIRONMENT"
            case "expiredChain":
                // A leaf that expired before the payload was signed.
                let expired = try TestCertificateAuthority(options: .init(leafValidity: 1_609_459_200...1_640_995_200))
                var configuration = try Self.configuration(trusting: expired, environments: ["Production"])
                configuration.apps[0].environments = ["Production"]
                payload = try signedNotification(signer: expired.signer, token: token)
                expected = "CERTIFICATE_EXPIRED"
                // Verify against a server trusting that CA.
                let clock = VirtualClock(APIHarness.start)
                let verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: testFastPaths.codec)
                try await APIHarness.run(configuration: configuration, verifier: verifier, clock: clock) { other in
                    let reply = try await other.postV2(payload)
                    #expect(reply.status == 400)
                    #expect(reply.code == expected)
                    #expect(try await other.ledger.factCount() == 0)
                    #expect(try await other.ledger.rejectedCodes() == [expected])
                }
                return
            case "badSignature":
                var parts = try signedNotification(token: token).split(separator: ".").map(String.init)
                // Change one character in the middle: still 64 bytes of base64url, a different signature.
                var signature = Array(parts[2])
                signature[20] = signature[20] == "A" ? "B" : "A"
                parts[2] = String(signature)
                payload = parts.joined(separator: ".")
                expected = "INVALID_SIGNATURE"
            case "forgedNested":
                // The envelope is genuine but the transaction inside is signed by someone else.
                payload = try signedNotification(
                    transactionSigner: try TestCertificateAuthority(options: .init(name: "Mallory")).signer, token: token)
                expected = "CHAIN_UNTRUSTED"
            default:
                let noOID = try TestCertificateAuthority(options: .init(leafHasAppleOID: false))
                let configuration = try Self.configuration(trusting: noOID, environments: ["Production"])
                let clock = VirtualClock(APIHarness.start)
                let verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: testFastPaths.codec)
                let signed = try signedNotification(signer: noOID.signer, token: token)
                try await APIHarness.run(configuration: configuration, verifier: verifier, clock: clock) { other in
                    let reply = try await other.postV2(signed)
                    #expect(reply.code == "MISSING_APPLE_OID")
                    #expect(try await other.ledger.factCount() == 0)
                }
                return
            }
            let reply = try await api.postV2(payload)
            #expect(reply.status == 400)
            #expect(reply.code == expected)
            #expect(try await api.ledger.factCount() == 0)
            #expect(try await api.ledger.rejectedCodes() == [expected])
            #expect(try await api.customer("u1").json["state"] as? String == "new")
        }
    }

    @Test func aClientPostedTransactionIsVerified() async throws {
        try await Self.run { api in
            let transaction = Apple.transaction(purchase: t0 - Self.day, expires: t0 + 29 * Self.day)
            let genuine = try Self.ca.signer.sign(transaction)
            let ok = try await api.send(
                "POST", "/v1/customers/u2/transactions", auth: APIHarness.writer,
                json: #"{"signedTransaction":"\#(genuine)"}"#)
            #expect(ok.status == 200)
            #expect(ok.entitlement("pro")?["active"] as? Bool == true)
            let forged = try TestCertificateAuthority(options: .init(name: "Mallory")).signer.sign(transaction)
            let rejected = try await api.send(
                "POST", "/v1/customers/u3/transactions", auth: APIHarness.writer,
                json: #"{"signedTransaction":"\#(forged)"}"#)
            #expect(rejected.status == 400)
            #expect(rejected.code == "CHAIN_UNTRUSTED")
        }
    }
}
