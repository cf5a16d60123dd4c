// Google Play's facts reduced to one version per purchase token, and Play states mapped onto the
// engine's grants. Every choice is a maximum or minimum over the set of facts, so the arrival
// order never matters (docs/engine.md, "Google Play").

/// One Play subscription purchase token, resolved from its snapshots.
struct PlaySubscription {
    /// The newest snapshot (by `observedAt`, then content).
    var fact: PlaySubscriptionFact
    /// The first token of its `linkedPurchaseToken` chain (itself when it replaced none).
    var root: String
    /// Another token names this one as its `linkedPurchaseToken`: it was replaced and grants no
    /// current access (it is not counted twice).
    var superseded: Bool
    /// A voided purchase ends its current period (no order id, or the newest snapshot's `latestOrderId`).
    var voided: Bool
    /// When a run of `CANCELED` snapshots began (the earliest of those newer than any other state).
    var canceledSince: Int64?
    /// When the current run of `IN_GRACE_PERIOD` / `ON_HOLD` snapshots began.
    var billingIssueSince: Int64?
    /// The root's `startTime`, when its snapshot is known.
    var originalStart: Int64?
    /// Group key and its dense id (``Canon/groups``).
    var group: String
    var groupId: Int
}

extension PlayProductFact {
    /// `purchaseState` of a purchase not paid yet.
    static let pending = 2
    /// `purchaseState` of a canceled purchase.
    static let canceled = 1
}

extension Txn {
    /// A Play one-time product: its purchase token is its transaction; canceled, voided in full or
    /// refunded to the last unit is refunded; units refunded by quantity are ``refundedQuantity``.
    init(_ p: borrowing PlayProductFact, product: ProductInfo, refunds: PlayProductRefunds) {
        // A one-time product is never a subscription, whatever the policy says.
        let resolvedType: ProductType =
            switch product.type {
            case .consumable?: .consumable
            case .nonRenewing?: .nonRenewing
            default: .nonConsumable
            }
        transactionId = p.purchaseToken
        originalTransactionId = p.purchaseToken
        productId = p.productId
        type = resolvedType
        group = Txn.groupKey(type: resolvedType, product: product, appleGroup: nil, productId: p.productId)
        purchase = p.purchaseTime
        originalPurchase = p.purchaseTime
        expires = nil
        paidExpires = nil
        quantity = max(p.quantity, 1)
        ownership = .purchased
        signed = p.observedAt
        revokedAs = refunds.refundedInFull || p.purchaseState == PlayProductFact.canceled ? .refunded : nil
        refundedQuantity = revokedAs == nil ? refunds.partiallyRefunded : 0
        upgraded = false
        upgradedAt = nil
        period = .normal
        freeTrial = false
        environment = p.environment
        price = nil
        currency = nil
        storefront = p.storefront
        storefrontId = nil
        isV1 = false
        store = .playStore
    }
}

extension Canon {
    /// The Play subscriptions among `indices` (facts of one environment), one per token, sorted by token.
    static func playSubscriptions(
        _ indices: [Int], voided: [String: [PlayVoidedPurchaseFact]], in facts: [Fact], products: inout ProductCache,
        groups: inout Interner
    ) -> [PlaySubscription] {
        var byToken: [String: [PlaySubscriptionFact]] = [:]
        var linked: Set<String> = []
        for index in indices {
            guard case .playSubscription(let p) = facts[index] else { continue }
            byToken[p.purchaseToken, default: []].append(p)
            if let old = p.linkedPurchaseToken, old != p.purchaseToken { linked.insert(old) }
        }
        // The newest snapshot of each token.
        var newest: [String: PlaySubscriptionFact] = [:]
        for (token, versions) in byToken {
            newest[token] = versions.dropFirst().reduce(versions[0]) { best, next in isNewer(next, than: best) ? next : best }
        }
        return byToken.keys.sorted().map { token in
            let versions = byToken[token]!
            let fact = newest[token]!
            let root = chainRoot(of: token, newest: newest)
            let info = products.info(for: fact.productId)
            let group = Txn.groupKey(type: .autoRenewable, product: info, appleGroup: nil, productId: fact.productId)!
            let voidedOrders = voided[token] ?? []
            return PlaySubscription(
                fact: fact, root: root, superseded: linked.contains(token),
                voided: voidedOrders.contains { !$0.isPartial && ($0.orderId == nil || fact.latestOrderId == nil || $0.orderId == fact.latestOrderId) },
                canceledSince: runStart(of: [.canceled], in: versions),
                billingIssueSince: runStart(of: [.inGracePeriod, .onHold], in: versions),
                originalStart: newest[root]?.startTime, group: group, groupId: groups.id(group))
        }
    }

    /// The newer of two snapshots of one token: later `observedAt`, then the content order.
    static func isNewer(_ a: PlaySubscriptionFact, than b: PlaySubscriptionFact) -> Bool {
        if a.observedAt != b.observedAt { return a.observedAt > b.observedAt }
        return contentAfter(a.orderKey, b.orderKey)
    }

    /// The first token of `token`'s `linkedPurchaseToken` chain, following the newest snapshots.
    /// A cycle (no real chain has one) ends at its smallest token, whichever token it is entered from.
    static func chainRoot(of token: String, newest: [String: PlaySubscriptionFact]) -> String {
        var seen: [String] = [token]
        var current = token
        while let previous = newest[current]?.linkedPurchaseToken, previous != current {
            if seen.contains(previous) {
                let cycle = seen[seen.firstIndex(of: previous)!...]
                return cycle.min()!
            }
            seen.append(previous)
            current = previous
        }
        return current
    }

    /// When the current run of `states` began: the earliest snapshot in one of them observed after
    /// every snapshot in another state; nil when the newest snapshot is in none of them.
    static func runStart(of states: [PlaySubscriptionState], in versions: [PlaySubscriptionFact]) -> Int64? {
        let lastOther = versions.filter { !states.contains($0.state) }.map(\.observedAt).max() ?? .min
        return versions.filter { states.contains($0.state) && $0.observedAt > lastOther }.map(\.observedAt).min()
    }
}

extension PlaySubscription {
    /// The grant this purchase gives at `now`, nil while it is pending (or in a state this build
    /// does not know): the state table of docs/engine.md.
    func grant(now: Int64, policy: Policy) -> Grant? {
        let f = fact
        var status: EntitlementStatus
        var graceEnd: Int64?
        var willRenew = f.autoRenewEnabled ?? false
        var issueAt: Int64?
        let expiresAt = f.expiryTime
        let retryEnd = f.expiryTime.map { $0.plus(billingRetryDays * Time.day) }
        switch f.state {
        case .active, .canceled:
            status = f.expiryTime.map { now < $0 } ?? true ? .active : .expired
            if f.state == .canceled { willRenew = false }
        case .inGracePeriod:
            graceEnd = f.expiryTime
            if f.expiryTime.map({ now < $0 }) ?? true {
                status = .gracePeriod
            } else {
                status = retryEnd.map { now < $0 } ?? true ? .billingRetry : .expired
            }
        case .onHold:
            status = retryEnd.map { now < $0 } ?? true ? .billingRetry : .expired
        case .paused:
            // No access while paused; it resumes by itself (Google says so with a notification).
            status = .expired
            willRenew = true
        case .expired:
            status = .expired
            willRenew = false
        default:
            return nil
        }
        // An ended subscription renews no more (a paused one resumes by itself).
        if status == .expired && f.state != .paused { willRenew = false }
        if superseded {
            // Replaced by another token: that one carries the access from its start on.
            status = .expired
            willRenew = false
        }
        if voided {
            status = .refunded
            willRenew = false
        }
        if status == .gracePeriod || status == .billingRetry { issueAt = billingIssueSince ?? f.observedAt }
        let renewsTo = willRenew && f.renewsTo != f.productId ? f.renewsTo : nil
        return Grant(
            status: status, productId: f.productId, productType: .autoRenewable, transactionId: f.purchaseToken,
            originalTransactionId: root, ownership: .purchased, purchaseDate: f.startTime ?? f.observedAt,
            originalPurchaseDate: originalStart ?? f.startTime, expiresAt: expiresAt, gracePeriodExpiresAt: graceEnd,
            willRenew: willRenew, renewsTo: renewsTo, periodType: f.periodType ?? .normal, billingIssueDetectedAt: issueAt,
            unsubscribeDetectedAt: f.state == .canceled && !superseded && !voided ? canceledSince : nil,
            environment: f.environment, subscriptionGroup: group, store: .playStore)
    }

    /// The entitlements it gives: its product's, unless the policy names base plans and this
    /// purchase's is not one of them.
    func entitlements(policy: Policy) -> [String] {
        guard let product = policy.products[fact.productId] else { return [] }
        if let plans = product.basePlans, !plans.contains(fact.basePlanId ?? "") { return [] }
        return product.entitlements
    }
}
