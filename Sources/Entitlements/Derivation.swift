// Derivation: canonical facts + policy + now → CustomerState. Iterates sorted arrays only, so the
// randomized order of Swift dictionaries never reaches the output.

/// Whether grant `a` shows instead of `b` for an entitlement: best status, then latest expiry
/// (none = never), then purchased over family-shared, then latest purchase, then transactionId.
func isBetterGrant(_ a: Grant, than b: Grant) -> Bool {
    if a.status.rank != b.status.rank { return a.status.rank < b.status.rank }
    let ea = a.expiresAt ?? .max
    let eb = b.expiresAt ?? .max
    if ea != eb { return ea > eb }
    if a.ownership != b.ownership { return a.ownership == .purchased }
    if a.purchaseDate != b.purchaseDate { return a.purchaseDate > b.purchaseDate }
    if a.transactionId != b.transactionId { return a.transactionId < b.transactionId }
    return a.productId < b.productId
}

/// Whether subscription `a` is a group's current one instead of `b`: best status, then latest purchase.
func isCurrentSubscription(_ a: Grant, over b: Grant) -> Bool {
    if a.status.rank != b.status.rank { return a.status.rank < b.status.rank }
    if a.purchaseDate != b.purchaseDate { return a.purchaseDate > b.purchaseDate }
    return isBetterGrant(a, than: b)
}

struct Derivation {
    let canon: Canon
    let policy: Policy
    let now: Int64
    let environment: Environment

    /// Grants with the entitlements they give.
    private var grants: [(entitlements: [String], grant: Grant)] = []
    /// Instants after `now` at which a group's paid-service count resets (a lapse passes 60 days).
    private var paidServiceResets: [Int64] = []
    /// The configured offers eligible now, and the instants after `now` a win-back window moves.
    private var offers = EligibleOffers()
    private var offerBoundaries: [Int64] = []
    /// Whether a Play subscription gave a grant (purchase history beyond ``Canon/transactions``).
    private var hasPlaySubscriptions = false

    init(canon: Canon, policy: Policy, now: Int64, environment: Environment) {
        self.canon = canon
        self.policy = policy
        self.now = now
        self.environment = environment
    }

    mutating func run() -> CustomerState {
        let txns = canon.transactions
        var subscriptionIndices: [Int] = []
        var nonConsumableIndices: [Int] = []
        var nonRenewingIndices: [Int] = []
        var consumableIndices: [Int] = []
        for index in txns.indices {
            switch txns[index].type {
            case .autoRenewable: subscriptionIndices.append(index)
            case .nonConsumable: nonConsumableIndices.append(index)
            case .nonRenewing: nonRenewingIndices.append(index)
            case .consumable: consumableIndices.append(index)
            }
        }

        let groups = subscriptionGroups(subscriptionIndices)
        let nonConsumables = nonConsumableStates(nonConsumableIndices)
        let nonRenewing = nonRenewingStates(nonRenewingIndices)
        let consumables = consumableBalances(consumableIndices)

        // Entitlements: the best grant for each id.
        var best: [String: Grant] = [:]
        for (entitlements, grant) in grants {
            for id in entitlements {
                if let existing = best[id], !isBetterGrant(grant, than: existing) { continue }
                best[id] = grant
            }
        }
        let (entitlements, promotionBoundaries) = applyingPromotions(
            to: best.keys.sorted().map { EntitlementState(id: $0, grant: best[$0]!) })

        let customerClass: CustomerClass
        if txns.allSatisfy({ $0.type == .consumable }) && !hasPlaySubscriptions {
            // Consumables alone are not purchase history for restore (Apple's restore guidance looks
            // at purchases a restore brings back, where consumables do not appear).
            customerClass = .new
        } else if grants.contains(where: { $0.grant.active }) {
            customerClass = .active
        } else {
            customerClass = .inactive
        }

        let preorder = PreorderState(
            isPreordered: canon.appTransaction?.preorderDate != nil,
            preorderDate: canon.appTransaction?.preorderDate,
            appOriginalPurchaseDate: canon.appTransaction?.originalPurchaseDate)

        return CustomerState(
            environment: environment, evaluatedAt: now, customerClass: customerClass,
            entitlements: entitlements, subscriptionGroups: groups.states,
            nonConsumables: nonConsumables, nonRenewingSubscriptions: nonRenewing,
            consumables: consumables, preorder: preorder, proceeds: proceeds(rates: groups.rates),
            restoreBehavior: policy.restoreBehavior, nextStatusChangeAt: nextStatusChange(extra: promotionBoundaries),
            offers: offers, storefront: latestStorefront())
    }

    /// The earliest future instant at which a grant's status changes by time alone.
    private func nextStatusChange(extra: [Int64]) -> Int64? {
        var next: Int64?
        for (_, grant) in grants {
            let boundary: Int64?
            switch grant.status {
            case .active: boundary = grant.expiresAt
            case .gracePeriod: boundary = grant.gracePeriodExpiresAt
            case .billingRetry: boundary = grant.expiresAt.map { $0.plus(billingRetryDays * Time.day) }
            case .expired, .revoked, .refunded: boundary = nil
            }
            if let boundary, boundary > now { next = min(next ?? boundary, boundary) }
        }
        for reset in paidServiceResets + offerBoundaries + extra where reset > now { next = min(next ?? reset, reset) }
        return next
    }

    // MARK: Auto-renewable subscriptions

    private mutating func subscriptionGroups(_ indices: [Int]) -> (states: [SubscriptionGroupState], rates: [Double]) {
        let txns = canon.transactions
        // Chains (one per originalTransactionId): sort indices once by chain id (indices are in
        // transactionId order, which the index tie-break keeps).
        let sorted = indices.sorted {
            let a = txns[$0].chain, b = txns[$1].chain
            return a != b ? a < b : $0 < $1
        }
        var chainGrants: [(groupId: Int, grant: Grant, renewal: Renewal?)] = []
        var start = 0
        while start < sorted.count {
            var end = start + 1
            let chainId = txns[sorted[start]].chain
            while end < sorted.count && txns[sorted[end]].chain == chainId { end += 1 }
            let chain = sorted[start..<end]
            let (grant, groupId) = subscriptionGrant(chain: chain, chainId: chainId)
            let granted = policy.products[grant.productId]?.entitlements ?? []
            grants.append((granted, grant))
            appendEarlierProducts(chain: chain, current: grant, currentEntitlements: granted)
            chainGrants.append((groupId, grant, canon.renewals[chainId]))
            start = end
        }
        // Play subscriptions: one grant per purchase token; a superseded token's ended grant still
        // shows its entitlements, but only its successor can be its group's current subscription.
        for play in canon.playSubscriptions {
            guard let grant = play.grant(now: now, policy: policy) else { continue }
            grants.append((play.entitlements(policy: policy), grant))
            hasPlaySubscriptions = true
            if !play.superseded { chainGrants.append((play.groupId, grant, nil)) }
        }

        // Group keys: from history and from the policy's auto-renewable products.
        var names: [String] = chainGrants.map { canon.groups.values[$0.groupId] }
        for (_, product) in policy.products where product.type == .autoRenewable {
            if let group = product.subscriptionGroup { names.append(group) }
        }
        names.sort()
        // Per group: its transactions (for offers and paid days).
        var groupTxns = [[Int]](repeating: [], count: canon.groups.count)
        for index in indices where txns[index].groupId >= 0 { groupTxns[txns[index].groupId].append(index) }

        var states: [SubscriptionGroupState] = []
        var rates = [Double](repeating: -1, count: txns.count)
        var previous: String?
        for name in names where name != previous {
            previous = name
            let groupId = canon.groups.lookup(name) ?? -1
            var current: Grant?
            var newestRenewal: Renewal?
            for entry in chainGrants where entry.groupId == groupId {
                if current == nil || isCurrentSubscription(entry.grant, over: current!) { current = entry.grant }
                if let r = entry.renewal {
                    if let n = newestRenewal,
                        n.signed > r.signed || (n.signed == r.signed && n.originalTransactionId > r.originalTransactionId)
                    {
                        continue
                    }
                    newestRenewal = r
                }
            }
            let members = (groupId >= 0 ? groupTxns[groupId] : []).sorted {
                let a = txns[$0].purchase, b = txns[$1].purchase
                return a != b ? a < b : $0 < $1
            }
            let paid = paidService(members, rates: &rates)
            let customerClass: CustomerClass =
                current == nil ? .new : (current!.active ? .active : .inactive)
            // Offers are signed with the app's real key: an environment Apple does not sign makes
            // no one eligible for any.
            if environment.isSignedByApple {
                let groupOffers = groupOffers(group: name, hasHistory: !members.isEmpty, current: current)
                offers.append(groupOffers.offers)
                offerBoundaries += groupOffers.boundaries
            }
            states.append(
                SubscriptionGroupState(
                    id: name, customerClass: customerClass, current: current,
                    pendingChange: change(from: current?.productId, to: current?.renewsTo),
                    introOfferEligible: members.isEmpty,
                    promotionalOfferEligible: !members.isEmpty,
                    winBackOfferIds: newestRenewal?.winBack ?? [],
                    paidServiceDays: Int(paid / Time.day),
                    proceedsRate: policy.smallBusiness || paid >= paidServiceYearDays * Time.day ? 0.85 : 0.70))
        }
        offers.sort()
        return (states, rates)
    }

    /// The grant of one subscription (all transactions sharing an originalTransactionId).
    private func subscriptionGrant(chain: ArraySlice<Int>, chainId: Int) -> (Grant, Int) {
        let txns = canon.transactions
        // Current: the latest non-upgraded transaction; only if all were upgraded, the latest of those.
        var currentIndex = chain.first!
        for index in chain.dropFirst() {
            let better: Bool
            if txns[index].upgraded != txns[currentIndex].upgraded {
                better = !txns[index].upgraded
            } else if txns[index].purchase != txns[currentIndex].purchase {
                better = txns[index].purchase > txns[currentIndex].purchase
            } else {
                // Chain indices are in transactionId order, so a full tie keeps the smaller id.
                better = (txns[index].expires ?? .max) > (txns[currentIndex].expires ?? .max)
            }
            if better { currentIndex = index }
        }
        let current = txns[currentIndex]
        let renewal = canon.renewals[chainId]
        let evidence = canon.evidence[chainId]
        let otid = current.originalTransactionId

        var status: EntitlementStatus
        var expiresAt = current.expires
        var graceEnd: Int64?
        var issueAt: Int64?
        if let revoked = current.revokedAs {
            status = revoked
        } else if current.upgraded {
            status = .expired
            if let upgradedAt = current.upgradedAt { expiresAt = min(expiresAt ?? upgradedAt, upgradedAt) }
        } else if let expires = current.expires, now >= expires {
            // Renewal info signed before this period began describes an earlier period.
            let relevant = renewal.flatMap { $0.signed >= current.purchase ? $0 : nil }
            // In retry when the newest billing evidence since this period began is a failure
            // (renewal info in billing retry, DID_FAIL_TO_RENEW) rather than a success.
            var inRetry = evidence.issueSince(current.purchase) != nil
            // An EXPIRED notification for this period, after the last failure, ends the retry.
            // On a tie with renewal info still in retry, the notification is the later fact.
            if evidence.expiredNotice >= expires && evidence.expiredNotice >= evidence.newestIssue { inRetry = false }
            if inRetry {
                graceEnd = relevant?.graceExpires
                let isV1 = relevant?.isV1 ?? current.isV1
                if graceEnd == nil && isV1 && policy.fallbackGraceDays > 0 {
                    graceEnd = expires.plus(Int64(policy.fallbackGraceDays).times(Time.day))
                }
                let graceOver = evidence.graceExpiredNotice >= expires
                if let grace = graceEnd, now < grace, !graceOver {
                    status = .gracePeriod
                } else if now < expires.plus(billingRetryDays * Time.day) {
                    status = .billingRetry
                } else {
                    status = .expired
                }
                if status != .expired {
                    issueAt = evidence.issueSince(current.purchase) ?? expires
                }
            } else {
                status = .expired
            }
        } else {
            status = .active
        }

        let autoRenew = evidence.autoRenew
        let willRenew: Bool? =
            switch status {
            case .active, .gracePeriod, .billingRetry: autoRenew
            case .expired, .refunded, .revoked: false
            }
        var renewsTo: String?
        if willRenew == true, let target = renewal?.autoRenewProductId, target != current.productId {
            renewsTo = target
        }
        // Price increase: the newer of the renewal info and the PRICE_INCREASE notifications.
        var priceIncrease = renewal?.priceIncrease
        if evidence.priceIncreaseDate > (renewal?.signed ?? .min) { priceIncrease = evidence.priceIncrease }

        let grant = Grant(
            status: status, productId: current.productId, productType: .autoRenewable,
            transactionId: current.transactionId, originalTransactionId: otid, ownership: current.ownership,
            purchaseDate: current.purchase, originalPurchaseDate: current.originalPurchase, expiresAt: expiresAt,
            gracePeriodExpiresAt: graceEnd, willRenew: willRenew, renewsTo: renewsTo, periodType: current.period,
            billingIssueDetectedAt: issueAt, unsubscribeDetectedAt: autoRenew == false ? evidence.unsubscribedAt : nil,
            priceIncrease: priceIncrease, environment: current.environment,
            subscriptionGroup: current.group)
        return (grant, current.groupId)
    }

    /// Entitlements of products the subscription had before (an upgrade or downgrade ended them) and
    /// the current product does not give: shown as `expired` at the end of their last period, so they
    /// don't vanish from the state.
    private mutating func appendEarlierProducts(chain: ArraySlice<Int>, current: Grant, currentEntitlements: [String]) {
        let txns = canon.transactions
        var lastByProduct: [String: Int] = [:]
        for index in chain where txns[index].productId != current.productId {
            let t = txns[index]
            if let existing = lastByProduct[t.productId] {
                let e = txns[existing]
                if (t.purchase, t.transactionId) < (e.purchase, e.transactionId) { continue }
            }
            lastByProduct[t.productId] = index
        }
        for productId in lastByProduct.keys.sorted() {
            let t = txns[lastByProduct[productId]!]
            let extra = (policy.products[productId]?.entitlements ?? []).filter { !currentEntitlements.contains($0) }
            guard !extra.isEmpty else { continue }
            var end = t.expires
            if let upgradedAt = t.upgradedAt { end = min(end ?? upgradedAt, upgradedAt) }
            // Never later than the current period's start: the current product replaced it.
            end = min(end ?? current.purchaseDate, current.purchaseDate)
            let grant = Grant(
                status: t.revokedAs ?? .expired, productId: t.productId, productType: .autoRenewable,
                transactionId: t.transactionId, originalTransactionId: t.originalTransactionId,
                ownership: t.ownership, purchaseDate: t.purchase, originalPurchaseDate: t.originalPurchase,
                expiresAt: end, willRenew: false, periodType: t.period, environment: t.environment,
                subscriptionGroup: t.group)
            grants.append((extra, grant))
        }
    }

    /// Upgrade, downgrade or crossgrade by the policy's levels (1 = highest).
    private func change(from: String?, to: String?) -> ProductChange? {
        guard let from, let to, from != to,
            let a = policy.products[from]?.level, let b = policy.products[to]?.level
        else { return nil }
        if b < a { return .upgrade }
        if b > a { return .downgrade }
        return .crossgrade
    }

    /// Paid milliseconds of service in one group, recording each transaction's proceeds rate.
    ///
    /// `members` is in purchase order. Paid periods are purchased, not free-trial, not refunded or
    /// revoked; an upgraded period ends at the upgrade. A period counts whole once bought, to its
    /// original end: it is paid in advance, and the whole of it is what the next renewal's rate
    /// depends on; a renewal-date extension is not paid service (but is no lapse either). The days
    /// between a failed renewal and a recovery inside billing grace count; after grace they don't.
    /// So the count changes only with facts — and at one scheduled instant, when a lapse passes
    /// 60 days and the count resets (recorded for `nextStatusChangeAt`): a stored answer stays
    /// exact until then.
    private mutating func paidService(_ members: [Int], rates: inout [Double]) -> Int64 {
        let txns = canon.transactions
        let lapse = paidServiceLapseDays * Time.day
        let year = paidServiceYearDays * Time.day
        var accumulated: Int64 = 0
        // The end of the paid service counted so far, and the latest end of service (extensions
        // included) with the period that reached it: lapses are measured from the latter.
        var countedEnd: Int64?
        var served: (end: Int64, index: Int)?
        for index in members {
            let t = txns[index]
            let purchase = t.purchase
            if let served, purchase.minus(served.end) > lapse { accumulated = 0 }
            rates[index] = policy.smallBusiness || accumulated >= year ? 0.85 : 0.70
            guard t.ownership == .purchased, !t.freeTrial, t.revokedAs == nil else { continue }
            var paidEnd = t.paidExpires ?? purchase
            var serviceEnd = t.expires ?? purchase
            if let upgradedAt = t.upgradedAt {
                paidEnd = min(paidEnd, upgradedAt)
                serviceEnd = min(serviceEnd, upgradedAt)
            }
            var start = purchase
            if let served, served.end < purchase, purchase.minus(served.end) <= lapse,
                recoveredInGrace(after: served, at: index)
            {
                start = served.end
            }
            start = max(start, countedEnd ?? start)
            if paidEnd > start { accumulated = accumulated.plus(paidEnd.minus(start)) }
            countedEnd = max(countedEnd ?? paidEnd, paidEnd)
            if served == nil || serviceEnd > served!.end { served = (serviceEnd, index) }
        }
        if let served, now.minus(served.end) > lapse { return 0 }
        if let served, accumulated > 0 { paidServiceResets.append(served.end.plus(lapse + 1)) }
        return accumulated
    }

    /// Whether transaction `index` renewed its subscription inside the billing grace period that
    /// followed the period `previous` (same subscription), ending at `previous.end`.
    private func recoveredInGrace(after previous: (end: Int64, index: Int), at index: Int) -> Bool {
        let txns = canon.transactions
        let before = txns[previous.index]
        guard before.chain == txns[index].chain else { return false }
        var fallback: Int64?
        if before.isV1 && policy.fallbackGraceDays > 0 {
            fallback = previous.end.plus(Int64(policy.fallbackGraceDays).times(Time.day))
        }
        return canon.evidence[before.chain].recoveredInGrace(
            periodStart: before.purchase, periodEnd: previous.end, recovery: txns[index].purchase,
            fallbackGraceEnd: fallback)
    }

    // MARK: Other products

    private func revocableGrant(_ t: Txn, status: EntitlementStatus, expiresAt: Int64?) -> Grant {
        Grant(
            status: status, productId: t.productId, productType: t.type, transactionId: t.transactionId,
            originalTransactionId: t.originalTransactionId, ownership: t.ownership, purchaseDate: t.purchase,
            originalPurchaseDate: t.originalPurchase, expiresAt: expiresAt, periodType: t.period,
            environment: t.environment, subscriptionGroup: nil, store: t.store)
    }

    private mutating func nonConsumableStates(_ indices: [Int]) -> [NonConsumableState] {
        let txns = canon.transactions
        var best: [String: Grant] = [:]
        for index in indices {
            let t = txns[index]
            let grant = revocableGrant(t, status: t.revokedAs ?? .active, expiresAt: nil)
            grants.append((policy.products[t.productId]?.entitlements ?? [], grant))
            if let existing = best[t.productId], !isBetterGrant(grant, than: existing) { continue }
            best[t.productId] = grant
        }
        return best.keys.sorted().map { NonConsumableState(productId: $0, owned: best[$0]!.active, grant: best[$0]!) }
    }

    private mutating func nonRenewingStates(_ indices: [Int]) -> [NonRenewingState] {
        let txns = canon.transactions
        var byStack: [String: [Int]] = [:]
        for index in indices { byStack[txns[index].group ?? txns[index].productId, default: []].append(index) }
        var states: [NonRenewingState] = []
        for id in byStack.keys.sorted() {
            let members = byStack[id]!.sorted {
                let a = txns[$0], b = txns[$1]
                return a.purchase != b.purchase ? a.purchase < b.purchase : a.transactionId < b.transactionId
            }
            var runEnd: Int64?
            var counted: [String] = []
            var entitlements: [String] = []
            var last: Txn?
            var best: Grant?
            for index in members {
                let t = txns[index]
                if let revoked = t.revokedAs {
                    let grant = revocableGrant(t, status: revoked, expiresAt: nil)
                    grants.append((policy.products[t.productId]?.entitlements ?? [], grant))
                    if best == nil || isBetterGrant(grant, than: best!) { best = grant }
                    continue
                }
                // Stacking: a purchase starts when the previous run ends, if that is later.
                let start = max(t.purchase, runEnd ?? t.purchase)
                let end = policy.products[t.productId]?.duration?.added(to: start) ?? t.expires ?? start
                runEnd = max(runEnd ?? end, end)
                counted.append(t.transactionId)
                for e in policy.products[t.productId]?.entitlements ?? [] where !entitlements.contains(e) {
                    entitlements.append(e)
                }
                last = t
            }
            if let t = last, let end = runEnd {
                let grant = revocableGrant(t, status: now < end ? .active : .expired, expiresAt: end)
                grants.append((entitlements.sorted(), grant))
                if best == nil || isBetterGrant(grant, than: best!) { best = grant }
            }
            states.append(
                NonRenewingState(
                    id: id, active: best!.active, expiresAt: last == nil ? nil : runEnd, transactionIds: counted,
                    grant: best!))
        }
        return states
    }

    private func proceeds(rates: [Double]) -> [ProceedsEstimate] {
        let txns = canon.transactions
        var result: [ProceedsEstimate] = []
        result.reserveCapacity(txns.count)
        for index in txns.indices where txns[index].ownership == .purchased {
            let rate = index < rates.count && rates[index] > 0 ? rates[index] : (policy.smallBusiness ? 0.85 : 0.70)
            result.append(
                ProceedsEstimate(
                    transactionId: txns[index].transactionId, productId: txns[index].productId, rate: rate,
                    refunded: txns[index].revokedAs != nil, price: txns[index].price, currency: txns[index].currency))
        }
        return result
    }
}
