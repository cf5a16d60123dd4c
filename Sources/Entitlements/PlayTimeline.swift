// The timeline of Google Play purchases: the same event vocabulary as Apple's, read from the
// snapshots of each purchase token in observation order. A snapshot says only what Google answered
// when asked, so a change is dated by the period boundary it names when that came before the
// answer, else by the answer (docs/events.md, "Google Play").

/// The Play facts of one environment, as the timeline collects them.
struct PlayTimelineFacts {
    var subscriptions: [String: [(fact: PlaySubscriptionFact, index: Int)]] = [:]
    var products: [String: [(fact: PlayProductFact, index: Int)]] = [:]
    var voided: [String: [(fact: PlayVoidedPurchaseFact, index: Int)]] = [:]

    /// Snapshots of one token, oldest first, one per distinct content (duplicates are one fact).
    static func ordered(_ versions: [(fact: PlaySubscriptionFact, index: Int)]) -> [(fact: PlaySubscriptionFact, index: Int)] {
        var result: [(fact: PlaySubscriptionFact, index: Int)] = []
        for version in versions.sorted(by: { Canon.isNewer($1.fact, than: $0.fact) || ($0.fact == $1.fact && $0.index < $1.index) })
        where result.last?.fact != version.fact {
            result.append(version)
        }
        return result
    }
}

extension PlaySubscriptionState {
    /// A state Google gives once the purchase was paid for (pending and unknown states grant nothing).
    public var isGranted: Bool { [.active, .canceled, .inGracePeriod, .onHold, .paused, .expired].contains(self) }
    /// Google is retrying the payment.
    var isBillingIssue: Bool { self == .inGracePeriod || self == .onHold }
}

extension TimelineBuilder {
    mutating func collectPlay(_ fact: Fact, index: Int) {
        switch fact {
        case .playSubscription(let p): play.subscriptions[p.purchaseToken, default: []].append((p, index))
        case .playProduct(let p): play.products[p.purchaseToken, default: []].append((p, index))
        case .playVoided(let v): play.voided[v.purchaseToken, default: []].append((v, index))
        default: break
        }
    }

    /// A Play subscription snapshot as a timeline transaction of the chain `root`.
    static func playTx(_ f: PlaySubscriptionFact, index: Int, root: String) -> TimelineTx {
        let periodType = f.periodType == .trial ? "trial" : f.periodType == .intro ? "intro" : "normal"
        var details = ["store": PurchaseStore.playStore.rawValue, "periodType": periodType, "transactionId": f.purchaseToken]
        if let price = f.price, f.currency != nil { details["price"] = decimal(price) }
        details["currency"] = f.price == nil ? nil : f.currency
        details["orderId"] = f.latestOrderId
        details["storefront"] = f.storefront
        details["basePlanId"] = f.basePlanId
        details["offerId"] = f.offerId
        var tx = TimelineTx(
            id: f.purchaseToken, otid: root, productId: f.productId, type: .autoRenewable, purchaseDate: f.startTime ?? f.observedAt,
            originalPurchaseDate: nil, expiresDate: f.expiryTime, signedDate: f.observedAt, revocationDate: nil, familyRevoke: false,
            isUpgraded: false, details: details, index: index)
        tx.revealed = (f.observedAt, index)
        return tx
    }

    /// Every Play purchase's events.
    mutating func playEvents() {
        let first = events.count
        defer { withoutUngrantedPlans(from: first) }
        var snapshots: [String: [(fact: PlaySubscriptionFact, index: Int)]] = [:]
        var newest: [String: PlaySubscriptionFact] = [:]
        for (token, versions) in play.subscriptions {
            let ordered = PlayTimelineFacts.ordered(versions).filter { $0.fact.state.isGranted }
            guard !ordered.isEmpty else { continue }
            snapshots[token] = ordered
            newest[token] = ordered.last!.fact
        }
        // The tokens of each linkedPurchaseToken chain, and when each replaced token's successor began.
        var chains: [String: [String]] = [:]
        var replacedAt: [String: Int64] = [:]
        for token in snapshots.keys.sorted() {
            chains[Canon.chainRoot(of: token, newest: newest), default: []].append(token)
            let f = newest[token]!
            if let old = f.linkedPurchaseToken, old != token {
                replacedAt[old] = min(replacedAt[old] ?? .max, f.startTime ?? f.observedAt)
            }
        }
        for root in chains.keys.sorted() {
            playChain(root: root, tokens: chains[root]!, snapshots: snapshots, newest: newest)
        }
        for token in snapshots.keys.sorted() {
            playSnapshots(snapshots[token]!, root: Canon.chainRoot(of: token, newest: newest), replacedAt: replacedAt[token])
            playVoided(token, subscription: snapshots[token]!, root: Canon.chainRoot(of: token, newest: newest))
        }
        for token in play.products.keys.sorted() { playProduct(token) }
    }

    /// A product whose policy names `basePlans` grants nothing on another plan: the events of a
    /// purchase on one name none of its entitlements (a product change still names the old product's).
    private mutating func withoutUngrantedPlans(from first: Int) {
        for i in first..<events.count {
            guard let plans = policy.products[events[i].productId]?.basePlans, !plans.contains(events[i].details["basePlanId"] ?? "")
            else { continue }
            let before = events[i].type == .subscriptionProductChanged ? events[i].details["from"] : nil
            events[i].entitlements = Set(before.flatMap { policy.products[$0]?.entitlements } ?? []).sorted()
        }
    }

    /// A chain's start, and each replacing token's product change (or resubscription to the same product).
    private mutating func playChain(
        root: String, tokens: [String], snapshots: [String: [(fact: PlaySubscriptionFact, index: Int)]],
        newest: [String: PlaySubscriptionFact]
    ) {
        func start(_ token: String) -> Int64 { snapshots[token]![0].fact.startTime ?? snapshots[token]![0].fact.observedAt }
        // It started with its root token when known, else with the earliest token known.
        let first = snapshots[root] != nil ? root : tokens.min { (start($0), $0) < (start($1), $1) }!
        let opening = snapshots[first]![0]
        emit(.subscriptionStarted, at: start(first), tx: Self.playTx(opening.fact, index: opening.index, root: root), subject: root)
        for token in tokens where token != first {
            guard let old = newest[token]?.linkedPurchaseToken, let previous = newest[old] else { continue }
            let opening = snapshots[token]![0]
            let tx = Self.playTx(opening.fact, index: opening.index, root: root)
            let involved = [(date: previous.observedAt, index: snapshots[old]!.last!.index)]
            if previous.productId != opening.fact.productId {
                emit(.subscriptionProductChanged, at: start(token), tx: tx, subject: root, also: involved,
                     details: ["from": previous.productId, "to": opening.fact.productId, "timing": "immediate"],
                     products: [previous.productId])
            } else {
                emit(.subscriptionRenewed, at: start(token), tx: tx, subject: root, also: involved)
            }
        }
    }

    /// What changed between successive snapshots of one token: renewals, auto-renew switches,
    /// billing issues, recoveries, the end of grace, pauses and resumptions, expiry. Nothing once a successor token took
    /// over (`replacedAt`): the successor speaks for the subscription.
    private mutating func playSnapshots(_ ordered: [(fact: PlaySubscriptionFact, index: Int)], root: String, replacedAt: Int64?) {
        let voids = (play.voided[ordered[0].fact.purchaseToken] ?? []).filter { !$0.fact.isPartial }
        for (previous, next) in zip(ordered, ordered.dropFirst()) {
            let p = previous.fact
            let s = next.fact
            if let replacedAt, s.observedAt >= replacedAt { return }
            let tx = Self.playTx(s, index: next.index, root: root)
            // A boundary the earlier snapshot named, when it passed before the later one was observed.
            let boundary = p.expiryTime.map { min($0, s.observedAt) } ?? s.observedAt
            // A pause ends when Google resumes it (`autoResumeTime`, once passed), else by the answer that shows it.
            let resumedAt = p.state == .paused ? max(p.observedAt, min(p.autoResumeTime ?? s.observedAt, s.observedAt)) : nil
            if let was = p.expiryTime, let now = s.expiryTime, now > was, s.state == .active || s.state == .canceled {
                if p.state.isBillingIssue {
                    emit(.subscriptionRenewed, at: s.observedAt, tx: tx, subject: root)
                    emit(.subscriptionRecovered, at: s.observedAt, tx: tx, subject: root)
                } else if let resumedAt {
                    emit(.subscriptionRenewed, at: resumedAt, tx: tx, subject: root)
                } else if p.state == .expired {
                    // Restarted after it ended (the same token granting again): a renewal of the
                    // subscription, never a second start, dated by the answer that showed it.
                    emit(.subscriptionRenewed, at: s.observedAt, tx: tx, subject: root)
                } else {
                    emit(.subscriptionRenewed, at: boundary, tx: tx, subject: root)
                }
            }
            if let resumedAt, [.active, .canceled, .inGracePeriod, .onHold].contains(s.state) {
                emit(.subscriptionResumed, at: resumedAt, tx: tx, subject: root)
            }
            if s.state == .paused && p.state != .paused && p.state != .expired {
                var details: [String: String] = [:]
                if let resume = s.autoResumeTime { details["resumesAt"] = String(resume) }
                emit(.subscriptionPaused, at: boundary, tx: tx, subject: root, details: details)
            }
            let live: Set<PlaySubscriptionState> = [.active, .canceled, .inGracePeriod, .onHold]
            if live.contains(p.state), live.contains(s.state), let was = Self.autoRenews(p), let now = Self.autoRenews(s), was != now {
                emit(now ? .subscriptionAutoRenewEnabled : .subscriptionAutoRenewDisabled, at: s.observedAt, tx: tx, subject: root)
            }
            if s.state.isBillingIssue && !p.state.isBillingIssue && p.state != .expired {
                var details = ["kind": s.state == .inGracePeriod ? "gracePeriod" : "billingRetry"]
                if s.state == .inGracePeriod, let grace = s.expiryTime { details["gracePeriodExpiresAt"] = String(grace) }
                emit(.subscriptionBillingIssue, at: boundary, tx: tx, subject: root, details: details)
            }
            if p.state == .inGracePeriod && s.state == .onHold {
                emit(.subscriptionGracePeriodExpired, at: boundary, tx: tx, subject: root)
            }
            // A voided current order already ended it (`refunded`).
            let voided = voids.contains { ($0.fact.orderId == nil || $0.fact.orderId == s.latestOrderId) && $0.fact.voidedTime <= s.observedAt }
            if s.state == .expired && p.state != .expired && !voided {
                let reason = p.state.isBillingIssue ? "billingError" : Self.autoRenews(p) == false ? "voluntary" : "unknown"
                emit(.subscriptionExpired, at: p.state.isBillingIssue ? s.observedAt : boundary, tx: tx, subject: root,
                     details: ["reason": reason])
            }
        }
    }

    /// Whether the snapshot renews by itself: nil for a prepaid plan; a canceled one does not.
    static func autoRenews(_ f: PlaySubscriptionFact) -> Bool? {
        guard let enabled = f.autoRenewEnabled else { return nil }
        return enabled && f.state != .canceled
    }

    /// A voided order of a subscription token: `refunded` (whichever period it paid for).
    private mutating func playVoided(_ token: String, subscription: [(fact: PlaySubscriptionFact, index: Int)], root: String) {
        // A quantity-based partial refund voids units, not a subscription's period.
        let voids = Set((play.voided[token] ?? []).map(\.fact).filter { !$0.isPartial })
        for v in voids.sorted(by: { ($0.voidedTime, $0.orderId ?? "") < ($1.voidedTime, $1.orderId ?? "") }) {
            let index = play.voided[token]!.filter { $0.fact == v }.map(\.index).min()!
            // The snapshot of the order voided when one is known, else the first.
            let period = subscription.first { $0.fact.latestOrderId == v.orderId } ?? subscription[0]
            var tx = Self.playTx(period.fact, index: period.index, root: root)
            tx.details["orderId"] = v.orderId ?? tx.details["orderId"]
            emit(.subscriptionRefunded, at: v.voidedTime, tx: tx, subject: v.orderId ?? token,
                 also: [(date: v.voidedTime, index: index)], details: ["reason": v.voidedReason == 7 ? "chargeback" : "refund"])
        }
    }

    /// A one-time product: `purchase.completed` once paid, `purchase.refunded` when voided or canceled after.
    private mutating func playProduct(_ token: String) {
        let versions = play.products[token]!
        let sorted = versions.sorted { a, b in
            a.fact.observedAt != b.fact.observedAt ? a.fact.observedAt < b.fact.observedAt
                : contentAfter(b.fact.orderKey, a.fact.orderKey) || (a.fact == b.fact && a.index < b.index)
        }
        guard let paid = sorted.first(where: { $0.fact.purchaseState == 0 }) else { return }
        func tx(_ version: (fact: PlayProductFact, index: Int)) -> TimelineTx {
            let f = version.fact
            var details = ["store": PurchaseStore.playStore.rawValue, "periodType": "normal", "transactionId": f.purchaseToken]
            details["orderId"] = f.orderId
            details["storefront"] = f.storefront
            var t = TimelineTx(
                id: f.purchaseToken, otid: f.purchaseToken, productId: f.productId, type: policy.products[f.productId]?.type ?? .nonConsumable,
                purchaseDate: f.purchaseTime, originalPurchaseDate: nil, expiresDate: nil, signedDate: f.observedAt, revocationDate: nil,
                familyRevoke: false, isUpgraded: false, details: details, index: version.index)
            t.revealed = (f.observedAt, version.index)
            return t
        }
        emit(.purchaseCompleted, at: paid.fact.purchaseTime, tx: tx(paid), subject: token)
        let voids = play.voided[token] ?? []
        let refunds = PlayProductRefunds(snapshots: versions, voids: voids)
        func reason(_ index: Int) -> String {
            voids.first { $0.index == index }?.fact.voidedReason == 7 ? "chargeback" : "refund"
        }
        // Each rise of the units refunded by quantity, then the refund of what was left.
        for step in refunds.steps {
            emit(.purchaseRefunded, at: step.at, tx: tx(paid), subject: token, also: [(date: step.at, index: step.cause)],
                 details: ["reason": reason(step.cause), "refundType": "quantity", "quantity": String(step.quantity),
                           "remainingQuantity": String(step.remaining)])
        }
        guard let full = refunds.fullRefund, refunds.partiallyRefunded < refunds.quantity else { return }
        var details = ["reason": reason(full.cause)]
        if refunds.partiallyRefunded > 0 {
            details["quantity"] = String(refunds.quantity - refunds.partiallyRefunded)
            details["remainingQuantity"] = "0"
        }
        if let void = voids.first(where: { $0.index == full.cause }) {
            emit(.purchaseRefunded, at: full.at, tx: tx(paid), subject: token, also: [(date: full.at, index: void.index)], details: details)
        } else if let canceled = versions.first(where: { $0.index == full.cause }) {
            emit(.purchaseRefunded, at: full.at, tx: tx(canceled), subject: token, details: details)
        }
    }
}
