import Entitlements
import Foundation
import Testing

@Suite("Canonicalization, proceeds and encoding")
struct SemanticsTests {
    @Test func staleVersionArrivingLateLosesToTheRefund() {
        // A retried DID_RENEW delivering the pre-refund version must not re-activate (mx-space/core#2813).
        let refundAt = T0 + 5 * day
        let refund = tx("t1", purchase: T0, expires: months(1), signed: refundAt, revoked: refundAt)
        let stale = tx("t1", purchase: T0, expires: months(1), signed: T0)
        #expect(state([refund, stale], at: refundAt + hour) == state([stale, refund], at: refundAt + hour))
        #expect(state([refund, stale], at: refundAt + hour).entitlement("pro")?.status == .refunded)
    }

    @Test func tiesOnSignedDateAreBrokenByContentNotByOrder() {
        let a = tx("t1", purchase: T0, expires: months(1), signed: T0 + day)
        let b = tx("t1", purchase: T0, expires: months(1) + day, signed: T0 + day)
        let ab = state([a, b], at: T0 + 2 * day)
        #expect(ab == state([b, a], at: T0 + 2 * day))
        #expect(ab.entitlement("pro")?.expiresAt == months(1) + day)
    }

    @Test func signedVersionBeatsV1EntryOfTheSameDate() {
        let v2 = tx("t1", purchase: T0, expires: months(1), signed: T0)
        let v1 = entry("t1", purchase: T0, expires: months(1), receipt: T0, cancelled: T0)
        #expect(state([v1, v2], at: T0 + hour).entitlement("pro")?.status == .active)
        #expect(state([v2, v1], at: T0 + hour).entitlement("pro")?.status == .active)
    }

    @Test func familySharedRefundIsARevocation() {
        let facts = [
            tx("f1", otid: "fam", purchase: T0, expires: months(1), signed: T0 + day, ownership: .familyShared,
               revoked: T0 + day)
        ]
        #expect(state(facts, at: T0 + 2 * day).entitlement("pro")?.status == .revoked)
    }

    @Test func bestSourceAcrossIdsPrefersActiveThenLatestExpiry() {
        let facts = [
            tx("a1", otid: "a", purchase: T0, expires: months(1)),
            tx("b1", otid: "b", product: "magazine", purchase: T0, expires: months(3)),
            tx("c1", otid: "c", product: "yearly", purchase: T0 - 400 * day, expires: T0 - 35 * day),
        ]
        let s = state(facts, at: T0 + day)
        #expect(s.entitlement("pro")?.status == .active)
        #expect(s.entitlement("pro")?.originalTransactionId == "a")
        // Two subscriptions in one group: the active one is current.
        #expect(s.group("premium")?.current?.originalTransactionId == "a")
    }

    @Test func proceedsRateRisesAfterAYearOfPaidService() {
        var facts: [Fact] = []
        for k in 0..<14 {
            facts.append(tx("t\(k)", purchase: months(k), expires: months(k + 1), price: 10_000))
        }
        let s = state(facts, at: months(13) + day)
        let rates = Dictionary(uniqueKeysWithValues: s.proceeds.map { ($0.transactionId, $0.rate) })
        #expect(rates["t0"] == 0.70)
        #expect(rates["t11"] == 0.70)  // 334 paid days before it
        #expect(rates["t12"] == 0.85)  // 365 paid days before it
        #expect(s.proceeds.first { $0.transactionId == "t12" }?.proceeds == 8_500)
        #expect(s.proceeds.first { $0.transactionId == "t0" }?.proceeds == 7_000)
        // Every period bought counts whole: through t13's end, what the next renewal counts.
        #expect(s.group("premium")?.paidServiceDays == Int((months(14) - months(0)) / day))
        // The count moves with facts only: the same a day before the period ends.
        #expect(state(facts, at: months(14) - day).group("premium")?.paidServiceDays == s.group("premium")?.paidServiceDays)
        #expect(s.group("premium")?.proceedsRate == 0.85)

        let small = evaluate(
            facts: facts, policy: Policy(products: policy.products, smallBusiness: true), now: months(13) + day)
        #expect(small.proceeds.allSatisfy { $0.rate == 0.85 })
    }

    @Test func lapsesUpToSixtyDaysKeepPaidDaysLongerOnesReset() {
        // Six months (181 days), a 50-day lapse, seven more months (212 days), then the next renewal.
        var facts: [Fact] = []
        for k in 0..<6 { facts.append(tx("a\(k)", purchase: months(k), expires: months(k + 1))) }
        let restart = months(6) + 50 * day
        for k in 0..<8 {
            facts.append(tx("b\(k)", purchase: months(k, after: restart), expires: months(k + 1, after: restart)))
        }
        let kept = state(facts, at: months(8, after: restart) + day)
        #expect(kept.proceeds.first { $0.transactionId == "b7" }?.rate == 0.85)
        #expect((kept.group("premium")?.paidServiceDays ?? 0) > 365)

        // The same with a 70-day lapse: the count restarts.
        var reset: [Fact] = []
        for k in 0..<6 { reset.append(tx("a\(k)", purchase: months(k), expires: months(k + 1))) }
        let later = months(6) + 70 * day
        for k in 0..<8 {
            reset.append(tx("b\(k)", purchase: months(k, after: later), expires: months(k + 1, after: later)))
        }
        let s = state(reset, at: months(8, after: later) + day)
        #expect(s.proceeds.first { $0.transactionId == "b7" }?.rate == 0.70)
        #expect((s.group("premium")?.paidServiceDays ?? 0) < 250)

        // And a customer gone for more than 60 days has nothing kept — an instant the state announces.
        let gone = state(reset, at: months(8, after: later) + day)
        #expect(gone.nextStatusChangeAt == months(8, after: later) + 60 * day + 1)
        #expect(state(reset, at: months(8, after: later) + 60 * day).group("premium")?.paidServiceDays ?? 0 > 0)
        #expect(state(reset, at: months(8, after: later) + 60 * day + 1).group("premium")?.paidServiceDays == 0)
    }

    @Test func freeTrialsAndFamilySharesAreNotPaidService() {
        let facts = [
            tx("t1", purchase: T0, expires: T0 + 14 * day, offer: .introductory, discount: .freeTrial, price: 0),
            tx("f1", otid: "fam", product: "magazine", purchase: T0, expires: months(1), ownership: .familyShared),
        ]
        let s = state(facts, at: T0 + 20 * day)
        #expect(s.group("premium")?.paidServiceDays == 0)
        #expect(s.group("reading")?.paidServiceDays == 0)
        #expect(!s.proceeds.contains { $0.transactionId == "f1" })
    }

    @Test func codableRoundTrip() throws {
        for lifecycle in Lifecycles.all {
            let s = state(lifecycle.allFacts, at: lifecycle.checkpoints.last!)
            let data = try JSONEncoder().encode(s)
            #expect(try JSONDecoder().decode(CustomerState.self, from: data) == s)
            let facts = try JSONDecoder().decode([Fact].self, from: JSONEncoder().encode(lifecycle.allFacts))
            #expect(facts == lifecycle.allFacts)
        }
        let policyData = try JSONEncoder().encode(policy)
        #expect(try JSONDecoder().decode(Policy.self, from: policyData) == policy)
        #expect(String(decoding: try JSONEncoder().encode(ISODuration(months: 1)), as: UTF8.self) == "\"P1M\"")
        #expect(String(decoding: try JSONEncoder().encode(NotificationType.didRenew), as: UTF8.self) == "\"DID_RENEW\"")
        let encoded = String(decoding: try JSONEncoder().encode(note(.test, at: 5, otid: nil)), as: UTF8.self)
        #expect(encoded.contains("\"kind\":\"notification\""))
        #expect(encoded.contains("\"type\":\"TEST\""))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Fact.self, from: Data(#"{"kind":"mystery","fact":{}}"#.utf8))
        }
    }

    @Test func anEarlierPeriodsBillingIssueDoesNotCarryOver() {
        // Failure with grace at e1, recovered at r (its renewal info lost), then that period ends.
        let e1 = months(1)
        let r = e1 + 3 * day
        let facts = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
            renewal(retry: true, grace: e1 + 16 * day, signed: e1), note(.didFailToRenew, .gracePeriod, at: e1),
            tx("t2", purchase: r, expires: r + 5 * day),
        ]
        let s = state(facts, at: r + 6 * day)
        #expect(s.entitlement("pro")?.status == .expired)
        #expect(s.entitlement("pro")?.gracePeriodExpiresAt == nil)
    }

    @Test func purchasedBeatsFamilySharedForTheSameNonConsumable() {
        let facts = [
            tx("n1", otid: "n1", product: "lifetime", purchase: T0, type: .nonConsumable),
            tx("n2", otid: "n2", product: "lifetime", purchase: T0 + day, type: .nonConsumable, ownership: .familyShared),
        ]
        let s = state(facts, at: T0 + 2 * day)
        #expect(s.nonConsumable("lifetime")?.grant.ownership == .purchased)
        #expect(s.entitlement("pro")?.transactionId == "n1")
    }

    @Test func nextStatusChangeIsWhenTimeAloneChangesTheAnswer() {
        let e1 = months(1)
        let grace = e1 + 16 * day
        var facts = [tx("t1", purchase: T0, expires: e1), renewal(signed: T0)]
        #expect(state(facts, at: T0 + day).nextStatusChangeAt == e1)
        facts.append(renewal(retry: true, grace: grace, signed: e1))
        #expect(state(facts, at: e1 + day).nextStatusChangeAt == grace)
        #expect(state(facts, at: grace + day).nextStatusChangeAt == e1 + 60 * day)
        #expect(state(facts, at: e1 + 61 * day).nextStatusChangeAt == nil)
        // The answer just before and at the boundary differs; between boundaries it does not.
        let s = state(facts, at: e1 + day)
        #expect(state(facts, at: grace - 1).entitlements == s.entitlements)
        #expect(state(facts, at: grace).entitlements != s.entitlements)
    }

    @Test func manySubscriptionsAndProductsStayOrderIndependent() {
        // More than 16 distinct ids takes the interners from linear scans to dictionaries.
        var facts: [Fact] = []
        for k in 0..<40 {
            facts.append(tx("c\(k)", otid: "c\(k)", product: "coins.\(k % 20)", purchase: T0 + Int64(k) * hour,
                            type: .consumable, quantity: k))
            facts.append(tx("s\(k)", otid: "s\(k)", product: k % 2 == 0 ? "monthly" : "magazine",
                            purchase: T0 + Int64(k) * day, expires: months(1, after: T0 + Int64(k) * day)))
            facts.append(renewal(otid: "s\(k)", product: k % 2 == 0 ? "monthly" : "magazine", autoRenew: k % 3 == 0,
                                 signed: T0 + Int64(k) * day))
            facts.append(note(.didRenew, at: T0 + Int64(k) * day, otid: "s\(k)", txn: "s\(k)"))
        }
        let now = T0 + 45 * day
        let expected = state(facts, at: now)
        #expect(expected.consumables.count == 20)
        #expect(expected.group("premium")?.current?.originalTransactionId == "s38")
        var rng = SplitMix64(seed: 7)
        for _ in 0..<50 {
            var shuffled = facts + facts.prefix(Int.random(in: 0...facts.count, using: &rng))
            shuffled.shuffle(using: &rng)
            #expect(state(shuffled, at: now) == expected)
        }
    }

    @Test func unknownProductsCountAsHistoryButGrantNothing() {
        let s = state([tx("x1", otid: "x1", product: "mystery", purchase: T0, type: .nonConsumable)], at: T0 + hour)
        #expect(s.entitlements.isEmpty)
        #expect(s.nonConsumable("mystery")?.owned == true)
        #expect(s.customerClass == .active)
    }
}
