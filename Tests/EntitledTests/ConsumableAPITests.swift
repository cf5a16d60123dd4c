import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// `POST /v1/customers/{appUserId}/consumables/{productId}/spend`, the consumable balance in the
/// customer answer and the history, and `GET /v1/customers/{appUserId}/products`.
@Suite struct ConsumableAPITests {
    let t0 = APIHarness.start

    /// The harness's configuration with a consumable `coins`.
    static func configuration() -> Configuration {
        var configuration = APIHarness.configuration()
        configuration.apps[0].products.append(Product(productId: "coins", type: .consumable))
        return configuration
    }

    /// A consumable purchase of `quantity` coins for the customer holding `token`.
    static func coins(_ tid: String, quantity: Int32, token: String, at time: Int64, revoked: Int64? = nil) -> JWSTransactionDecodedPayload {
        var t = Apple.transaction(otid: tid, tid: tid, product: "coins", purchase: time, expires: nil, token: token, type: .consumable)
        t.quantity = quantity
        t.signedDate = revoked ?? time
        t.revocationDate = revoked
        t.revocationReason = revoked == nil ? nil : .other
        return t
    }

    static func spend(_ api: APIHarness, _ body: String, user: String = "u1", product: String = "coins", auth: String = APIHarness.writer)
        async throws -> Loopback.Reply
    {
        try await api.send("POST", "/v1/customers/\(user)/consumables/\(product)/spend", auth: auth, json: body)
    }

    /// u1 with 5 coins (t1) and 3 coins (t2) bought; returns u1's token.
    static func buyCoins(_ api: APIHarness, at t0: Int64) async throws -> String {
        let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
        for (tid, quantity) in [("t1", Int32(5)), ("t2", 3)] {
            let reply = try await api.postV2(
                Apple.notification(.oneTimeCharge, signed: t0, transaction: coins(tid, quantity: quantity, token: token, at: t0 - 1000)))
            #expect(reply.status == 200)
        }
        return token
    }

    static func coinsEntry(_ reply: Loopback.Reply) -> [String: Any]? {
        (reply.json["nonSubscriptions"] as? [[String: Any]])?.first { $0["id"] as? String == "coins" }
    }

    @Test func spendingLowersTheBalanceOnceAndTheAnswerAndHistoryShowIt() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            _ = try await Self.buyCoins(api, at: t0)
            let first = try await Self.spend(api, #"{"quantity": 2, "idempotencyKey": "order-1"}"#)
            #expect(first.status == 200)
            #expect(first.json["balance"] as? Int == 6)
            #expect(first.json["quantity"] as? Int == 2)
            #expect(first.json["environment"] as? String == "Production")
            // The same key again: the same answer, nothing spent again (even later).
            api.clock.advance(by: 5_000)
            let again = try await Self.spend(api, #"{"quantity": 2, "idempotencyKey": "order-1"}"#)
            #expect(again.status == 200)
            #expect(again.body == first.body)

            let answer = try await api.customer("u1")
            let entry = try #require(Self.coinsEntry(answer))
            #expect(entry["balance"] as? Int == 6)
            #expect(entry["purchased"] as? Int == 8)
            #expect(entry["refunded"] as? Int == 0)
            #expect(entry["spent"] as? Int == 2)
            #expect(entry["active"] as? Bool == true)

            let history = try await api.send("GET", "/v1/customers/u1/history", auth: APIHarness.reader)
            let spends = (history.json["items"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "consumableSpend" }
            #expect(spends.count == 1)
            #expect(spends.first?["quantity"] as? Int == 2)
            #expect(spends.first?["idempotencyKey"] as? String == "order-1")
            #expect(spends.first?["productId"] as? String == "coins")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM facts WHERE kind = 'consumableSpend'") == 1)
            // The stored answer is what the ledger replays to: a rebuild finds nothing to change.
            let report = try await api.ledger.store.rebuild(projector: api.ledger.ledger.projector, now: api.clock.nowMilliseconds())
            #expect(report.differences == 0)
        }
    }

    @Test func aReusedKeyAndAnInsufficientBalanceAreConflicts() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            _ = try await Self.buyCoins(api, at: t0)
            #expect(try await Self.spend(api, #"{"quantity": 7, "idempotencyKey": "k1"}"#).status == 200)
            let reused = try await Self.spend(api, #"{"quantity": 1, "idempotencyKey": "k1"}"#)
            #expect(reused.status == 422)
            #expect(reused.code == "IDEMPOTENCY_KEY_REUSED")
            let tooMany = try await Self.spend(api, #"{"quantity": 2, "idempotencyKey": "k2"}"#)
            #expect(tooMany.status == 409)
            #expect(tooMany.code == "INSUFFICIENT_BALANCE")
            // The last unit is still there.
            let last = try await Self.spend(api, #"{"quantity": 1, "idempotencyKey": "k2"}"#)
            #expect(last.json["balance"] as? Int == 0)
            #expect(try await Self.spend(api, #"{"quantity": 1, "idempotencyKey": "k3"}"#).code == "INSUFFICIENT_BALANCE")
            #expect(Self.coinsEntry(try await api.customer("u1"))?["active"] as? Bool == false)
        }
    }

    @Test func aRefundOfAConsumablePurchaseReducesTheBalance() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let token = try await Self.buyCoins(api, at: t0)
            #expect(try await Self.spend(api, #"{"quantity": 2, "idempotencyKey": "k1"}"#).status == 200)
            let refund = Apple.notification(
                .refund, signed: t0 + 2000, transaction: Self.coins("t2", quantity: 3, token: token, at: t0 - 1000, revoked: t0 + 2000))
            #expect(try await api.postV2(refund).status == 200)
            let entry = try #require(Self.coinsEntry(try await api.customer("u1")))
            #expect(entry["purchased"] as? Int == 8)
            #expect(entry["refunded"] as? Int == 3)
            #expect(entry["spent"] as? Int == 2)
            #expect(entry["balance"] as? Int == 3)
            #expect(try await Self.spend(api, #"{"quantity": 4, "idempotencyKey": "k2"}"#).code == "INSUFFICIENT_BALANCE")
        }
    }

    @Test(
        "bad spend requests are refused before anything is spent",
        arguments: [
            ("u1", "coins", #"{"quantity": 0, "idempotencyKey": "k"}"#, APIHarness.writer, 400, "INVALID_REQUEST"),
            ("u1", "coins", #"{"quantity": -3, "idempotencyKey": "k"}"#, APIHarness.writer, 400, "INVALID_REQUEST"),
            ("u1", "coins", #"{"quantity": 1000001, "idempotencyKey": "k"}"#, APIHarness.writer, 400, "INVALID_REQUEST"),
            ("u1", "coins", #"{"quantity": 1, "idempotencyKey": ""}"#, APIHarness.writer, 400, "INVALID_REQUEST"),
            ("u1", "coins", #"{"quantity": 1, "idempotencyKey": "a\nb"}"#, APIHarness.writer, 400, "INVALID_REQUEST"),
            ("u1", "coins", "{\"quantity\": 1, \"idempotencyKey\": \"\(String(repeating: "k", count: 129))\"}", APIHarness.writer, 400,
             "INVALID_REQUEST"),
            ("u1", "coins", #"{"quantity": 1}"#, APIHarness.writer, 400, "INVALID_JSON"),
            ("u1", "coins", #"{"quantity": 1, "idempotencyKey": "k"}"#, APIHarness.reader, 403, "FORBIDDEN"),
            ("u1", "lifetime", #"{"quantity": 1, "idempotencyKey": "k"}"#, APIHarness.writer, 404, "PRODUCT_NOT_FOUND"),
            ("nobody", "coins", #"{"quantity": 1, "idempotencyKey": "k"}"#, APIHarness.writer, 404, "CUSTOMER_NOT_FOUND"),
        ] as [(String, String, String, String, Int, String)])
    func badRequests(user: String, product: String, body: String, auth: String, status: Int, code: String) async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            _ = try await Self.buyCoins(api, at: t0)
            let reply = try await Self.spend(api, body, user: user, product: product, auth: auth)
            #expect(reply.status == status)
            #expect(reply.code == code)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM facts WHERE kind = 'consumableSpend'") == 0)
            #expect(Self.coinsEntry(try await api.customer("u1"))?["balance"] as? Int == 8)
        }
    }

    // MARK: - Storefront

    @Test func theAnswerCarriesTheLatestTransactionsStorefront() async throws {
        try await APIHarness.run { api in
            #expect(try await api.customer("u1").json["storefront"] is NSNull)
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            var older = Apple.transaction(otid: "o1", tid: "t1", purchase: t0 - 10_000, expires: t0 + 86_400_000, token: token)
            older.storefront = "USA"
            older.storefrontId = "143441"
            var newer = Apple.transaction(otid: "o2", tid: "t2", product: "lifetime", purchase: t0 - 5_000, expires: nil, token: token,
                                          type: .nonConsumable)
            newer.storefront = "FRA"
            newer.storefrontId = "143442"
            // The newer purchase first: the storefront is the latest purchase's, whatever the arrival order.
            #expect(try await api.postV2(Apple.notification(.oneTimeCharge, signed: t0, transaction: newer)).status == 200)
            #expect(try await api.postV2(Apple.notification(.subscribed, .initialBuy, signed: t0, transaction: older)).status == 200)
            let answer = try await api.customer("u1")
            #expect(answer.json["storefront"] as? String == "FRA")
            #expect(answer.json["storefrontId"] as? String == "143442")
        }
    }

    @Test(
        "products of the customer's storefront, and whether a purchase may continue",
        arguments: [
            (nil, "FRA", ["pro.monthly", "lifetime"], ["pro.yearly"]),
            ("USA", "USA", ["pro.monthly", "pro.yearly", "lifetime"], []),
        ] as [(String?, String, [String], [String])])
    func customerProducts(asked: String?, storefront: String, sold: [String], notSold: [String]) async throws {
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            var monthly = Apple.transaction(purchase: t0 - 1000, expires: t0 + 86_400_000, token: token)
            monthly.storefront = "FRA"
            monthly.storefrontId = "143442"
            #expect(try await api.postV2(Apple.notification(.subscribed, .initialBuy, signed: t0, transaction: monthly)).status == 200)
            let query = asked.map { "?storefront=\($0.lowercased())" } ?? ""
            let reply = try await api.send("GET", "/v1/customers/u1/products\(query)", auth: APIHarness.reader)
            #expect(reply.status == 200)
            #expect(reply.json["storefront"] as? String == storefront)
            #expect(reply.json["bundleId"] as? String == APIHarness.bundleId)
            let products = reply.json["products"] as? [[String: Any]] ?? []
            #expect(products.compactMap { $0["productId"] as? String } == sold)
            #expect(reply.json["notSold"] as? [String] == notSold)
            let decisions = Dictionary(uniqueKeysWithValues: products.map { ($0["productId"] as? String ?? "", $0) })
            // Subscribed to pro.monthly now: buying it again should not continue; the rest may.
            #expect(decisions["pro.monthly"]?["shouldContinueTransaction"] as? Bool == false)
            #expect(decisions["pro.monthly"]?["reason"] as? String == "alreadySubscribed")
            #expect(decisions["lifetime"]?["shouldContinueTransaction"] as? Bool == true)
            #expect(decisions["lifetime"]?["reason"] is NSNull)
        }
    }

    @Test func customerProductsRefusesABadStorefrontOrApp() async throws {
        try await APIHarness.run { api in
            let bad = try await api.send("GET", "/v1/customers/u1/products?storefront=FR", auth: APIHarness.reader)
            #expect(bad.status == 400)
            #expect(bad.code == "INVALID_STOREFRONT")
            let app = try await api.send("GET", "/v1/customers/u1/products?bundleId=com.other", auth: APIHarness.reader)
            #expect(app.status == 404)
            #expect(app.code == "APP_NOT_FOUND")
            let none = try await api.send("GET", "/v1/customers/u1/products")
            #expect(none.status == 401)
        }
    }
}
