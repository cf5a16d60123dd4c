import Testing

@testable import Entitlements

// One answer over several environments: each environment is evaluated alone and the engine
// merges the states, the first environment being the primary one.

private let token = "11111111-2222-4333-8444-555555555555"

private func promo(until: Int64) -> Fact {
    .promotionalGrant(
        PromotionalGrantFact(grantId: "g", entitlement: "pro", grantedAt: T0, expiresDate: until, appAccountToken: token))
}

@Suite("Merged environments")
struct MergedEnvironmentTests {
    /// Grants count in every environment: a purchase active in another environment shows over
    /// the primary environment's grant of the same standing.
    @Test func aPurchaseShowsOverAGrant() {
        let purchase = tx("t", purchase: T0 - day, expires: T0 + 10 * day, environment: .sandbox)
        let merged = evaluate(facts: [purchase, promo(until: T0 + 60 * day)], policy: policy, now: T0, environments: [.production, .sandbox])
        #expect(merged.entitlement("pro")?.source == .purchase)
        #expect(merged.entitlement("pro")?.environment == .sandbox)
        let alone = evaluate(facts: [promo(until: T0 + 60 * day)], policy: policy, now: T0, environments: [.production, .sandbox])
        #expect(alone.entitlement("pro")?.source == .grant)
    }

    /// The best status wins whichever environment has it; on a tie the primary's entitlement
    /// stays; the customer is active when any environment is.
    @Test(arguments: [
        (production: T0 - day, sandbox: T0 + day, environment: Environment.sandbox, status: EntitlementStatus.active),
        (production: T0 + day, sandbox: T0 - day, environment: .production, status: .active),
        (production: T0 + day, sandbox: T0 + 2 * day, environment: .production, status: .active),
        (production: T0 - day, sandbox: T0 - 2 * day, environment: .production, status: .expired),
    ])
    func theBestStatusWins(production: Int64, sandbox: Int64, environment: Environment, status: EntitlementStatus) {
        let facts = [
            tx("p", otid: "op", purchase: production - oneMonthMillis, expires: production, environment: .production),
            tx("s", otid: "os", purchase: sandbox - oneMonthMillis, expires: sandbox, environment: .sandbox),
        ]
        let merged = evaluate(facts: facts, policy: policy, now: T0, environments: [.production, .sandbox])
        #expect(merged.entitlement("pro")?.environment == environment)
        #expect(merged.entitlement("pro")?.status == status)
        #expect(merged.customerClass == (status == .active ? .active : .inactive))
        #expect(merged.environment == .production)
        // Each environment's subscriptions are listed, the primary's first.
        #expect(merged.subscriptionGroups.compactMap(\.current?.originalTransactionId) == ["op", "os"])
        // The next change is the earliest of either environment's.
        let next = [state(facts, at: T0, environment: .production), state(facts, at: T0, environment: .sandbox)]
            .compactMap(\.nextStatusChangeAt).min()
        #expect(next != nil && merged.nextStatusChangeAt == next)
    }

    /// One environment is the engine's answer for it alone; none with facts is a new customer's
    /// answer in the first.
    @Test func oneOrNoEnvironmentIsTheEnginesAnswer() {
        let facts = [tx("s", otid: "os", purchase: T0 - day, expires: T0 + 10 * day, environment: .sandbox)]
        #expect(evaluate(facts: facts, policy: policy, now: T0, environments: [.sandbox]) == state(facts, at: T0, environment: .sandbox))
        let none = evaluate(facts: facts, policy: policy, now: T0, environments: [.production, .xcode])
        #expect(none == state([], at: T0, environment: .production))
        #expect(none.customerClass == .new)
    }

    /// Environments are listed Production first, then the App Store's order, then any other by name.
    @Test func environmentsPresentArePrimaryFirst() {
        let facts = [
            tx("x", otid: "ox", purchase: T0, environment: Environment(rawValue: "Zeta")),
            tx("s", otid: "os", purchase: T0, environment: .sandbox),
            tx("a", otid: "oa", purchase: T0, environment: Environment(rawValue: "Alpha")),
            tx("p", otid: "op", purchase: T0, environment: .production),
        ]
        #expect(Environment.present(in: facts).map(\.rawValue) == ["Production", "Sandbox", "Alpha", "Zeta"])
        #expect(Environment.present(in: []).isEmpty)
    }
}

private let oneMonthMillis = 30 * day
