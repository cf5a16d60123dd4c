/// What the developer tells a store about a refund request it reviews.
public enum RefundPreference: String, Sendable, Hashable, CaseIterable {
    case approve = "APPROVE"
    case decline = "DECLINE"
    case neutral = "NEUTRAL"
}

/// The answer to a Google Play pending refund review, decided from the ledger (docs/google-play.md,
/// "Refund reviews"): how much of the order was consumed and which way the developer leans.
public struct RefundReviewAnswer: Sendable, Hashable {
    public var refundPreference: RefundPreference
    /// 0 to 100 000 thousandths of a percent; nil when the ledger cannot tell.
    public var consumptionPercentageMilliunits: Int?

    public init(refundPreference: RefundPreference, consumptionPercentageMilliunits: Int?) {
        self.refundPreference = refundPreference
        self.consumptionPercentageMilliunits = consumptionPercentageMilliunits
    }
}

/// The rule for answering a refund review. Pure: the caller hands in the customer's facts and the time.
public enum RefundReview {
    /// From this share consumed the computed preference is to decline.
    public static let declineFromMilliunits = 50_000

    /// The answer for order `orderId` of the Play purchase `purchaseToken`, from `facts` (the
    /// customer's: the purchase's snapshots and every refund the customer had) at `now`.
    ///
    /// Consumption: a one-time product consumed is 100 %, one never delivered (canceled or
    /// pending) 0 %, otherwise unknown; a subscription order is the share of its paid period
    /// elapsed by `now` (or by its voiding), 100 % once a later order followed it.
    ///
    /// `preference` fixes the preference; nil computes it: APPROVE when the order was never
    /// delivered, NEUTRAL when it is refunded already, DECLINE when at least
    /// ``declineFromMilliunits`` were consumed or the customer had a refund before, else NEUTRAL.
    public static func answer(
        orderId: String, purchaseToken: String, facts: [Fact], preference: RefundPreference?, now: Int64
    ) -> RefundReviewAnswer {
        var subscriptions: [PlaySubscriptionFact] = []
        var products: [PlayProductFact] = []
        var voided: [PlayVoidedPurchaseFact] = []
        var appleRefunds = 0
        for fact in facts {
            switch fact {
            case .playSubscription(let s) where s.purchaseToken == purchaseToken: subscriptions.append(s)
            case .playProduct(let p) where p.purchaseToken == purchaseToken: products.append(p)
            case .playVoided(let v): voided.append(v)
            case .transaction(let t) where t.revocationDate != nil: appleRefunds += 1
            default: break
            }
        }
        let thisOrder = voided.filter { $0.purchaseToken == purchaseToken && ($0.orderId == nil || $0.orderId == orderId) }
        let earlierRefunds = appleRefunds + Set(voided.filter { !thisOrder.contains($0) }.map { $0.orderId ?? $0.purchaseToken }).count
        let voidedAt = thisOrder.map(\.voidedTime).min()
        let (delivered, consumption): (Bool, Int?)
        if let product = products.max(by: { $0.observedAt < $1.observedAt }) {
            delivered = product.purchaseState == 0 || product.consumed
            consumption = product.consumed ? 100_000 : (delivered ? nil : 0)
        } else if !subscriptions.isEmpty {
            delivered = subscriptions.contains { $0.startTime != nil && $0.state != .pending && $0.state != .pendingPurchaseCanceled }
            consumption = subscriptionConsumption(orderId: orderId, subscriptions, until: min(now, voidedAt ?? now))
        } else {
            (delivered, consumption) = (true, nil)
        }
        if let preference { return RefundReviewAnswer(refundPreference: preference, consumptionPercentageMilliunits: consumption) }
        let computed: RefundPreference =
            if !delivered { .approve }
            else if voidedAt != nil { .neutral }
            else if (consumption ?? 0) >= declineFromMilliunits || earlierRefunds > 0 { .decline }
            else { .neutral }
        return RefundReviewAnswer(refundPreference: computed, consumptionPercentageMilliunits: consumption)
    }

    /// The share of the order's paid period elapsed at `until`: the period starts at the
    /// subscription's `startTime` for its first order (no `..N` suffix), else when the ledger first
    /// saw the order, and ends at the latest `expiryTime` reported with it. Nil when no snapshot
    /// names the order.
    static func subscriptionConsumption(orderId: String, _ snapshots: [PlaySubscriptionFact], until: Int64) -> Int? {
        let sorted = snapshots.sorted { $0.observedAt < $1.observedAt }
        guard let firstIndex = sorted.firstIndex(where: { $0.latestOrderId == orderId }) else { return nil }
        // A later order renewed or replaced it: its period is over.
        if sorted[firstIndex...].contains(where: { $0.latestOrderId != nil && $0.latestOrderId != orderId }) { return 100_000 }
        let ofOrder = sorted.filter { $0.latestOrderId == orderId }
        let isFirstOrder = !orderId.contains("..")
        let start = isFirstOrder ? (ofOrder[0].startTime ?? ofOrder[0].observedAt) : ofOrder[0].observedAt
        guard let end = ofOrder.compactMap(\.expiryTime).max(), end > start else { return nil }
        let elapsed = min(max(until - start, 0), end - start)
        return Int(elapsed * 100_000 / (end - start))
    }
}
