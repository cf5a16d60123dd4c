import Entitlements
import Foundation
import HTTPServer
import JSONCoding
import Storage
import Testing

@testable import EntitledServer

/// `AnswerJSON` must write exactly what `JSONEncoder.entitledDefault` writes for a customer answer.
@Suite("Answer JSON")
struct AnswerJSONTests {
    static func grant(_ n: Int, status: EntitlementStatus, type: ProductType = .autoRenewable, odd: Bool) -> Grant {
        Grant(
            status: status, productId: odd ? "pro.\"yearly\"/\\ü" : "pro.monthly\(n)", productType: type,
            transactionId: "t\(n)", originalTransactionId: "o\(n)", ownership: odd ? .familyShared : .purchased,
            purchaseDate: 1_700_000_000_000 + Int64(n), originalPurchaseDate: odd ? nil : 1_600_000_000_123,
            expiresAt: type == .nonConsumable ? nil : 1_800_000_000_999, gracePeriodExpiresAt: odd ? 1_800_100_000_000 : nil,
            willRenew: odd ? nil : n % 2 == 0, renewsTo: odd ? "pro.lite" : nil, periodType: odd ? .trial : .normal,
            billingIssueDetectedAt: odd ? 1_799_000_000_000 : nil, unsubscribeDetectedAt: nil,
            priceIncrease: odd ? .pending : nil, environment: odd ? .sandbox : .production,
            subscriptionGroup: type == .autoRenewable ? "group\(n)" : nil)
    }

    static func bodies() -> [CustomerBody] {
        let policy = Policy(products: [:])
        let empty = evaluate(facts: [], policy: policy, now: 0)
        var bodies: [CustomerBody] = []
        for variant in 0..<4 {
            let odd = variant % 2 == 1
            var body = CustomerBody(
                customer: CustomerRecord(
                    id: Int64(variant), appUserId: odd ? "u\"1\\\n\t\u{1}\u{7f}/é😀" : "user-\(variant)",
                    appAccountToken: "0f4c6a8e-2a53-4d1f-9a5c-7a4d3b2e1f0\(variant)", createdAt: 0),
                state: empty, now: 1_800_000_000_000 + Int64(variant))
            if variant > 0 {
                body.entitlements = [
                    "pro10": EntitlementBody(EntitlementState(id: "pro10", grant: grant(1, status: .active, odd: odd))),
                    "pro2": EntitlementBody(EntitlementState(id: "pro2", grant: grant(2, status: .gracePeriod, odd: !odd))),
                    "Pro": EntitlementBody(EntitlementState(id: "Pro", grant: grant(3, status: .expired, odd: odd))),
                ]
                body.subscriptions = [
                    SubscriptionBody(
                        SubscriptionGroupState(
                            id: "group1", customerClass: .active, current: grant(1, status: .active, odd: odd),
                            pendingChange: odd ? .upgrade : nil, introOfferEligible: odd, promotionalOfferEligible: !odd,
                            winBackOfferIds: odd ? ["wb1", "wb/2"] : [], paidServiceDays: 400 * variant,
                            proceedsRate: odd ? 0.85 : 0.7)),
                    SubscriptionBody(
                        SubscriptionGroupState(
                            id: "group0", customerClass: .inactive, current: nil, pendingChange: nil, introOfferEligible: true,
                            promotionalOfferEligible: false, winBackOfferIds: [], paidServiceDays: 0, proceedsRate: 1)),
                ]
                body.nonSubscriptions = [
                    NonSubscriptionBody(
                        kind: .nonConsumable, id: "lifetime", active: true, expiresAt: nil, balance: nil,
                        transactionIds: ["t9"], grant: grant(9, status: .active, type: .nonConsumable, odd: odd)),
                    NonSubscriptionBody(
                        kind: .consumable, id: "coins", active: variant > 1, expiresAt: nil, balance: variant - 1,
                        transactionIds: ["t10", "t11"], grant: nil),
                    NonSubscriptionBody(
                        kind: .nonRenewing, id: "season", active: false, expiresAt: 1_790_000_000_000, balance: nil,
                        transactionIds: [], grant: grant(12, status: .expired, type: .nonRenewing, odd: !odd)),
                ]
                body.offers = OffersBody(
                    introductory: odd ? ["a/1", "b\"2"] : [],
                    winBack: [OfferReference(productId: "group1", offerId: "wb/1")],
                    promotional: odd ? [] : [OfferReference(productId: "p", offerId: "é"), OfferReference(productId: "p", offerId: "z")])
                body.preorder = PreorderState(
                    isPreordered: odd, preorderDate: odd ? 1_500_000_000_000 : nil, appOriginalPurchaseDate: 1_400_000_000_001)
                body.nextChangeAt = odd ? nil : 1_800_000_500_000
            }
            bodies.append(body)
        }
        return bodies
    }

    @Test("the answer writer matches JSONEncoder byte for byte", arguments: 0..<4)
    func matchesFoundation(index: Int) throws {
        let body = Self.bodies()[index]
        let foundation = Array(try JSONEncoder.entitledDefault.encode(body))
        #if os(Linux)
            #expect(String(decoding: AnswerJSON.encode(body), as: UTF8.self) == String(decoding: foundation, as: UTF8.self))
        #else
            // Darwin's Foundation may order `.sortedKeys` differently (numeric, case-insensitive);
            // the servers this targets run swift-foundation on Linux, which orders by bytes.
            let ours = try JSONSerialization.jsonObject(with: Data(AnswerJSON.encode(body))) as? NSDictionary
            let theirs = try JSONSerialization.jsonObject(with: Data(foundation)) as? NSDictionary
            #expect(ours != nil && ours == theirs)
        #endif
    }

    @Test("doubles are written as Foundation writes them", arguments: [0.7, 0.85, 1, 0, 1e16, 2.5e-7, -3, 123_456_789])
    func doubles(value: Double) throws {
        var bytes: [UInt8] = []
        JSONWriter.write(.array([.double(value)]), to: &bytes)
        #expect(bytes == Array(try JSONEncoder.entitledDefault.encode([value])))
    }
}
