// Refunds of Google Play one-time purchases, whole or by quantity (docs/engine.md, "Partial
// refunds"). Google reports a quantity-based partial refund of a multi-quantity purchase three
// ways: a voided-purchase notification with `refundType` 2 (no quantity), an entry of
// `purchases.voidedpurchases.list` with `voidedQuantity` (listed only when asked with
// `includeQuantityBasedPartialRefund`), and `purchases.products.get`'s `refundableQuantity` (the
// units not refunded yet, partial and full refunds taken off). The server stores a fresh
// `products.get` answer with each of the first two, so the count comes from Google's answers, one
// cumulative figure: shuffled or repeated delivery, and one refund reported by both the
// notification and the list, count once.

extension PlayVoidedPurchaseFact {
    /// A quantity-based partial refund: it voids some units, never the whole purchase by itself.
    public var isPartial: Bool { refundType == 2 || voidedQuantity != nil }
}

/// What refunds left of one Play one-time purchase.
public struct PlayProductRefunds: Hashable, Sendable {
    /// One rise of the refunded units: when it was first known, by how many, and what was left.
    public struct Step: Hashable, Sendable {
        public var at: Int64
        public var quantity: Int
        public var remaining: Int
        /// The fact that showed it (its index among the facts given).
        public var cause: Int
    }

    /// When a purchase was voided in full, and the fact that said so.
    public struct FullRefund: Hashable, Sendable {
        public var at: Int64
        public var cause: Int
    }

    /// Units bought.
    public let quantity: Int
    /// Units refunded by quantity-based partial refunds (before any full refund).
    public let partiallyRefunded: Int
    /// When the purchase was voided in full (a full voiding, or the purchase answered canceled),
    /// and the fact that said so (its index among the facts given); nil when it was not.
    public let fullRefund: FullRefund?
    /// The partial refunds in the order they became known.
    public let steps: [Step]

    /// Nothing is left: voided in full, or every unit refunded.
    public var refundedInFull: Bool { fullRefund != nil || partiallyRefunded >= quantity }
    /// Units the customer keeps.
    public var remaining: Int { refundedInFull ? 0 : quantity - partiallyRefunded }
    /// Units refunded in all.
    public var refunded: Int { quantity - remaining }

    /// The refunds of one purchase token from its snapshots and voidings (any order, duplicates allowed).
    public init(snapshots: [PlayProductFact], voids: [PlayVoidedPurchaseFact]) {
        self.init(snapshots: snapshots.enumerated().map { ($1, $0) }, voids: voids.enumerated().map { ($1, snapshots.count + $0) })
    }

    init(snapshots: [(fact: PlayProductFact, index: Int)], voids: [(fact: PlayVoidedPurchaseFact, index: Int)]) {
        let bought = max(snapshots.map(\.fact.quantity).max() ?? 1, 1)
        quantity = bought
        // Oldest answer first; one answer given twice is one.
        let ordered = snapshots.sorted { a, b in
            a.fact.observedAt != b.fact.observedAt ? a.fact.observedAt < b.fact.observedAt
                : contentAfter(b.fact.orderKey, a.fact.orderKey) || (a.fact == b.fact && a.index < b.index)
        }
        let fullVoid = voids.filter { !$0.fact.isPartial }.min { ($0.fact.voidedTime, $0.index) < ($1.fact.voidedTime, $1.index) }
        // A voiding says when; without one, the first answer that shows the purchase canceled after it was paid.
        let paidAt = ordered.first { $0.fact.purchaseState == 0 }?.fact.observedAt ?? .min
        let canceled = ordered.first { $0.fact.purchaseState == PlayProductFact.canceled && $0.fact.observedAt >= paidAt }
        let full = fullVoid.map { FullRefund(at: $0.fact.voidedTime, cause: $0.index) }
            ?? canceled.map { FullRefund(at: $0.fact.observedAt, cause: $0.index) }
        fullRefund = full
        // Google's count: the units each answer says are refunded (before any full refund), first
        // known when the server was told. The list's units count only when no answer says
        // (`refundableQuantity` absent): the same refund reported both ways counts once.
        var steps: [Step] = []
        var level = 0
        func rise(to shown: Int, at instant: Int64, cause: Int) {
            let shown = min(max(shown, 0), bought)
            guard shown > level else { return }
            steps.append(Step(at: instant, quantity: shown - level, remaining: bought - shown, cause: cause))
            level = shown
        }
        if ordered.contains(where: { $0.fact.refundableQuantity != nil }) {
            for version in ordered where version.fact.purchaseState != PlayProductFact.canceled {
                guard let refundable = version.fact.refundableQuantity, full.map({ version.fact.observedAt < $0.at }) ?? true else { continue }
                rise(to: bought.minus(refundable), at: version.fact.observedAt, cause: version.index)
            }
        } else {
            // Each distinct listed refund once, in the order Google voided them.
            var listed: [PlayVoidedPurchaseFact: Int] = [:]
            for void in voids where (void.fact.voidedQuantity ?? 0) > 0 && full.map({ void.fact.voidedTime < $0.at }) ?? true {
                listed[void.fact] = min(listed[void.fact] ?? .max, void.index)
            }
            var units = 0
            let byTime = listed.sorted { a, b in
                (a.key.voidedTime, a.key.orderId ?? "", a.key.voidedQuantity!, a.key.voidedReason ?? -1, a.key.voidedSource ?? -1)
                    < (b.key.voidedTime, b.key.orderId ?? "", b.key.voidedQuantity!, b.key.voidedReason ?? -1, b.key.voidedSource ?? -1)
            }
            for (void, index) in byTime {
                units = units.plus(void.voidedQuantity!)
                rise(to: units, at: void.voidedTime, cause: index)
            }
        }
        partiallyRefunded = level
        self.steps = steps
    }

    /// The part of `price` (milli-units, for all units) refunded: proportional to the units
    /// refunded, rounded down, without overflow.
    public func refundedAmount(ofPrice price: Int64) -> Int64 {
        Self.share(of: price, units: refunded, quantity: quantity)
    }
}

/// The newest snapshot the ledger holds of one Play purchase token, as the catch-up reads it.
public enum PlayStoredPurchase: Sendable, Equatable {
    case subscription(PlaySubscriptionFact)
    /// `final` when nothing Google could still say changes it: canceled, voided in full, or
    /// refunded to the last unit.
    case product(PlayProductFact, final: Bool)

    /// Reads `facts` (those of one token, in any order); nil when none is a snapshot of `token`.
    public init?(_ facts: [Fact], token: String) {
        var subscription: PlaySubscriptionFact?
        var products: [PlayProductFact] = []
        var voids: [PlayVoidedPurchaseFact] = []
        for fact in facts {
            switch fact {
            case .playSubscription(let s) where s.purchaseToken == token:
                if subscription.map({ Canon.isNewer(s, than: $0) }) ?? true { subscription = s }
            case .playProduct(let p) where p.purchaseToken == token: products.append(p)
            case .playVoided(let v) where v.purchaseToken == token: voids.append(v)
            default: continue
            }
        }
        if let subscription {
            self = .subscription(subscription)
        } else if let newest = products.max(by: { a, b in
            a.observedAt != b.observedAt ? a.observedAt < b.observedAt : contentAfter(b.orderKey, a.orderKey)
        }) {
            self = .product(newest, final: PlayProductRefunds(snapshots: products, voids: voids).refundedInFull)
        } else {
            return nil
        }
    }

    /// Nothing Google could still say changes it (a subscription expired or its pending purchase canceled).
    public var isFinal: Bool {
        switch self {
        case .subscription(let s): s.state == .expired || s.state == .pendingPurchaseCanceled
        case .product(_, let final): final
        }
    }
}
