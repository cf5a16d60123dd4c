// Google Play's charged periods as the transactions the rollups read (Metrics.swift,
// ChartContribution.swift): a Play snapshot names the current order (`latestOrderId`), not one
// transaction per period, so each order of a purchase token becomes one transaction, dated like
// the timeline's start and renewals (PlayTimeline.swift) and priced by the snapshots that named
// it. Revenue, MRR and their movement then count Play exactly like the App Store.

/// One charged period of a Play purchase, keyed by the token and order that named it.
struct PlayPeriod {
    var token: String
    var orderId: String?
    var transaction: TransactionFact
    /// The parts of the price taken back by refunds by quantity before any full refund (a
    /// one-time purchase of several units), each when it became known.
    var partialRefunds: [(at: Int64, amount: Int64)] = []
}

/// The Play periods of `facts` (one environment): each subscription order in a granted state, and
/// each paid one-time purchase, with refunds from voided purchases (and canceled products). An
/// order's price is its snapshots' when they have one, else the Orders API's (``PlayOrderFact``).
func playPeriods(_ facts: [Fact], policy: Policy) -> [PlayPeriod] {
    let orderPrices = playOrderPrices(facts)
    var subscriptions: [String: [(fact: PlaySubscriptionFact, index: Int)]] = [:]
    var products: [String: [PlayProductFact]] = [:]
    var voided: [String: [PlayVoidedPurchaseFact]] = [:]
    for (index, fact) in facts.enumerated() {
        switch fact {
        case .playSubscription(let p) where p.state.isGranted: subscriptions[p.purchaseToken, default: []].append((p, index))
        case .playProduct(let p): products[p.purchaseToken, default: []].append(p)
        case .playVoided(let v): voided[v.purchaseToken, default: []].append(v)
        default: break
        }
    }
    var newest: [String: PlaySubscriptionFact] = [:]
    for (token, versions) in subscriptions {
        newest[token] = versions.dropFirst().reduce(versions[0].fact) { Canon.isNewer($1.fact, than: $0) ? $1.fact : $0 }
    }
    var periods: [PlayPeriod] = []
    for token in subscriptions.keys.sorted() {
        let ordered = PlayTimelineFacts.ordered(subscriptions[token]!).map(\.fact)
        let root = Canon.chainRoot(of: token, newest: newest)
        // The snapshots of each order, in the order the orders first appeared.
        var orders: [[PlaySubscriptionFact]] = []
        for snapshot in ordered {
            if let last = orders.last?.first, last.latestOrderId == snapshot.latestOrderId {
                orders[orders.count - 1].append(snapshot)
            } else {
                orders.append([snapshot])
            }
        }
        let voids = voided[token] ?? []
        for (position, snapshots) in orders.enumerated() {
            let first = snapshots[0]
            let start: Int64
            if position == 0 {
                start = first.startTime ?? first.observedAt
            } else {
                // As the timeline dates a renewal: at the boundary the earlier order named when it
                // passed before this answer, else (after a billing issue, a pause, an expiry) by the answer.
                let previous = orders[position - 1].last!
                let ordinary = previous.state == .active || previous.state == .canceled
                start = ordinary ? min(previous.expiryTime ?? first.observedAt, first.observedAt) : first.observedAt
            }
            let priced = snapshots.first { $0.price != nil }
            let ordered = first.latestOrderId.flatMap { orderPrices[PlayOrderKey(token: token, orderId: $0)] }
            let isLast = position == orders.count - 1
            let refund = voids.filter { $0.orderId == first.latestOrderId || ($0.orderId == nil && isLast) }.map(\.voidedTime).min()
            let periodType = first.periodType ?? .normal
            let transaction = TransactionFact(
                transactionId: first.latestOrderId ?? "\(token)@\(start)", originalTransactionId: root, productId: first.productId,
                purchaseDate: start, originalPurchaseDate: newest[root]?.startTime, expiresDate: first.expiryTime,
                productType: .autoRenewable, signedDate: snapshots.last!.observedAt, revocationDate: refund,
                offerType: periodType == .normal ? nil : .introductory,
                offerDiscountType: periodType == .trial ? .freeTrial : periodType == .intro ? .payAsYouGo : nil,
                offerIdentifier: first.offerId, environment: first.environment, storefront: first.storefront,
                transactionReason: position == 0 ? .purchase : .renewal, price: priced?.price ?? ordered?.price,
                currency: priced?.currency ?? ordered?.currency)
            periods.append(PlayPeriod(token: token, orderId: first.latestOrderId, transaction: transaction))
        }
    }
    for token in products.keys.sorted() {
        let versions = products[token]!
        guard let paid = versions.filter({ $0.purchaseState == 0 }).min(by: { $0.observedAt < $1.observedAt }) else { continue }
        let refunds = PlayProductRefunds(snapshots: versions, voids: voided[token] ?? [])
        // Voided in full (a full voiding, the purchase answered canceled, or every unit refunded by quantity).
        let refund = refunds.fullRefund?.at ?? (refunds.refundedInFull ? refunds.steps.last?.at : nil)
        let ordered = paid.orderId.flatMap { orderPrices[PlayOrderKey(token: token, orderId: $0)] }
        let type = policy.products[paid.productId]?.type
        let transaction = TransactionFact(
            transactionId: paid.orderId ?? token, originalTransactionId: token, productId: paid.productId, purchaseDate: paid.purchaseTime,
            quantity: max(paid.quantity, 1), productType: type == .consumable || type == .nonRenewing ? type! : .nonConsumable,
            signedDate: paid.observedAt, revocationDate: refund, environment: paid.environment, storefront: paid.storefront,
            transactionReason: .purchase, price: ordered?.price, currency: ordered?.currency)
        // A refund by quantity takes back its units' share; the one that refunds the last unit is the full refund.
        var partial = ordered.map { refunds.partialRefundAmounts(ofPrice: $0.price) } ?? []
        if refunds.fullRefund == nil, refunds.refundedInFull, !partial.isEmpty { partial.removeLast() }
        periods.append(PlayPeriod(token: token, orderId: paid.orderId, transaction: transaction, partialRefunds: partial))
    }
    return periods
}

/// A purchase token and the order one of its snapshots names.
struct PlayOrderKey: Hashable {
    var token: String
    var orderId: String?
}
