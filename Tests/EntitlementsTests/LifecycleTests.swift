import Entitlements
import Testing

@Suite("Lifecycles, step by step with now advancing")
struct LifecycleTests {
    @Test(arguments: Lifecycles.all)
    func lifecycle(_ lifecycle: Lifecycle) {
        var facts: [Fact] = []
        for step in lifecycle.steps {
            facts += step.facts
            verify(step.checks, state(facts, at: step.now), "\(lifecycle.name) / \(step.label)")
        }
    }

    /// For every lifecycle, ≥ 1,000 shuffles of its facts with random duplicates give the same state
    /// at every checkpoint. The seed is printed on failure so the case can be replayed.
    @Test(arguments: Lifecycles.all)
    func orderIndependence(_ lifecycle: Lifecycle) {
        let facts = lifecycle.allFacts
        let checkpoints = lifecycle.checkpoints
        let expected = checkpoints.map { state(facts, at: $0) }
        for iteration in 0..<1_000 {
            let seed = UInt64(iteration) &* 0x9E37_79B9 &+ UInt64(lifecycle.name.utf8.count)
            var rng = SplitMix64(seed: seed)
            var shuffled = facts
            let duplicates = Int.random(in: 0...facts.count, using: &rng)
            for _ in 0..<duplicates { shuffled.append(facts.randomElement(using: &rng)!) }
            shuffled.shuffle(using: &rng)
            // Every shuffle at the final instant, plus one rotating checkpoint.
            let last = checkpoints.count - 1
            let other = iteration % checkpoints.count
            for index in Set([last, other]) {
                let got = state(shuffled, at: checkpoints[index])
                #expect(got == expected[index], "\(lifecycle.name): seed \(seed), checkpoint \(index)")
                if got != expected[index] { return }
            }
        }
    }

    /// Between `now` and `nextStatusChangeAt` time alone changes nothing in the state (what lets a
    /// stored answer be served until then), and at that instant something does.
    @Test(arguments: Lifecycles.all)
    func nothingChangesBeforeTheNextStatusChange(_ lifecycle: Lifecycle) {
        func timeless(_ state: CustomerState) -> CustomerState {
            var copy = state
            copy.evaluatedAt = 0
            return copy
        }
        var facts: [Fact] = []
        for step in lifecycle.steps {
            facts += step.facts
            let s = state(facts, at: step.now)
            let later = state(facts, at: (s.nextStatusChangeAt ?? step.now + 3_650 * day) - 1)
            #expect(timeless(later) == timeless(s), "\(lifecycle.name) / \(step.label)")
            if let next = s.nextStatusChangeAt {
                #expect(
                    timeless(state(facts, at: next)) != timeless(s),
                    "\(lifecycle.name) / \(step.label): nothing changed at \(next)")
            }
        }
    }

    /// Every grant's status: entitlements, each group's current subscription, non-renewing runs.
    private func statuses(_ s: CustomerState) -> [EntitlementStatus?] {
        s.entitlements.map(\.status) + s.subscriptionGroups.map(\.current?.status)
            + s.nonRenewingSubscriptions.map(\.grant.status)
    }

    @Test func billingRetryEndsAfterSixtyDaysWithoutAnEvent() {
        let e1 = months(1)
        let facts = [
            tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
            renewal(retry: true, signed: e1), note(.didFailToRenew, at: e1, txn: "t1"),
        ]
        #expect(state(facts, at: e1 + 60 * day - 1).entitlement("pro")?.status == .billingRetry)
        #expect(state(facts, at: e1 + 60 * day).entitlement("pro")?.status == .expired)
    }

    @Test func environmentsNeverMix() {
        let facts = [
            tx("s1", otid: "s1", purchase: T0, expires: months(1), environment: .sandbox),
            renewal(otid: "s1", signed: T0, environment: .sandbox),
            note(.subscribed, .initialBuy, at: T0, otid: "s1", txn: "s1", environment: .sandbox),
        ]
        let production = state(facts, at: T0 + hour)
        #expect(production.customerClass == .new)
        #expect(production.entitlements.isEmpty)
        let sandbox = state(facts, at: T0 + hour, environment: .sandbox)
        #expect(sandbox.entitlement("pro")?.status == .active)
        #expect(sandbox.environment == .sandbox)
        #expect(sandbox.entitlement("pro")?.environment == .sandbox)
        // V1 spells production "PROD".
        #expect(Environment(rawValue: "PROD") == .production)
    }

    @Test func emptyCustomerIsNew() {
        let s = state([], at: T0)
        #expect(s.customerClass == .new)
        #expect(s.group("premium")?.customerClass == .new)
        #expect(s.group("premium")?.introOfferEligible == true)
        #expect(s.group("premium")?.promotionalOfferEligible == false)
        #expect(s.preorder.isPreordered == false)
    }

    @Test func mixedStatesPerGroup() {
        // Active in one group, lapsed in another: overall active, per group mixed.
        let facts = [
            tx("t1", purchase: T0, expires: months(1)), renewal(signed: T0),
            tx("m1", otid: "m1", product: "magazine", purchase: T0 - 90 * day, expires: T0 - 60 * day),
        ]
        let s = state(facts, at: T0 + day)
        #expect(s.customerClass == .active)
        #expect(s.group("premium")?.customerClass == .active)
        #expect(s.group("reading")?.customerClass == .inactive)
        #expect(s.entitlement("magazine")?.status == .expired)
    }

    @Test func preorderFromAppTransactionOrReceipt() {
        let preorderedAt = T0 - 30 * day
        let facts: [Fact] = [
            .appTransaction(AppTransactionFact(originalPurchaseDate: T0, preorderDate: preorderedAt, signedDate: T0)),
            .appTransaction(AppTransactionFact(originalPurchaseDate: T0, preorderDate: preorderedAt, signedDate: T0 + day)),
        ]
        let s = state(facts, at: T0 + 2 * day)
        #expect(s.preorder.isPreordered)
        #expect(s.preorder.preorderDate == preorderedAt)
        #expect(s.preorder.appOriginalPurchaseDate == T0)
        #expect(s.customerClass == .new)  // an app download is not a purchase
    }
}
