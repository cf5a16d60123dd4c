// One customer answer over several App Store environments (docs/configuration.md,
// `apps[].grantEnvironments`): TestFlight, App Review and `entitled dev` purchase in Sandbox, and
// their customers must read as what they bought without asking for `?environment=Sandbox`. The
// engine decides how their states merge; storage and the server only name the environments.

extension Environment {
    /// The App Store's environments in the order answers and rows list them (Production first).
    public static let listingOrder: [Environment] = [.production, .sandbox, .xcode, .localTesting]

    /// The environments `facts` are in, primary first: Production, then the others of
    /// ``listingOrder``, then any other in name order.
    public static func present(in facts: [Fact]) -> [Environment] {
        let present = Set(facts.map(\.environment))
        let known = listingOrder.filter(present.contains)
        let others = present.subtracting(listingOrder).sorted { $0.rawValue < $1.rawValue }
        return known + others
    }
}

/// The customer's state over `environments` (in order, the first is primary): each environment the
/// customer has facts in is evaluated on its own, as the engine always does, and the states are
/// merged (``CustomerState/merging(_:)``). With one environment (an `?environment=` filter) this is
/// the engine's answer for it alone; with none of them among the facts, a new customer's answer in
/// the first. An environment's state in `evaluated` (the caller's own evaluation of the same facts
/// at the same `now` under the same policy) is used instead of evaluating it again.
public func evaluate(
    facts: [Fact], policy: Policy, now: Int64, environments: [Environment], reusing evaluated: [Environment: CustomerState] = [:]
) -> CustomerState {
    func state(_ environment: Environment) -> CustomerState {
        evaluated[environment] ?? evaluate(facts: facts, policy: policy, now: now, environment: environment)
    }
    if environments.count == 1 { return state(environments[0]) }
    let present = Set(facts.map(\.environment))
    let inFacts = environments.filter(present.contains)
    guard !inFacts.isEmpty else {
        return evaluate(facts: [], policy: policy, now: now, environment: environments.first ?? .production)
    }
    return .merging(inFacts.map(state))
}

extension CustomerState {
    /// One state from several environments' states, the first being the primary one:
    ///
    /// - an entitlement granted in several environments is the one with the best status (active,
    ///   grace period, billing retry, expired, revoked, refunded), a purchase over a promotional grant,
    ///   then the earlier environment on a tie;
    /// - subscription groups, non-consumables, non-renewing runs and consumable balances are listed
    ///   from every environment (each says its own), the primary's first;
    /// - the customer is `active` when any environment is, else `inactive` when any is, else `new`;
    /// - the next status change is the earliest; `environment`, the pre-order, restore behaviour
    ///   and `evaluatedAt` are the primary's; the storefront is the primary's, else the first
    ///   environment's that has one;
    /// - the offers eligible now are those of the first environment Apple signs
    ///   (``Environment/isSignedByApple``; the others have none), none without one.
    public static func merging(_ states: [CustomerState]) -> CustomerState {
        guard var merged = states.first else {
            preconditionFailure("merging needs at least one state")
        }
        for state in states.dropFirst() {
            for entitlement in state.entitlements {
                if let index = merged.entitlements.firstIndex(where: { $0.id == entitlement.id }) {
                    let current = merged.entitlements[index]
                    // A purchase shows over a promotional grant of the same standing (grants count
                    // in every environment, so the primary's grant must not hide another's purchase).
                    if rank(entitlement.status) < rank(current.status)
                        || (rank(entitlement.status) == rank(current.status) && current.source == .grant
                            && entitlement.source == .purchase)
                    {
                        merged.entitlements[index] = entitlement
                    }
                } else {
                    merged.entitlements.append(entitlement)
                }
            }
            merged.subscriptionGroups += state.subscriptionGroups
            merged.nonConsumables += state.nonConsumables
            merged.nonRenewingSubscriptions += state.nonRenewingSubscriptions
            merged.consumables += state.consumables
            if merged.storefront == nil { merged.storefront = state.storefront }
            merged.proceeds += state.proceeds
            if let next = state.nextStatusChangeAt {
                merged.nextStatusChangeAt = min(merged.nextStatusChangeAt ?? next, next)
            }
        }
        merged.offers = states.first { $0.environment.isSignedByApple }?.offers ?? EligibleOffers()
        let classes = Set(states.map(\.customerClass))
        merged.customerClass = classes.contains(.active) ? .active : classes.contains(.inactive) ? .inactive : .new
        return merged
    }

    /// Statuses are declared best first.
    private static func rank(_ status: EntitlementStatus) -> Int { EntitlementStatus.allCases.firstIndex(of: status) ?? .max }
}
