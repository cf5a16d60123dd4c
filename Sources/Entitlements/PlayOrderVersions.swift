// A Google Play purchase as one version of a store transaction, the way scheduled exports list
// transactions of both stores (docs/exports.md). Google answers about a purchase token, not one
// signed transaction per period: each stored answer (or voiding) is a new version of the order it
// concerns, made from the token's facts stored up to it, with the dates, price and refund the
// rollups count (PlayPeriods.swift).

/// One version of a Play order: the order as the engine's transaction after a given fact.
public struct PlayOrderVersion: Hashable, Sendable {
    /// The order: `transactionId` its order id, `originalTransactionId` the purchase token (a
    /// subscription's first token of its `linkedPurchaseToken` chain), dated and priced as the
    /// rollups count it, `signedDate` the latest instant Google reported for the token by then.
    public var transaction: TransactionFact
    /// Units of a one-time purchase refunded so far (quantity-based partial refunds included); nil
    /// for a subscription.
    public var refundedQuantity: Int?

    /// The version of the order `fact` concerns — a snapshot's current order, a one-time purchase,
    /// a voiding's order (its token's latest when the order is not one the server saw) — from
    /// `facts`, those stored up to and with it (the token's and its linked tokens'); nil when
    /// `fact` is no Play purchase fact or names no charged order yet (a pending purchase).
    public init?(_ fact: Fact, among facts: [Fact], policy: Policy) {
        let token: String
        let orderId: String?
        switch fact {
        case .playSubscription(let s): (token, orderId) = (s.purchaseToken, s.latestOrderId)
        case .playProduct(let p): (token, orderId) = (p.purchaseToken, p.orderId)
        case .playVoided(let v): (token, orderId) = (v.purchaseToken, v.orderId)
        default: return nil
        }
        let own = facts.filter { $0.environment == fact.environment }
        // A quantity-based partial voiding never voids a whole order: counted below, by units.
        let whole = own.filter { if case .playVoided(let v) = $0 { !v.isPartial } else { true } }
        let periods = playPeriods(whole, policy: policy).filter { $0.token == token }
        let isSnapshot = if case .playSubscription = fact { true } else { false }
        guard let period = periods.first(where: { $0.orderId == orderId }) ?? (isSnapshot ? nil : periods.last) else { return nil }
        var transaction = period.transaction
        var products: [PlayProductFact] = []
        var voids: [PlayVoidedPurchaseFact] = []
        var latest = fact.date
        var account: (at: Int64, token: String)?
        for other in own {
            switch other {
            case .playSubscription(let s) where s.purchaseToken == token:
                latest = max(latest, s.observedAt)
                if let id = s.obfuscatedExternalAccountId, account.map({ s.observedAt >= $0.at }) ?? true { account = (s.observedAt, id) }
            case .playProduct(let p) where p.purchaseToken == token:
                latest = max(latest, p.observedAt)
                products.append(p)
                if let id = p.obfuscatedExternalAccountId, account.map({ p.observedAt >= $0.at }) ?? true { account = (p.observedAt, id) }
            case .playVoided(let v) where v.purchaseToken == token:
                latest = max(latest, v.voidedTime)
                voids.append(v)
            default: continue
            }
        }
        transaction.signedDate = latest
        transaction.appAccountToken = account?.token
        if products.isEmpty {
            refundedQuantity = nil
        } else {
            let refunds = PlayProductRefunds(snapshots: products, voids: voids)
            transaction.revocationDate = refunds.refundedInFull ? refunds.fullRefund?.at ?? refunds.steps.last?.at : nil
            refundedQuantity = refunds.refunded
        }
        self.transaction = transaction
    }
}
