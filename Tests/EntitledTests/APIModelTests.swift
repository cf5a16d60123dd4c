import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Storage
import Testing

@Suite struct APIModelTests {
    static let now: Int64 = 1_800_000_000_000
    let customer = CustomerRecord(id: 1, appUserId: "u1", appAccountToken: "0f4c6a8e-2a53-4d1f-9a5c-7a4d3b2e1f00", createdAt: 0)
    let policy = Policy(products: [
        "pro.monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "pro", level: 1),
        "lifetime": ProductPolicy(type: .nonConsumable, entitlements: ["extras"]),
        "coins": ProductPolicy(type: .consumable),
    ])

    func state(expiresIn: Int64?, grace: Int64? = nil) -> CustomerState {
        var facts: [Fact] = [
            .transaction(
                TransactionFact(
                    transactionId: "t1", originalTransactionId: "o1", productId: "pro.monthly", purchaseDate: Self.now - 1000,
                    expiresDate: expiresIn.map { Self.now + $0 }, productType: .autoRenewable, signedDate: Self.now - 1000)),
            .transaction(
                TransactionFact(
                    transactionId: "n1", originalTransactionId: "n1", productId: "lifetime", purchaseDate: Self.now - 5000,
                    productType: .nonConsumable, signedDate: Self.now - 5000)),
            .transaction(
                TransactionFact(
                    transactionId: "c1", originalTransactionId: "c1", productId: "coins", purchaseDate: Self.now - 5000,
                    quantity: 3, productType: .consumable, signedDate: Self.now - 5000)),
        ]
        if let grace {
            facts.append(
                .renewalInfo(
                    RenewalInfoFact(
                        originalTransactionId: "o1", productId: "pro.monthly", autoRenewStatus: true,
                        isInBillingRetryPeriod: true, gracePeriodExpiresDate: Self.now + grace, signedDate: Self.now - 500)))
        }
        return evaluate(facts: facts, policy: policy, now: Self.now)
    }

    func encode(_ value: some Encodable) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: JSONEncoder.entitledDefault.encode(value)) as! [String: Any]
    }

    @Test func customerBodyHasTheDocumentedShape() throws {
        let body = try encode(CustomerBody(customer: customer, state: state(expiresIn: 3_600_000), now: Self.now))
        #expect(
            Set(body.keys)
                == [
                    "appUserId", "aliases", "appAccountToken", "environment", "state", "serverTime", "entitlements",
                    "subscriptions", "nonSubscriptions", "offers", "preorder", "storefront", "storefrontId", "nextChangeAt",
                ])
        #expect(body["state"] as? String == "active")
        #expect(body["serverTime"] as? String == "2027-01-15T08:00:00.000Z")
        #expect(body["nextChangeAt"] as? String == "2027-01-15T09:00:00.000Z")
        let pro = try #require((body["entitlements"] as? [String: Any])?["pro"] as? [String: Any])
        #expect(
            Set(pro.keys)
                == [
                    "active", "status", "productId", "productType", "transactionId", "originalTransactionId", "ownership",
                    "purchaseDate", "originalPurchaseDate", "expiresAt", "gracePeriodExpiresAt", "willRenew", "renewsTo",
                    "periodType", "billingIssueDetectedAt", "unsubscribeDetectedAt", "priceIncrease", "subscriptionGroup",
                    "environment", "store", "source", "grantId",
                ])
        #expect(pro["willRenew"] is NSNull)
        #expect(pro["store"] as? String == "appStore")
        #expect(pro["source"] as? String == "purchase" && pro["grantId"] is NSNull)
        #expect((body["entitlements"] as? [String: Any])?["never"] == nil)
        let others = try #require(body["nonSubscriptions"] as? [[String: Any]])
        #expect(others.map { $0["kind"] as? String } == ["nonConsumable", "consumable"])
        #expect(others.last?["balance"] as? Int == 3)
        let offers = try #require(body["offers"] as? [String: Any])
        #expect(Set(offers.keys) == ["introductory", "winBack", "promotional"])
    }

    @Test(arguments: [
        (Int64?.some(3_600_000), 3600, 3600),  // expiry exactly at the TTL
        (.some(90_500), 3600, 90),  // seconds until expiry, rounded down
        (.some(90_500), 60, 60),  // TTL smaller
        (.some(400), 3600, 0),  // under a second left
        (nil, 3600, 3600),  // nothing scheduled (no subscription)
    ])
    func maxAgeIsBoundedByTTLAndNextChange(expiresIn: Int64?, ttl: Int, expected: Int) {
        let state = expiresIn == nil
            ? evaluate(facts: [], policy: policy, now: Self.now) : self.state(expiresIn: expiresIn)
        #expect(CustomerBody.maxAge(nextChangeAt: state.nextStatusChangeAt, now: Self.now, ttl: ttl) == expected)
    }

    @Test func maxAgeStopsAtTheGraceEnd() {
        let state = state(expiresIn: -1000, grace: 120_000)
        #expect(state.entitlement("pro")?.status == .gracePeriod)
        #expect(CustomerBody.maxAge(nextChangeAt: state.nextStatusChangeAt, now: Self.now, ttl: 3600) == 120)
    }

    @Test(arguments: [Int64?.some(90_500), .some(-1000), nil])
    func aRenderedAnswerIsTheEncodedBodyAtAnyServerTime(expiresIn: Int64?) throws {
        let state = expiresIn == nil ? evaluate(facts: [], policy: policy, now: Self.now) : self.state(expiresIn: expiresIn)
        let body = CustomerBody(customer: customer, state: state, now: 0)
        let rendered = try #require(RenderedCustomer(body: body, scope: "Production+Sandbox"))
        #expect(rendered.nextChangeAt == state.nextStatusChangeAt)
        #expect(rendered.scope == "Production+Sandbox")
        for serverTime in [Self.now, Self.now + 123, 0] {
            var timed = body
            timed.serverTime = serverTime
            #expect(rendered.body(serverTime: serverTime) == Array(try JSONEncoder.entitledDefault.encode(timed)))
        }
        // What the projection stores reads back as the same answer.
        #expect(RenderedCustomer(document: rendered.document) == rendered)
        #expect(rendered.holds(at: Self.now, scope: "Production+Sandbox"))
        // Answers for other environments (a filter, another configuration) are not this one.
        #expect(!rendered.holds(at: Self.now, scope: "Production"))
        #expect(!rendered.holds(at: Self.now, scope: "Sandbox+Production"))
        if let next = rendered.nextChangeAt { #expect(!rendered.holds(at: next, scope: "Production+Sandbox")) }
    }

    @Test(arguments: [
        "", "{}", "entitled-answer/7 Production -\n\n{}", "entitled-answer/7 Production - 5\n\n{}",
        "entitled-answer/7 Production soon 2\n\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
        "entitled-answer/7 Production - 1\n\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
        // No audience line.
        "entitled-answer/7 Production - 15\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
        // Other versions: version 1 answers were evaluated for one environment, not merged; version 2
        // answers list offers per group; version 3 answers have no storefront nor consumable counts;
        // version 4 answers have no aliases nor entitlement sources; version 5 answers have no store;
        // version 6 answers have no audience line.
        "entitled-answer/1 Production - 15\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
        "entitled-answer/2 Production - 15\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
        "entitled-answer/3 Production - 15\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
        "entitled-answer/4 Production - 15\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
        "entitled-answer/5 Production - 15\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
        "entitled-answer/6 Production - 15\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}",
    ])
    func documentsThatAreNotRenderedAnswersAreRefused(document: String) {
        #expect(RenderedCustomer(document: Array(document.utf8)) == nil)
    }

    @Test func aWellFormedDocumentIsRead() throws {
        let document = "entitled-answer/7 Production+Sandbox 42 15\n\n{\"serverTime\":\"1970-01-01T00:00:00.000Z\"}"
        let rendered = try #require(RenderedCustomer(document: Array(document.utf8)))
        #expect(rendered.scope == "Production+Sandbox")
        #expect(rendered.nextChangeAt == 42)
        #expect(rendered.audience() == nil)
        #expect(String(decoding: rendered.body(serverTime: 1000), as: UTF8.self) == #"{"serverTime":"1970-01-01T00:00:01.000Z"}"#)
    }

    @Test func historyItemAndCursor() throws {
        let item = try encode(
            HistoryItemBody(
                LedgerHistoryEntry(
                    id: "7", kind: .notification, type: "DID_RENEW", occurredAt: Self.now, receivedAt: Self.now + 5,
                    productId: "pro.monthly", price: 9990, currency: "USD")))
        #expect(item["occurredAt"] as? String == "2027-01-15T08:00:00.000Z")
        #expect(item["receivedAt"] as? String == "2027-01-15T08:00:00.005Z")
        #expect(item["subtype"] is NSNull)
        #expect(item["price"] as? Int == 9990)
        let cursor = HistoryCursor.wrap("offset:20")
        #expect(!cursor.contains("offset"))
        #expect(HistoryCursor.unwrap(cursor) == "offset:20")
        #expect(HistoryCursor.unwrap("offset:20") == nil)
    }

    @Test func catalogFiltersByStorefrontAndOrdersGroupsByLevel() throws {
        let app = App(
            bundleId: "b",
            products: [
                Product(productId: "m", type: .autoRenewable, subscriptionGroup: "g", level: 2, entitlements: ["pro"]),
                Product(productId: "y", type: .autoRenewable, subscriptionGroup: "g", level: 1, entitlements: ["pro"],
                        storefronts: ["USA"]),
                Product(productId: "x", type: .nonConsumable, storefronts: ["CHN"]),
            ])
        let usa = CatalogBody(app: app, storefront: "usa")
        #expect(usa.storefront == "USA")
        #expect(usa.products.map(\.productId) == ["m", "y"])
        #expect(usa.groups.map(\.id) == ["g"])
        #expect(usa.groups.first?.productIds == ["y", "m"])
        #expect(CatalogBody(app: app, storefront: nil).products.count == 3)
        let json = try encode(CatalogBody(app: app, storefront: nil))
        #expect(json["storefront"] is NSNull)
    }
}
