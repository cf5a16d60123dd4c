import Testing

@testable import Entitlements

// Promotional grants: an operator's grant gives an entitlement without a purchase and
// never changes what a purchase says.

private let token = "11111111-2222-4333-8444-555555555555"

private func promo(_ id: String = "g1", _ entitlement: String = "pro", from: Int64 = T0, until: Int64) -> Fact {
    .promotionalGrant(
        PromotionalGrantFact(grantId: id, entitlement: entitlement, grantedAt: from, expiresDate: until, appAccountToken: token))
}

private func end(_ id: String = "g1", at: Int64) -> Fact {
    .promotionalGrantEnd(PromotionalGrantEndFact(grantId: id, endedAt: at, appAccountToken: token))
}

@Suite("Promotional grants")
struct PromotionalGrantTests {
    /// A monthly purchase from T0 (expiring at T0 + 1 month) and a grant of `pro` for 60 days:
    /// the purchase shows while it is active, the grant takes over when it lapses, and `pro`
    /// expires with the grant.
    @Test(arguments: [
        (at: T0 + day, source: EntitlementSource.purchase, status: EntitlementStatus.active, expires: months(1)),
        (at: months(1) + day, source: .grant, status: .active, expires: T0 + 60 * day),
        (at: T0 + 61 * day, source: .purchase, status: .expired, expires: months(1)),
    ])
    func grantTakesOverOnlyWhenThePurchaseLapses(at: Int64, source: EntitlementSource, status: EntitlementStatus, expires: Int64) {
        let facts = [tx("t1", purchase: T0, expires: months(1)), promo(until: T0 + 60 * day)]
        let pro = state(facts, at: at).entitlement("pro")
        #expect(pro?.source == source)
        #expect(pro?.status == status)
        #expect(pro?.expiresAt == expires)
    }

    /// Without any purchase: active until the grant ends (its expiry, or an earlier end), then
    /// expired; nothing before it was granted.
    @Test(arguments: [
        (facts: [promo(until: T0 + 7 * day)], at: T0 + day, status: EntitlementStatus?.some(.active), expires: Int64?.some(T0 + 7 * day)),
        ([promo(until: T0 + 7 * day)], T0 + 8 * day, .expired, T0 + 7 * day),
        ([promo(until: T0 + 7 * day), end(at: T0 + 2 * day)], T0 + 3 * day, .expired, T0 + 2 * day),
        ([promo(until: T0 + 7 * day), end(at: T0 + 2 * day), end(at: T0 + 5 * day)], T0 + day, .active, T0 + 2 * day),
        ([promo(until: T0 + 7 * day), end(at: T0 + 9 * day)], T0 + 6 * day, .active, T0 + 7 * day),
        ([promo(from: T0 + day, until: T0 + 7 * day)], T0, nil, nil),
    ])
    func grantAloneFollowsItsWindow(facts: [Fact], at: Int64, status: EntitlementStatus?, expires: Int64?) {
        let pro = state(facts, at: at).entitlement("pro")
        #expect(pro?.status == status)
        #expect(pro?.expiresAt == expires)
        if pro != nil {
            #expect(pro?.source == .grant && pro?.grantId == "g1" && pro?.transactionId == "g1")
        }
    }

    /// The grant's boundaries are when the answer changes by time alone; the customer's class
    /// stays the purchases' (a grant is no purchase history).
    @Test func grantBoundariesAreStatusChanges() {
        let s = state([promo(until: T0 + 7 * day), promo("g2", "magazine", from: T0 + 2 * day, until: T0 + 9 * day)], at: T0 + day)
        #expect(s.nextStatusChangeAt == T0 + 2 * day)
        #expect(s.customerClass == .new)
        #expect(s.activeEntitlementIds == ["pro"])
    }

    /// Grants, ends and purchases in any order, duplicated: the same state.
    @Test(arguments: [UInt64(7), 8, 9, 10])
    func orderIndependent(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let facts = [
            tx("t1", purchase: T0, expires: months(1)), promo(until: T0 + 60 * day), promo("g2", until: T0 + 90 * day),
            end("g2", at: T0 + 40 * day), end("g2", at: T0 + 45 * day), renewal(autoRenew: false, signed: T0 + day),
        ]
        for at in [T0 + day, months(1) + day, T0 + 50 * day, T0 + 70 * day] {
            let reference = state(facts, at: at)
            let shuffled = (facts + facts.prefix(3)).shuffled(using: &rng)
            #expect(state(shuffled, at: at) == reference)
        }
        #expect(state(facts, at: months(1) + day).entitlement("pro")?.grantId == "g1")
    }

    /// Grants are unsigned facts: their identity is their fields, so a replay is the same fact.
    @Test func identityKeysAGrant() {
        #expect(promo(until: T0 + day).identity == promo(until: T0 + day).identity)
        #expect(promo(until: T0 + day).identity != promo(until: T0 + 2 * day).identity)
        #expect(end(at: T0).identity?.hasPrefix("promotionalGrantEnd|v1|") == true)
    }
}
