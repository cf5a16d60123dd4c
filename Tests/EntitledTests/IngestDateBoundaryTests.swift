import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Testing

/// A date outside 2000…2199 on any ingest path is answered 400
/// `INVALID_DATE`, recorded as rejected, and never becomes a fact.
@Suite struct IngestDateBoundaryTests {
    static let t0 = APIHarness.start
    static let day: Int64 = 86_400_000
    /// One millisecond before 2000-01-01 and exactly 2200-01-01: the first dates refused each side.
    static let tooEarly: Int64 = 946_684_799_999
    static let tooLate: Int64 = 7_258_118_400_000
    static let xcodeSignature = "AAAA"

    /// One ingest path and one field set out of range.
    struct Row: Sendable, CustomTestStringConvertible {
        var testDescription: String
        /// Runs on a harness whose app also accepts `Xcode`, with the real verifier when true.
        var xcode = false
        var send: @Sendable (APIHarness) async throws -> Loopback.Reply
    }

    static func transaction(_ change: (inout JWSTransactionDecodedPayload) -> Void = { _ in }, environment: AppStoreEnvironment = .production)
        -> JWSTransactionDecodedPayload
    {
        var t = Apple.transaction(purchase: t0 - day, expires: t0 + 30 * day, environment: environment)
        t.revocationDate = nil
        change(&t)
        return t
    }

    static func v2(
        transaction: JWSTransactionDecodedPayload? = transaction(), renewal: JWSRenewalInfoDecodedPayload? = nil,
        appTransaction: AppTransaction? = nil, signed: Int64 = t0, environment: AppStoreEnvironment = .production
    ) -> @Sendable (APIHarness) async throws -> Loopback.Reply {
        // The real verifier parses even unsigned Xcode tokens: their signature must be base64url.
        let signature = environment == .xcode ? xcodeSignature : "valid"
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .didRenew, notificationUUID: UUID().uuidString,
            data: NotificationData(
                environment: environment, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                signedTransactionInfo: transaction.map { FakeJWS.make($0, signature: signature) },
                signedRenewalInfo: renewal.map { FakeJWS.make($0, signature: signature) }),
            appData: appTransaction.map {
                AppData(appAppleId: 1234, bundleId: APIHarness.bundleId, environment: environment, signedAppTransactionInfo: FakeJWS.make($0, signature: signature))
            },
            version: "2.0", signedDate: signed)
        let jws = FakeJWS.make(payload, signature: signature)
        return { api in try await api.postV2(jws) }
    }

    static func renewal(_ change: (inout JWSRenewalInfoDecodedPayload) -> Void) -> JWSRenewalInfoDecodedPayload {
        var r = Apple.renewal(signed: t0)
        change(&r)
        return r
    }

    static func appTransaction(_ change: (inout AppTransaction) -> Void, environment: AppStoreEnvironment = .production)
        -> AppTransaction
    {
        var a = AppTransaction(
            receiptType: environment, appAppleId: 1234, bundleId: APIHarness.bundleId, receiptCreationDate: t0,
            originalPurchaseDate: t0 - day, preorderDate: nil)
        change(&a)
        return a
    }

    static func posted(_ field: String, _ jws: String) -> @Sendable (APIHarness) async throws -> Loopback.Reply {
        { api in
            try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer, json: #"{"\#(field)":"\#(jws)"}"#)
        }
    }

    static func v1(_ change: (inout ResponseBodyV1) -> Void) -> @Sendable (APIHarness) async throws -> Loopback.Reply {
        var body = FactMapperTests.v1Body
        body.bid = APIHarness.bundleId
        body.password = "v1-shared-secret-value"
        change(&body)
        let bytes = Array(try! AppStoreJSON.encode(body))
        return { api in try await api.send("POST", "/v1/apple/notifications/v1", body: bytes) }
    }

    static func entry(_ change: @escaping (inout LatestReceiptInfo) -> Void) -> (inout ResponseBodyV1) -> Void {
        { body in change(&body.unifiedReceipt!.latestReceiptInfo![0]) }
    }

    static let rows: [Row] = [
        // V2 notifications: the notification's own date and each date of its signed data.
        Row(testDescription: "V2 signedDate", send: v2(signed: tooLate)),
        Row(testDescription: "V2 signedDate Int64.min", send: v2(signed: .min)),
        Row(testDescription: "V2 transaction purchaseDate", send: v2(transaction: transaction { $0.purchaseDate = tooEarly })),
        Row(testDescription: "V2 transaction purchaseDate Int64.min", send: v2(transaction: transaction { $0.purchaseDate = .min })),
        Row(testDescription: "V2 transaction originalPurchaseDate", send: v2(transaction: transaction { $0.originalPurchaseDate = tooEarly })),
        Row(testDescription: "V2 transaction expiresDate", send: v2(transaction: transaction { $0.expiresDate = tooLate })),
        Row(testDescription: "V2 transaction expiresDate Int64.max", send: v2(transaction: transaction { $0.expiresDate = .max })),
        Row(testDescription: "V2 transaction signedDate", send: v2(transaction: transaction { $0.signedDate = tooLate })),
        Row(testDescription: "V2 transaction revocationDate", send: v2(transaction: transaction { $0.revocationDate = tooEarly })),
        Row(testDescription: "V2 renewal signedDate", send: v2(renewal: renewal { $0.signedDate = tooLate })),
        Row(testDescription: "V2 renewal gracePeriodExpiresDate", send: v2(renewal: renewal { $0.gracePeriodExpiresDate = tooLate })),
        Row(testDescription: "V2 renewal renewalDate", send: v2(renewal: renewal { $0.renewalDate = tooLate })),
        Row(testDescription: "V2 renewal recentSubscriptionStartDate", send: v2(renewal: renewal { $0.recentSubscriptionStartDate = tooEarly })),
        Row(testDescription: "V2 appTransaction originalPurchaseDate", send: v2(transaction: nil, appTransaction: appTransaction { $0.originalPurchaseDate = tooEarly })),
        Row(testDescription: "V2 appTransaction receiptCreationDate", send: v2(transaction: nil, appTransaction: appTransaction { $0.receiptCreationDate = tooLate })),
        // Transactions and app transactions a customer posts.
        Row(testDescription: "posted transaction purchaseDate", send: posted("signedTransaction", FakeJWS.make(transaction { $0.purchaseDate = tooEarly }))),
        Row(testDescription: "posted transaction expiresDate", send: posted("signedTransaction", FakeJWS.make(transaction { $0.expiresDate = tooLate }))),
        Row(testDescription: "posted transaction originalPurchaseDate", send: posted("signedTransaction", FakeJWS.make(transaction { $0.originalPurchaseDate = tooLate }))),
        Row(testDescription: "posted transaction signedDate", send: posted("signedTransaction", FakeJWS.make(transaction { $0.signedDate = tooEarly }))),
        Row(testDescription: "posted transaction revocationDate", send: posted("signedTransaction", FakeJWS.make(transaction { $0.revocationDate = tooLate }))),
        Row(testDescription: "posted appTransaction originalPurchaseDate", send: posted("signedAppTransaction", FakeJWS.make(appTransaction { $0.originalPurchaseDate = tooEarly }))),
        Row(testDescription: "posted appTransaction preorderDate", send: posted("signedAppTransaction", FakeJWS.make(appTransaction { $0.preorderDate = tooLate }))),
        Row(testDescription: "posted appTransaction receiptCreationDate", send: posted("signedAppTransaction", FakeJWS.make(appTransaction { $0.receiptCreationDate = tooLate }))),
        // V1 notifications with the shared secret: the receipt's dates.
        Row(testDescription: "V1 purchase_date_ms", send: v1(entry { $0.purchaseDateMs = String(tooEarly) })),
        Row(testDescription: "V1 purchase_date_ms Int64.min", send: v1(entry { $0.purchaseDateMs = String(Int64.min) })),
        Row(testDescription: "V1 purchase_date_ms far future", send: v1(entry { $0.purchaseDateMs = String(tooLate) })),
        Row(testDescription: "V1 original_purchase_date_ms", send: v1(entry { $0.originalPurchaseDateMs = String(tooEarly) })),
        Row(testDescription: "V1 expires_date_ms", send: v1(entry { $0.expiresDateMs = String(tooLate) })),
        Row(testDescription: "V1 expires_date_ms Int64.max", send: v1(entry { $0.expiresDateMs = String(Int64.max) })),
        Row(testDescription: "V1 cancellation_date_ms", send: v1(entry { $0.cancellationDateMs = String(tooEarly) })),
        Row(testDescription: "V1 auto_renew_status_change_date_ms", send: v1 { $0.autoRenewStatusChangeDateMs = String(tooLate) }),
        Row(testDescription: "V1 pending grace_period_expires_date_ms", send: v1 { $0.unifiedReceipt!.pendingRenewalInfo![0].gracePeriodExpiresDateMs = String(tooLate) }),
        // Unsigned Xcode payloads, through the real verifier, when the app lists Xcode.
        Row(testDescription: "Xcode V2 transaction expiresDate", xcode: true,
            send: v2(transaction: transaction({ $0.expiresDate = .max }, environment: .xcode), environment: .xcode)),
        Row(testDescription: "Xcode V2 transaction purchaseDate", xcode: true,
            send: v2(transaction: transaction({ $0.purchaseDate = .min }, environment: .xcode), environment: .xcode)),
        Row(testDescription: "Xcode posted transaction expiresDate", xcode: true,
            send: posted("signedTransaction", FakeJWS.make(transaction({ $0.expiresDate = tooLate }, environment: .xcode), signature: xcodeSignature))),
        Row(testDescription: "Xcode posted appTransaction originalPurchaseDate", xcode: true,
            send: posted("signedAppTransaction", FakeJWS.make(appTransaction({ $0.originalPurchaseDate = tooEarly }, environment: .xcode), signature: xcodeSignature))),
    ]

    static func run(xcode: Bool, _ body: (APIHarness) async throws -> Void) async throws {
        guard xcode else { return try await APIHarness.run(body) }
        var configuration = APIHarness.configuration()
        configuration.apps[0].environments.append("Xcode")
        let clock = VirtualClock(t0)
        let verifier = try AppStoreVerifier(apps: configuration.apps, clock: clock, codec: testFastPaths.codec)
        try await APIHarness.run(configuration: configuration, verifier: verifier, clock: clock, body)
    }

    @Test(arguments: rows)
    func outOfRangeDateIsRejectedAndNotStored(row: Row) async throws {
        try await Self.run(xcode: row.xcode) { api in
            let reply = try await row.send(api)
            #expect(reply.status == 400)
            #expect(reply.code == "INVALID_DATE")
            #expect(reply.headers["content-type"]?.hasPrefix("application/problem+json") == true)
            #expect(try await api.ledger.rejectedCodes() == ["INVALID_DATE"])
            #expect(try await api.ledger.factCount() == 0)
        }
    }

    /// The range's own ends are accepted, on a signed path and an unsigned one.
    @Test(arguments: [false, true])
    func theRangesEndsAreAccepted(xcode: Bool) async throws {
        try await Self.run(xcode: xcode) { api in
            let environment: AppStoreEnvironment = xcode ? .xcode : .production
            let t = Self.transaction(
                { $0.purchaseDate = Self.tooEarly + 1; $0.expiresDate = Self.tooLate - 1 },
                environment: environment)
            let reply = try await Self.v2(transaction: t, environment: environment)(api)
            #expect(reply.status == 200)
            #expect(try await api.ledger.rejectedCodes().isEmpty)
            #expect(try await api.ledger.factCount() == 2)
        }
    }
}
