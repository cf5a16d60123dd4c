import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

/// The rejection budget is per (address, credential class): bad keys from one address must not
/// make that address's valid key, or Apple's valid notifications, answer 429.
@Suite struct RejectionBudgetClassTests {
    static let t0 = APIHarness.start
    static let capacity = 3

    /// A request that fails in one class, and which valid requests that class may refuse afterwards
    /// (only the expensive, pre-checked signature classes refuse their own kind).
    struct Row: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var bad: @Sendable (APIHarness) async throws -> Loopback.Reply
        var badStatus: Int
        var refusesAfterwards: Set<String> = []
    }

    static let token = CustomerTokenVerifier(secret: Array(APIHarness.tokenSecret.utf8), hmac: Digests())

    /// Valid requests of every class, each a new delivery (a fresh UUID or transaction id).
    static func valid(_ n: Int) -> [(name: String, send: @Sendable (APIHarness) async throws -> Loopback.Reply)] {
        let tid = "valid-\(n)"
        let transaction = FakeJWS.make(Apple.transaction(otid: tid, tid: tid, purchase: t0 - 1_000, expires: t0 + 86_400_000))
        let notification = Apple.notification(.test, uuid: "n-\(n)", signed: t0)
        var v1 = FactMapperTests.v1Body
        v1.bid = APIHarness.bundleId
        v1.password = "v1-shared-secret-value"
        v1.unifiedReceipt?.latestReceiptInfo?[0].transactionId = tid
        let v1Bytes = Array(try! AppStoreJSON.encode(v1))
        let bearer = "Bearer " + token.sign(subject: "u1", expiresAt: t0 / 1000 + 60)
        return [
            ("key", { api in try await api.customer("u1") }),
            ("token", { api in try await api.customer("u1", auth: bearer) }),
            ("v2", { api in try await api.postV2(notification) }),
            ("v1", { api in try await api.send("POST", "/v1/apple/notifications/v1", body: v1Bytes) }),
            ("posted", { api in
                try await api.send(
                    "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer,
                    json: #"{"signedTransaction":"\#(transaction)"}"#)
            }),
        ]
    }

    static let rows: [Row] = [
        Row(testDescription: "bad API keys", bad: { api in try await api.customer("u1", auth: "Bearer wrong-key-0123456789") }, badStatus: 401),
        Row(testDescription: "missing credentials", bad: { api in try await api.send("GET", "/v1/customers/u1") }, badStatus: 401),
        Row(
            testDescription: "bad customer tokens",
            bad: { api in
                let forged = CustomerTokenVerifier(secret: Array(String(repeating: "x", count: 40).utf8), hmac: Digests())
                return try await api.customer("u1", auth: "Bearer " + forged.sign(subject: "u1", expiresAt: t0 / 1000 + 60))
            }, badStatus: 401),
        Row(
            testDescription: "forged V2 notifications",
            bad: { api in try await api.postV2(Apple.notification(.test, signed: t0, signature: "forged")) }, badStatus: 400,
            refusesAfterwards: ["v2"]),
        Row(
            testDescription: "wrong V1 shared secrets",
            bad: { api in
                var body = FactMapperTests.v1Body
                body.bid = APIHarness.bundleId
                body.password = "not-the-secret"
                return try await api.send("POST", "/v1/apple/notifications/v1", body: Array(try AppStoreJSON.encode(body)))
            }, badStatus: 401),
        Row(
            testDescription: "forged posted transactions",
            bad: { api in
                let jws = FakeJWS.make(Apple.transaction(purchase: t0 - 1_000, expires: t0 + 86_400_000), signature: "forged")
                return try await api.send(
                    "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(jws)"}"#)
            }, badStatus: 400, refusesAfterwards: ["posted"]),
    ]

    @Test(arguments: rows)
    func failuresSpendOnlyTheirOwnClass(row: Row) async throws {
        try await APIHarness.run(budgetCapacity: Double(Self.capacity)) { api in
            // Before: every valid credential of the address is served.
            for (name, send) in Self.valid(0) {
                #expect(try await send(api).status == 200, "\(name) before")
            }
            for _ in 0..<Self.capacity {
                #expect(try await row.bad(api).status == row.badStatus)
            }
            let limited = try await row.bad(api)
            #expect(limited.status == 429)
            #expect(limited.code == "TOO_MANY_REJECTIONS")
            // After: the same address's valid requests of every other class still get 200.
            for (name, send) in Self.valid(1) {
                let status = try await send(api).status
                #expect(status == (row.refusesAfterwards.contains(name) ? 429 : 200), "\(name) after \(row.testDescription)")
            }
        }
    }

    /// One more bad key than the default capacity of 20, then a valid key and a
    /// valid notification from the same address.
    @Test func twentyOneBadKeysDoNotLockOutAValidKeyOrApple() async throws {
        try await APIHarness.run(budgetCapacity: 20) { api in
            var statuses: [Int] = []
            for _ in 0..<21 { statuses.append(try await api.customer("u1", auth: "Bearer wrong-key-0123456789").status) }
            #expect(statuses == Array(repeating: 401, count: 20) + [429])
            #expect(try await api.customer("u1").status == 200)
            #expect(try await api.postV2(Apple.notification(.test, signed: Self.t0)).status == 200)
        }
    }
}
