import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledCrypto
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// `POST /v1/customers/{appUserId}/receipts` with the real verifier: a receipt signed by a
/// configured receipt root is applied like a posted transaction; every bad receipt is a typed
/// 400, recorded as rejected (by digest), and changes nothing.
@Suite struct ReceiptAPITests {
    static let ca = try! TestCertificateAuthority()
    static let day: Int64 = 86_400_000
    static let t0 = APIHarness.start
    static let xcodeBundle = "com.example.naturelab.backyardbirds.example"

    /// The harness's configuration trusting `ca` for receipts (a file, as operators configure it),
    /// plus an Xcode app for Apple's Xcode receipt fixtures.
    static func configuration() throws -> Configuration {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-receipt-root-\(UUID()).der")
        try Data(ca.rootDER).write(to: file)
        var configuration = APIHarness.configuration()
        configuration.apps[0].receiptRootCertificates = [file.path]
        configuration.apps.append(App(bundleId: xcodeBundle, environments: ["Xcode"]))
        return configuration
    }

    static func run(_ body: (APIHarness) async throws -> Void) async throws {
        let configuration = try configuration()
        let clock = VirtualClock(APIHarness.start)
        let verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: testFastPaths.codec)
        try await APIHarness.run(configuration: configuration, verifier: verifier, clock: clock, body)
    }

    static func receipt(bundleId: String = APIHarness.bundleId) -> TestReceipt {
        TestReceipt(
            bundleId: bundleId, creationDate: t0 - 3_600_000,
            purchases: [
                .init(
                    productId: "pro.monthly", transactionId: "2000000002", originalTransactionId: "2000000001",
                    purchaseDate: t0 - day, expiresDate: t0 + 29 * day, webOrderLineItemId: 7)
            ])
    }

    static func post(_ api: APIHarness, _ receiptData: String, user: String = "u1") async throws -> Loopback.Reply {
        try await api.send(
            "POST", "/v1/customers/\(user)/receipts", auth: APIHarness.writer, json: #"{"receiptData":"\#(receiptData)"}"#)
    }

    @Test func aSignedReceiptIsAppliedLikeAPostedTransaction() async throws {
        try await Self.run { api in
            let text = try Self.receipt().signed(by: Self.ca)
            let reply = try await Self.post(api, text)
            #expect(reply.status == 200)
            #expect(reply.entitlement("pro")?["status"] as? String == "active")
            #expect(reply.entitlement("pro")?["originalTransactionId"] as? String == "2000000001")
            #expect(try await api.ledger.factCount() == 1)
            // The same receipt again changes nothing (its facts are already stored).
            #expect(try await Self.post(api, text).status == 200)
            #expect(try await api.ledger.factCount() == 1)
            // Stored by digest: the receipt itself is not kept.
            #expect(try await api.ledger.bodies(containing: "receiptSHA256") > 0)
            #expect(try await api.ledger.bodies(containing: String(text.prefix(40))) == 0)
        }
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func applesXcodeReceiptIsAppliedForAnAppThatAcceptsXcode() async throws {
        try await Self.run { api in
            let fixture = try #require(AppleFixtures.folder).deletingLastPathComponent().appendingPathComponent("xcode/xcode-app-receipt-with-transaction")
            let text = try String(contentsOf: fixture, encoding: .utf8).filter { !$0.isWhitespace }
            let reply = try await Self.post(api, text)
            #expect(reply.status == 200)
            #expect(try await api.ledger.factCount() == 1)
        }
    }

    /// Each kind of bad receipt, its code, and that nothing is applied.
    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [
        ("garbage", "INVALID_RECEIPT"), ("notBase64", "INVALID_RECEIPT"), ("otherCA", "RECEIPT_SIGNATURE_INVALID"),
        ("otherApp", "RECEIPT_WRONG_BUNDLE"), ("legacyWithoutServerAPI", "INVALID_RECEIPT"),
    ])
    func aBadReceiptIsATypedRejection(kind: String, code: String) async throws {
        try await Self.run { api in
            let text: String
            switch kind {
            case "garbage": text = Base64.encode(Array("not a receipt".utf8))
            case "notBase64": text = "%%%"
            case "otherCA": text = try Self.receipt().signed(by: try TestCertificateAuthority(options: .init(name: "Mallory")))
            case "otherApp": text = try Self.receipt(bundleId: "com.example.unknown").signed(by: Self.ca)
            default:
                let fixture = try #require(AppleFixtures.folder).deletingLastPathComponent().appendingPathComponent("mock_signed_data/legacyTransaction")
                text = try String(contentsOf: fixture, encoding: .utf8).filter { !$0.isWhitespace }
            }
            let reply = try await Self.post(api, text)
            #expect(reply.status == 400)
            #expect(reply.json["code"] as? String == code)
            #expect(try await api.ledger.factCount() == 0)
            #expect(try await api.ledger.rejectedCodes() == [code])
        }
    }

    @Test func aReceiptNeedsWriteScope() async throws {
        try await Self.run { api in
            let reply = try await api.send(
                "POST", "/v1/customers/u1/receipts", auth: APIHarness.reader, json: #"{"receiptData":"AAAA"}"#)
            #expect(reply.status == 403)
        }
    }
}
