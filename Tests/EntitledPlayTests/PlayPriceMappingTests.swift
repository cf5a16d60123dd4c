@testable import EntitledServer
import Entitlements
import GooglePlay
import Foundation
import Testing

/// The price a Play subscription snapshot keeps, from `offerPhase` and `recurringPrice`
/// (docs/google-play.md, "Prices"), and Google's `Money` in milli-units, exactly or not at all.
@Suite struct PlayPriceMappingTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var lineItem: String
        var price: Int64?
        var currency: String?
        var periodType: PeriodType?
        var testDescription: String { name }
    }

    static let usd = #""recurringPrice": {"currencyCode": "USD", "units": "9", "nanos": 990000000}"#

    static let rows: [Row] = [
        Row(name: "free trial", lineItem: #""autoRenewingPlan": {\#(usd)}, "offerPhase": {"freeTrial": {}}, "offerDetails": {"basePlanId": "monthly", "offerId": "trial"}"#,
            price: 0, currency: "USD", periodType: .trial),
        Row(name: "introductory price", lineItem: #""autoRenewingPlan": {\#(usd)}, "offerPhase": {"introductoryPrice": {}}, "offerDetails": {"basePlanId": "monthly", "offerId": "intro"}"#,
            price: nil, currency: nil, periodType: .intro),
        Row(name: "base price", lineItem: #""autoRenewingPlan": {\#(usd)}, "offerPhase": {"basePrice": {}}, "offerDetails": {"basePlanId": "monthly"}"#,
            price: 9990, currency: "USD", periodType: .normal),
        Row(name: "base price after an offer", lineItem: #""autoRenewingPlan": {\#(usd)}, "offerPhase": {"basePrice": {}}, "offerDetails": {"basePlanId": "monthly", "offerId": "intro"}"#,
            price: 9990, currency: "USD", periodType: .normal),
        Row(name: "proration period", lineItem: #""autoRenewingPlan": {\#(usd)}, "offerPhase": {"prorationPeriod": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "no phase, no offer", lineItem: #""autoRenewingPlan": {\#(usd)}, "offerDetails": {"basePlanId": "monthly"}"#,
            price: 9990, currency: "USD", periodType: .normal),
        Row(name: "no phase, an offer", lineItem: #""autoRenewingPlan": {\#(usd)}, "offerDetails": {"basePlanId": "monthly", "offerId": "x"}"#,
            price: nil, currency: nil, periodType: nil),
        Row(name: "prepaid plan", lineItem: #""prepaidPlan": {}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "no recurring price", lineItem: #""autoRenewingPlan": {"autoRenewEnabled": true}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "whole units only", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": "JPY", "units": "1200"}}, "offerPhase": {"basePrice": {}}"#,
            price: 1_200_000, currency: "JPY", periodType: .normal),
        Row(name: "hostile: sub-milli nanos", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": "USD", "units": "9", "nanos": 999999}}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "hostile: units beyond Int64", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": "USD", "units": "99999999999999999999999"}}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "hostile: milli-units overflow", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": "USD", "units": "9223372036854775807"}}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "hostile: negative", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": "USD", "units": "-9", "nanos": -990000000}}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "hostile: mixed signs", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": "USD", "units": "9", "nanos": -990000000}}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "hostile: nanos out of range", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": "USD", "units": "9", "nanos": 5000000000}}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "hostile: wrong types", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": 7, "units": ["9"], "nanos": "x"}}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
        Row(name: "hostile: not a currency code", lineItem: #""autoRenewingPlan": {"recurringPrice": {"currencyCode": "usd$", "units": "9"}}, "offerPhase": {"basePrice": {}}"#,
            price: nil, currency: nil, periodType: .normal),
    ]

    @Test(arguments: rows)
    func subscriptionPeriodPrice(_ row: Row) throws {
        let json = #"""
            {"subscriptionState": "SUBSCRIPTION_STATE_ACTIVE", "startTime": "2026-01-15T09:00:00Z", "latestOrderId": "GPA.1",
             "lineItems": [{"productId": "premium", "expiryTime": "2026-02-15T09:00:00Z", \#(row.lineItem)}]}
            """#
        let purchase = try PlayJSON.decode(
            SubscriptionPurchaseV2.self, from: Array(json.utf8), maxBytes: SubscriptionPurchaseV2.maximumBytes, code: .malformedResponse)
        let fact = try PlaySubscriptionFact(purchase, purchaseToken: "t", packageName: "com.example", observedAt: 1)
        #expect(fact.price == row.price)
        #expect(fact.currency == row.currency)
        #expect(fact.periodType == row.periodType)
        let hostile = row.name.hasPrefix("hostile")
        #expect(purchase.lineItems.contains { PlayPeriodPrice($0).ignoredAmount } == hostile, "logged as ignored")
    }

    /// Snapshots stored before prices were kept decode without them (and grant as before).
    @Test func olderSnapshotsDecodeWithoutPrice() throws {
        let priced = PlaySubscriptionFact(
            purchaseToken: "t", packageName: "p", productId: "premium", state: .active, startTime: 1, expiryTime: 2, observedAt: 1,
            price: 9990, currency: "USD", periodType: .normal)
        var members = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(priced)) as? [String: Any])
        #expect(members.removeValue(forKey: "price") != nil && members.removeValue(forKey: "currency") != nil)
        #expect(members.removeValue(forKey: "periodType") != nil)
        let old = try JSONDecoder().decode(PlaySubscriptionFact.self, from: try JSONSerialization.data(withJSONObject: members))
        #expect(old.price == nil && old.currency == nil && old.periodType == nil)
        #expect(old.productId == "premium")
    }

    @Test(arguments: [
        (Money(currencyCode: "USD", units: "9", nanos: 990_000_000), Int64(9990)),
        (Money(currencyCode: "USD", units: "0", nanos: 500_000_000), 500),
        (Money(currencyCode: "USD", units: nil, nanos: 10_000_000), 10),
        (Money(currencyCode: "EUR", milliunits: 1_234_567), 1_234_567),
        (Money(currencyCode: "USD", units: "9223372036854775", nanos: 807_000_000), Int64.max),
    ] as [(Money, Int64)])
    func moneyInMilliunits(_ money: Money, _ expected: Int64) {
        #expect(money.milliunits == expected)
    }
}
