@testable import AppStore
import AppStoreTesting
import EntitledCrypto
import Foundation
import Testing

/// App receipts: Apple's fixtures parse with the values Apple's libraries expect, receipts minted
/// by a test CA verify (and fail for each way they can be wrong), and bad input is a typed error.
@Suite struct ReceiptTests {
    static let fixtures = AppleFixturePaths.root.appendingPathComponent("app-store-server-library-python/tests/resources")
    static let ca = try! TestCertificateAuthority()
    static let bundleId = "com.example"
    static let created: Int64 = 1_761_962_975_000  // 2025-11-01, inside the test CA's validity

    static func fixture(_ name: String) throws -> String {
        try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8)
    }

    static func verifier(
        roots: [[UInt8]] = [ca.rootDER], bundleId: String = bundleId, environments: Set<AppStoreEnvironment> = [.production, .sandbox]
    ) throws -> ReceiptVerifier {
        try ReceiptVerifier(configuration: .init(trustedRoots: roots, bundleId: bundleId, environments: environments))
    }

    static let purchase = TestReceipt.Purchase(
        productId: "pro.monthly", transactionId: "1000000001", originalTransactionId: "1000000000",
        purchaseDate: created - 86_400_000, expiresDate: created + 29 * 86_400_000, webOrderLineItemId: 42)

    @Test(.enabled(if: AppleTestData.suitesRun)) func theXcodeReceiptWithATransactionParsesInTheXcodeEnvironment() throws {
        let text = try Self.fixture("xcode/xcode-app-receipt-with-transaction")
        let verifier = try Self.verifier(bundleId: "com.example.naturelab.backyardbirds.example", environments: [.xcode])
        let receipt = try verifier.verify(base64: text, now: 0)
        #expect(receipt.receiptType == "Xcode")
        #expect(receipt.environment == .xcode)
        #expect(receipt.creationDate == 1_697_679_940_000)
        #expect(receipt.expirationDate == 64_092_211_200_000)
        #expect(receipt.transactionIds == ["0"])
        let record = try #require(receipt.inAppPurchases.first)
        #expect(record.productId == "pass.premium")
        #expect(record.quantity == 1)
        #expect(record.purchaseDate == 1_697_679_936_000)
        #expect(record.expiresDate == 1_700_358_336_000)
        #expect(record.isInIntroOfferPeriod == true)
        #expect(record.originalTransactionId == nil)
        // As verifyReceipt would have answered it: the record is its own original.
        let entry = try #require(receipt.verifyReceiptResponse.receipt?.inApp?.first)
        #expect(entry.originalTransactionId == "0")
        #expect(receipt.verifyReceiptResponse.environment?.appStoreEnvironment == .xcode)
    }

    /// Each in-app record becomes a fact applied in the request: past the documented maximum the
    /// receipt is refused with its own code before any is applied.
    @Test func aReceiptWithTooManyInAppRecordsIsRefused() throws {
        func receipt(_ count: Int) throws -> String {
            let purchases = (0..<count).map { index in
                TestReceipt.Purchase(productId: "coins", transactionId: String(2_000_000_000 + index), purchaseDate: Self.created - 1000)
            }
            return try TestReceipt(receiptType: "Xcode", bundleId: Self.bundleId, creationDate: Self.created, purchases: purchases)
                .signed(by: Self.ca)
        }
        #expect(try ReceiptVerifier.decode(base64: try receipt(AppReceipt.maxInAppPurchases)).receipt.inAppPurchases.count == 1_000)
        let error = #expect(throws: VerificationError.self) { try ReceiptVerifier.decode(base64: try receipt(AppReceipt.maxInAppPurchases + 1)) }
        #expect(error?.code == .receiptTooLarge)
    }

    @Test(arguments: ["pro\u{0}monthly", "pro\u{1B}monthly", "pro\u{7F}"])
    func anIdentifierWithAControlCharacterIsRefused(productId: String) throws {
        let text = try TestReceipt(
            bundleId: Self.bundleId, creationDate: Self.created,
            purchases: [TestReceipt.Purchase(productId: productId, transactionId: "1", purchaseDate: Self.created - 1000)]
        ).signed(by: Self.ca)
        let error = #expect(throws: VerificationError.self) { try ReceiptVerifier.decode(base64: text) }
        #expect(error?.code == .invalidReceipt)
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func theEmptyXcodeReceiptHasNoTransactionId() throws {
        let verifier = try Self.verifier(bundleId: "com.example.naturelab.backyardbirds.example", environments: [.xcode])
        let receipt = try verifier.verify(base64: try Self.fixture("xcode/xcode-app-receipt-empty"), now: 0)
        #expect(receipt.transactionIds.isEmpty)
        #expect(receipt.bundleId == "com.example.naturelab.backyardbirds.example")
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func anXcodeReceiptIsRefusedWhereXcodeIsNotAccepted() throws {
        let verifier = try Self.verifier(bundleId: "com.example.naturelab.backyardbirds.example", environments: [.production])
        #expect(throws: VerificationError(.invalidEnvironment)) {
            try verifier.verify(base64: try Self.fixture("xcode/xcode-app-receipt-with-transaction"), now: 0)
        }
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func theLegacyTransactionReceiptGivesItsTransactionId() throws {
        let bytes = try #require(Base64.decode(try Self.fixture("mock_signed_data/legacyTransaction").filter { !$0.isWhitespace }))
        #expect(LegacyTransactionReceipt.looksLikePlist(bytes))
        #expect(LegacyTransactionReceipt.transactionId(decoded: bytes) == "33993399")
    }

    @Test func aMintedReceiptVerifiesWithItsRoot() throws {
        let text = try TestReceipt(bundleId: Self.bundleId, creationDate: Self.created, purchases: [Self.purchase]).signed(by: Self.ca)
        let receipt = try Self.verifier().verify(base64: text, now: 0)
        #expect(receipt.environment == .production)
        let record = try #require(receipt.inAppPurchases.first)
        #expect(record.transactionId == "1000000001")
        #expect(record.originalTransactionId == "1000000000")
        #expect(record.purchaseDate == Self.purchase.purchaseDate)
        #expect(record.expiresDate == Self.purchase.expiresDate)
        #expect(record.webOrderLineItemId == 42)
        #expect(record.cancellationDate == nil)
    }

    /// Each way a signed receipt can be wrong, and its code.
    @Test(arguments: ["otherRoot", "appleRoots", "wrongBundle", "tampered", "expiredAtCreation"])
    func aWrongReceiptIsRefusedWithItsCode(kind: String) throws {
        var receipt = TestReceipt(bundleId: Self.bundleId, creationDate: Self.created, purchases: [Self.purchase])
        var verifier = try Self.verifier()
        var expected = VerificationError.Code.receiptSignatureInvalid
        var text: String
        switch kind {
        case "otherRoot":
            text = try receipt.signed(by: try TestCertificateAuthority(options: .init(name: "Mallory")))
        case "appleRoots":
            verifier = try Self.verifier(roots: AppleRootCertificates.defaultReceiptRoots)
            text = try receipt.signed(by: Self.ca)
        case "wrongBundle":
            receipt.bundleId = "com.example.other"
            text = try receipt.signed(by: Self.ca)
            expected = .receiptWrongBundle
        case "tampered":
            // Same length, other product: the content no longer matches its signature.
            var der = try #require(Base64.decode(try receipt.signed(by: Self.ca)))
            let needle = Array("pro.monthly".utf8)
            let at = try #require((0...(der.count - needle.count)).first { Array(der[$0..<($0 + needle.count)]) == needle })
            der.replaceSubrange(at..<(at + needle.count), with: Array("pro.yearly!".utf8))
            text = Base64.encode(der)
        default:
            // The test CA's certificates are not yet valid in 2001.
            receipt.creationDate = 1_000_000_000_000
            text = try receipt.signed(by: Self.ca)
        }
        #expect(throws: VerificationError(expected)) { try verifier.verify(base64: text, now: 0) }
    }

    /// Inputs that are not receipts: each is `INVALID_RECEIPT`, none traps.
    @Test(arguments: [
        "", "   ", "!!!not base64!!!", Base64.encode(Array("hello".utf8)), Base64.encode([0x30, 0x80]),
        Base64.encode([0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]), Base64.encode([0x30, 0x85, 1, 1, 1, 1, 1]),
        Base64.encode([0x1F, 0x01, 0x00]), Base64.encode([UInt8](repeating: 0x30, count: 200) + [0x80]),
        Base64.encode(Array(repeating: [UInt8]([0x30, 0x80]), count: 100).flatMap { $0 }),
        Base64.encode([0x30, 0x03, 0x06, 0x01, 0x80]),
    ])
    func garbageIsAnInvalidReceipt(text: String) throws {
        #expect(throws: VerificationError(.invalidReceipt)) { try Self.verifier().verify(base64: text, now: 0) }
    }

    /// Every prefix and many one-byte corruptions of a real receipt: typed errors or a parse, never a trap.
    @Test(.enabled(if: AppleTestData.suitesRun)) func truncatedAndCorruptedReceiptsNeverTrap() throws {
        let der = try #require(Base64.decode(try Self.fixture("xcode/xcode-app-receipt-with-transaction").filter { !$0.isWhitespace }))
        let verifier = try Self.verifier(bundleId: "com.example.naturelab.backyardbirds.example", environments: [.xcode])
        var failures = 0
        for length in 0..<der.count {
            do { _ = try verifier.verify(base64: Base64.encode(der[..<length]), now: 0) } catch { failures += 1 }
        }
        #expect(failures == der.count)  // no prefix is a whole receipt
        for index in stride(from: 0, to: min(der.count, 500), by: 1) {
            var copy = der
            copy[index] ^= 0xFF
            _ = try? verifier.verify(base64: Base64.encode(copy), now: 0)
        }
    }

    @Test(arguments: [
        ("2023-10-19T01:45:36Z", Int64(1_697_679_936_000)), ("1970-01-01T00:00:00Z", 0),
        ("2023-10-19T01:45:36.5Z", 1_697_679_936_500), ("2023-10-19T01:45:36.123456Z", 1_697_679_936_123),
        ("4001-01-01T00:00:00Z", 64_092_211_200_000),
    ])
    func receiptDatesParse(text: String, milliseconds: Int64) throws {
        let value = TestReceipt.tlv(0x16, Array(text.utf8))
        #expect(try AppReceipt.date(value) == milliseconds)
    }

    @Test(arguments: ["2023-10-19 01:45:36Z", "2023-13-19T01:45:36Z", "2023-10-19T01:45:36", "2023-10-19T01:45:36.9999999999Z", "x"])
    func malformedReceiptDatesAreErrors(text: String) {
        #expect(throws: DERError.self) { try AppReceipt.date(TestReceipt.tlv(0x16, Array(text.utf8))) }
    }

    @Test(.enabled(if: AppleTestData.suitesRun)) func theBundledAppleRootMatchesItsPublishedFingerprint() throws {
        let file = AppleFixturePaths.root.appendingPathComponent("../certs/AppleIncRootCertificate.cer").standardized
        #expect(AppleRootCertificates.appleIncRootDER == Array(try Data(contentsOf: file)))
        #expect(Hex.encode(SHA256.hash(AppleRootCertificates.appleIncRootDER)) == "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024")
    }
}
