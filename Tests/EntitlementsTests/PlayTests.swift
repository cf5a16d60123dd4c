import Entitlements
import Foundation
import Testing

// Google Play facts in the engine: the state table of docs/engine.md, linkedPurchaseToken chains,
// voided purchases, one-time products, and order-proofness.

/// The policy of the Play tests: Play products beside one App Store product granting the same entitlement.
let playPolicy = Policy(
    products: [
        "play.monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "premium"),
        "play.plus": ProductPolicy(type: .autoRenewable, entitlements: ["pro", "plus"], subscriptionGroup: "premium"),
        "play.basic": ProductPolicy(
            type: .autoRenewable, entitlements: ["basic"], subscriptionGroup: "basic", basePlans: ["monthly"]),
        "play.lifetime": ProductPolicy(type: .nonConsumable, entitlements: ["lifetime"]),
        "play.coins": ProductPolicy(type: .consumable),
        "monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "premium"),
    ])

/// A Play subscription snapshot.
func play(
    _ token: String, _ state: PlaySubscriptionState, product: String = "play.monthly", start: Int64 = T0,
    expiry: Int64? = nil, observed: Int64, linked: String? = nil, autoRenew: Bool? = true, order: String? = nil,
    basePlan: String? = "monthly", environment: Environment = .production, resume: Int64? = nil, price: Int64? = nil,
    periodType: PeriodType? = nil
) -> Fact {
    .playSubscription(
        PlaySubscriptionFact(
            purchaseToken: token, linkedPurchaseToken: linked, packageName: "com.example.app", productId: product,
            basePlanId: basePlan, state: state, startTime: start, expiryTime: expiry ?? months(1, after: start),
            autoRenewEnabled: autoRenew, autoResumeTime: resume, latestOrderId: order ?? "GPA.\(token).0", observedAt: observed,
            environment: environment, price: price, currency: price == nil ? nil : "USD", periodType: periodType))
}

/// A voided Play purchase.
func voided(_ token: String, order: String?, at date: Int64, productType: Int = 1) -> Fact {
    .playVoided(PlayVoidedPurchaseFact(purchaseToken: token, orderId: order, productType: productType, refundType: 1, voidedTime: date))
}

/// A Play one-time product snapshot.
func playProduct(_ token: String, product: String, state: Int = 0, quantity: Int = 1, observed: Int64) -> Fact {
    .playProduct(
        PlayProductFact(
            purchaseToken: token, packageName: "com.example.app", productId: product, orderId: "GPA.\(token)",
            purchaseState: state, quantity: quantity, purchaseTime: T0, observedAt: observed))
}

/// One row of the state table: a single snapshot of `state` expiring at T0 + 1 month, evaluated at
/// `now`, and what the answer says.
struct PlayStateRow: CustomTestStringConvertible, Sendable {
    var state: PlaySubscriptionState
    var now: Int64
    /// nil: the purchase grants nothing and is not listed.
    var status: EntitlementStatus?
    var willRenew: Bool? = nil
    var autoRenew: Bool? = true

    var testDescription: String { "\(state.rawValue) at T0+\((now - T0) / day)d" }
}

let expiry = months(1)

let playStateTable: [PlayStateRow] = [
    PlayStateRow(state: .active, now: T0 + day, status: .active, willRenew: true),
    PlayStateRow(state: .active, now: T0 + day, status: .active, willRenew: false, autoRenew: false),
    PlayStateRow(state: .active, now: expiry, status: .expired, willRenew: false),
    PlayStateRow(state: .canceled, now: T0 + day, status: .active, willRenew: false),
    PlayStateRow(state: .canceled, now: expiry + 1, status: .expired, willRenew: false),
    PlayStateRow(state: .inGracePeriod, now: expiry - day, status: .gracePeriod, willRenew: true),
    PlayStateRow(state: .inGracePeriod, now: expiry + day, status: .billingRetry, willRenew: true),
    PlayStateRow(state: .onHold, now: expiry + day, status: .billingRetry, willRenew: true),
    PlayStateRow(state: .onHold, now: expiry + billingRetryDays * day, status: .expired, willRenew: false),
    PlayStateRow(state: .paused, now: T0 + day, status: .expired, willRenew: true),
    PlayStateRow(state: .expired, now: T0 + day, status: .expired, willRenew: false),
    PlayStateRow(state: .pending, now: T0 + day, status: nil),
    PlayStateRow(state: .pendingPurchaseCanceled, now: T0 + day, status: nil),
    PlayStateRow(state: "SUBSCRIPTION_STATE_NOT_YET_INVENTED", now: T0 + day, status: nil),
]

@Suite struct PlayStateTableTests {
    @Test(arguments: playStateTable)
    func stateMapsOntoTheModel(_ row: PlayStateRow) {
        let facts = [play("t1", row.state, expiry: expiry, observed: T0 + hour, autoRenew: row.autoRenew)]
        let state = evaluate(facts: facts, policy: playPolicy, now: row.now)
        let pro = state.entitlement("pro")
        guard let status = row.status else {
            #expect(pro == nil)
            #expect(state.group("premium")?.current == nil)
            #expect(state.customerClass == .new)
            return
        }
        #expect(pro?.status == status)
        #expect(pro?.active == status.grantsAccess)
        #expect(pro?.store == .playStore)
        #expect(pro?.transactionId == "t1")
        #expect(pro?.productType == .autoRenewable)
        #expect(state.group("premium")?.current?.status == status)
        #expect(state.group("premium")?.current?.willRenew == row.willRenew)
        #expect(state.customerClass == (status.grantsAccess ? .active : .inactive))
        switch status {
        case .gracePeriod:
            #expect(pro?.gracePeriodExpiresAt == expiry)
            #expect(pro?.billingIssueDetectedAt == T0 + hour)
            #expect(state.nextStatusChangeAt == expiry)
        case .billingRetry:
            #expect(pro?.billingIssueDetectedAt == T0 + hour)
            #expect(state.nextStatusChangeAt == expiry + billingRetryDays * day)
        case .active:
            #expect(state.nextStatusChangeAt == expiry)
            #expect(pro?.unsubscribeDetectedAt == (row.state == .canceled ? T0 + hour : nil))
        default:
            #expect(pro?.billingIssueDetectedAt == nil)
        }
    }

    @Test func voidedCurrentOrderRefundsAndOlderOrderDoesNot() {
        let renewed = play("t1", .active, start: T0, expiry: months(2), observed: months(1) + hour, order: "GPA.1..1")
        let refundedNow = evaluate(facts: [renewed, voided("t1", order: "GPA.1..1", at: months(1) + day)], policy: playPolicy, now: months(1) + 2 * day)
        #expect(refundedNow.entitlement("pro")?.status == .refunded)
        #expect(refundedNow.entitlement("pro")?.willRenew == false)
        let pastPeriod = evaluate(facts: [renewed, voided("t1", order: "GPA.1..0", at: months(1) + day)], policy: playPolicy, now: months(1) + 2 * day)
        #expect(pastPeriod.entitlement("pro")?.status == .active)
        let noOrder = evaluate(facts: [renewed, voided("t1", order: nil, at: months(1) + day)], policy: playPolicy, now: months(1) + 2 * day)
        #expect(noOrder.entitlement("pro")?.status == .refunded)
    }

    @Test func billingIssueDatesFromTheFirstSnapshotOfTheCurrentRun() {
        let facts = [
            play("t1", .inGracePeriod, expiry: expiry, observed: T0 + 1 * hour),  // an earlier issue, recovered
            play("t1", .active, expiry: expiry, observed: T0 + 2 * hour),
            play("t1", .inGracePeriod, expiry: expiry, observed: T0 + 3 * hour),
            play("t1", .onHold, expiry: expiry, observed: T0 + 4 * hour),
        ]
        let state = evaluate(facts: facts, policy: playPolicy, now: expiry + day)
        #expect(state.entitlement("pro")?.status == .billingRetry)
        #expect(state.entitlement("pro")?.billingIssueDetectedAt == T0 + 3 * hour)
    }
}

@Suite struct PlayChainTests {
    /// An upgrade: the new token names the old one; the old one is superseded, not counted twice.
    @Test func linkedTokenSupersedesTheOldOne() {
        let facts = [
            play("old", .active, observed: T0 + hour),
            play("new", .active, product: "play.plus", start: T0 + 10 * day, observed: T0 + 10 * day + hour, linked: "old"),
        ]
        let state = evaluate(facts: facts, policy: playPolicy, now: T0 + 11 * day)
        let group = state.group("premium")
        #expect(group?.current?.transactionId == "new")
        #expect(group?.current?.originalTransactionId == "old")
        #expect(state.subscriptionGroups.filter { $0.current != nil }.count == 1)
        #expect(state.entitlement("pro")?.transactionId == "new")
        #expect(state.entitlement("plus")?.status == .active)
        #expect(state.activeEntitlementIds == ["plus", "pro"])
    }

    /// Even when Google still reports the old token active, it gives no access of its own.
    @Test func supersededTokenNeverCountsAsActive() {
        let facts = [
            play("old", .active, product: "play.plus", expiry: months(3), observed: T0 + 20 * day),
            play("new", .canceled, start: T0 + 10 * day, observed: T0 + 10 * day + hour, linked: "old"),
        ]
        let state = evaluate(facts: facts, policy: playPolicy, now: months(1) + 20 * day)
        #expect(state.entitlement("pro")?.status == .expired)
        #expect(state.entitlement("plus")?.status == .expired)
        #expect(state.customerClass == .inactive)
    }

    @Test func chainsOfThreeShareTheirRoot() {
        let facts = [
            play("a", .expired, observed: T0 + hour),
            play("b", .expired, start: T0 + 40 * day, observed: T0 + 40 * day, linked: "a"),
            play("c", .active, start: T0 + 80 * day, observed: T0 + 80 * day, linked: "b"),
        ]
        let state = evaluate(facts: facts, policy: playPolicy, now: T0 + 81 * day)
        #expect(state.group("premium")?.current?.transactionId == "c")
        #expect(state.group("premium")?.current?.originalTransactionId == "a")
        #expect(state.group("premium")?.current?.originalPurchaseDate == T0)
        #expect(state.entitlement("pro")?.status == .active)
    }

    @Test func aCycleOfLinksEndsAtItsSmallestToken() {
        let facts = [
            play("x", .active, observed: T0 + hour, linked: "y"),
            play("y", .active, observed: T0 + hour, linked: "x"),
        ]
        let state = evaluate(facts: facts, policy: playPolicy, now: T0 + day)
        // Both are superseded by the other: neither grants.
        #expect(state.entitlement("pro")?.status == .expired)
        #expect(state.entitlement("pro")?.originalTransactionId == "x")
    }
}

@Suite struct PlayOrderTests {
    /// A Play lifecycle across two tokens: buy, cancel, restore, grace, hold, recover, upgrade
    /// (linked token), a voided past order and a one-time purchase.
    static let lifecycle: [Fact] = [
        play("t1", .pending, start: T0, observed: T0),
        play("t1", .active, start: T0, observed: T0 + hour),
        play("t1", .canceled, observed: T0 + 5 * day, autoRenew: false),
        play("t1", .active, observed: T0 + 6 * day),
        play("t1", .inGracePeriod, expiry: months(1) + 7 * day, observed: months(1) + hour, order: "GPA.t1.0"),
        play("t1", .onHold, expiry: months(1) + 7 * day, observed: months(1) + 7 * day),
        play("t1", .active, start: T0, expiry: months(2) + 8 * day, observed: months(1) + 8 * day, order: "GPA.t1.1"),
        voided("t1", order: "GPA.t1.0", at: months(1) + 9 * day),
        play("t2", .active, product: "play.plus", start: months(1) + 20 * day, observed: months(1) + 20 * day, linked: "t1"),
        play("t1", .expired, start: T0, expiry: months(1) + 20 * day, observed: months(1) + 20 * day + 1, order: "GPA.t1.1"),
        playProduct("p1", product: "play.lifetime", state: 2, observed: T0 + day),
        playProduct("p1", product: "play.lifetime", observed: T0 + 2 * day),
        playProduct("c1", product: "play.coins", quantity: 3, observed: T0 + day),
    ]

    static let instants: [Int64] = [
        T0 + 2 * hour, T0 + 5 * day + 1, months(1) + 2 * hour, months(1) + 7 * day + 1, months(1) + 10 * day,
        months(1) + 21 * day, months(3) + 21 * day, months(4),
    ]

    @Test(arguments: 1...12 as ClosedRange<UInt64>)
    func shuffledAndDuplicatedGiveTheSameAnswer(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let bag = (Self.lifecycle + Self.lifecycle.shuffled(using: &rng).prefix(5)).shuffled(using: &rng)
        for now in Self.instants {
            let expected = evaluate(facts: Self.lifecycle, policy: playPolicy, now: now)
            #expect(evaluate(facts: bag, policy: playPolicy, now: now) == expected, "seed \(seed) at \(now)")
        }
    }

    @Test func lifecycleStates() {
        // What the server knew at `now`: the facts observed by then.
        func known(_ now: Int64) -> [Fact] { Self.lifecycle.filter { $0.date <= now } }
        func pro(_ now: Int64) -> EntitlementState? { evaluate(facts: known(now), policy: playPolicy, now: now).entitlement("pro") }
        #expect(pro(T0 + 2 * hour)?.status == .active)
        #expect(pro(T0 + 5 * day + 1)?.willRenew == false)
        #expect(pro(T0 + 5 * day + 1)?.unsubscribeDetectedAt == T0 + 5 * day)
        #expect(pro(T0 + 6 * day + 1)?.willRenew == true)
        #expect(pro(months(1) + 2 * hour)?.status == .gracePeriod)
        #expect(pro(months(1) + 7 * day + 1)?.status == .billingRetry)
        #expect(pro(months(1) + 10 * day)?.status == .active)  // the voided order was a past one
        let upgraded = evaluate(facts: known(months(1) + 21 * day), policy: playPolicy, now: months(1) + 21 * day)
        #expect(upgraded.entitlement("pro")?.transactionId == "t2")
        #expect(upgraded.entitlement("plus")?.status == .active)
        #expect(upgraded.group("premium")?.current?.originalTransactionId == "t1")
        #expect(upgraded.nonConsumable("play.lifetime")?.owned == true)
        #expect(upgraded.nonConsumable("play.lifetime")?.grant.store == .playStore)
        #expect(upgraded.consumable("play.coins")?.balance == 3)
    }

    /// Snapshots of one token: the newest observation wins wherever it arrives; equal observations
    /// are ordered by content, so the choice is the same either way.
    @Test func newestObservationWinsAndTiesAreDeterministic() {
        let older = play("t1", .active, observed: T0 + hour)
        let newer = play("t1", .canceled, observed: T0 + 2 * hour, autoRenew: false)
        for facts in [[older, newer], [newer, older]] {
            #expect(evaluate(facts: facts, policy: playPolicy, now: T0 + day).entitlement("pro")?.willRenew == false)
        }
        let tieA = play("t1", .active, observed: T0 + hour)
        let tieB = play("t1", .inGracePeriod, observed: T0 + hour)
        let one = evaluate(facts: [tieA, tieB], policy: playPolicy, now: T0 + day)
        let other = evaluate(facts: [tieB, tieA], policy: playPolicy, now: T0 + day)
        #expect(one == other)
    }
}

@Suite struct PlayProductAndStoreTests {
    @Test(arguments: [(0, EntitlementStatus?.some(.active)), (1, .refunded), (2, nil)])
    func oneTimeProductStates(purchaseState: Int, expected: EntitlementStatus?) {
        let state = evaluate(facts: [playProduct("p1", product: "play.lifetime", state: purchaseState, observed: T0)], policy: playPolicy, now: T0 + day)
        #expect(state.entitlement("lifetime")?.status == expected)
        #expect(state.nonConsumable("play.lifetime")?.grant.store == (expected == nil ? nil : .playStore))
    }

    @Test func voidedProductAndConsumableAreRefunded() {
        let facts = [
            playProduct("p1", product: "play.lifetime", observed: T0),
            playProduct("c1", product: "play.coins", quantity: 5, observed: T0),
            playProduct("c2", product: "play.coins", quantity: 2, observed: T0),
            voided("p1", order: "GPA.p1", at: T0 + day, productType: 2),
            voided("c2", order: "GPA.c2", at: T0 + day, productType: 2),
        ]
        let state = evaluate(facts: facts, policy: playPolicy, now: T0 + 2 * day)
        #expect(state.entitlement("lifetime")?.status == .refunded)
        #expect(state.consumable("play.coins")?.credited == 7)
        #expect(state.consumable("play.coins")?.debited == 2)
        #expect(state.consumable("play.coins")?.refundedTransactionIds == ["c2"])
    }

    /// One customer, both stores: the better grant shows, and says where it came from.
    @Test func bothStoresForOneEntitlement() {
        let apple = tx("a1", otid: "o1", product: "monthly", purchase: T0, expires: months(1))
        let google = play("t1", .active, start: months(1), expiry: months(2), observed: months(1) + hour)
        let state = evaluate(facts: [apple, google], policy: playPolicy, now: months(1) + day)
        #expect(state.entitlement("pro")?.store == .playStore)
        #expect(state.group("premium")?.current?.store == .playStore)
        // Apple's longer yearly period shows for the entitlement; the later Play purchase is the
        // group's current subscription.
        let yearly = tx("a2", otid: "o2", product: "monthly", purchase: T0, expires: months(12))
        let mixed = evaluate(facts: [yearly, google], policy: playPolicy, now: months(1) + day)
        #expect(mixed.entitlement("pro")?.store == .appStore)
        #expect(mixed.entitlement("pro")?.transactionId == "a2")
        #expect(mixed.group("premium")?.current?.transactionId == "t1")
    }

    @Test func appleFactsAloneAreUnchangedByPlaySupport() {
        let facts: [Fact] = [tx("a1", otid: "o1", product: "monthly", purchase: T0, expires: months(1))]
        let state = evaluate(facts: facts, policy: playPolicy, now: T0 + day)
        #expect(state.entitlements.allSatisfy { $0.store == .appStore })
        #expect(state.subscriptionGroups.compactMap(\.current).allSatisfy { $0.store == .appStore })
    }

    @Test func basePlansNotNamedGrantNothing() {
        let weekly = play("t1", .active, product: "play.basic", observed: T0 + hour, basePlan: "weekly")
        let monthly = play("t2", .active, product: "play.basic", observed: T0 + hour, basePlan: "monthly")
        #expect(evaluate(facts: [weekly], policy: playPolicy, now: T0 + day).entitlement("basic") == nil)
        #expect(evaluate(facts: [weekly], policy: playPolicy, now: T0 + day).group("basic")?.current?.transactionId == "t1")
        #expect(evaluate(facts: [monthly], policy: playPolicy, now: T0 + day).entitlement("basic")?.active == true)
    }

    @Test func sandboxPurchasesStayInTheirEnvironment() {
        let tester = play("t1", .active, observed: T0 + hour, environment: .sandbox)
        #expect(evaluate(facts: [tester], policy: playPolicy, now: T0 + day).entitlement("pro") == nil)
        #expect(evaluate(facts: [tester], policy: playPolicy, now: T0 + day, environment: .sandbox).entitlement("pro")?.active == true)
    }

    @Test func playFactsRoundTripAndKeepTheirIdentityPerObservation() throws {
        let facts = [play("t1", .active, observed: T0), playProduct("p1", product: "play.lifetime", observed: T0), voided("t1", order: "o", at: T0)]
        for fact in facts {
            let decoded = try JSONDecoder().decode(Fact.self, from: JSONEncoder().encode(fact))
            #expect(decoded == fact)
            #expect(fact.identity != nil)
        }
        #expect(play("t1", .active, observed: T0).identity != play("t1", .active, observed: T0 + 1).identity)
    }
}
