import GooglePlay

/// Renewals as time passes, and the fake's purchases saved and restored (so that `entitled dev`
/// continues a data folder with the purchases it sold).
extension FakeGoogle {
    /// How long Play keeps a subscription on account hold before it expires.
    public static let accountHoldSeconds: Int64 = 30 * 86_400

    /// Applies the renewals time brings, as a payment that goes through: an active, auto-renewing
    /// subscription whose period ended gets the periods up to now (counted from its expiry, so
    /// none drifts; one `SUBSCRIPTION_RENEWED` each call). A grace period that ended unpaid goes on
    /// hold; a hold that lasted ``accountHoldSeconds`` expires.
    public func renewDue() {
        let now = nowMillis
        let (renewing, holding, expiring) = state.withLock { state in
            (
                state.subscriptions.filter { $0.value.state == .active && $0.value.autoRenew && $0.value.expiryMillis <= now }.map(\.key),
                state.subscriptions.filter { $0.value.state == .inGracePeriod && $0.value.expiryMillis <= now }.map(\.key),
                state.subscriptions.filter { $0.value.state == .onHold && now - $0.value.expiryMillis >= Self.accountHoldSeconds * 1000 }
                    .map(\.key)
            )
        }
        for token in renewing.sorted() {
            try? change(token, notifying: .renewed) { (s, now) throws(FakeGoogleError) in
                guard s.periodSeconds > 0 else { return }
                while s.expiryMillis <= now {
                    s.expiryMillis += s.periodSeconds * 1000
                    s.renewals += 1
                }
            }
        }
        for token in holding.sorted() { try? putOnHold(token) }
        for token in expiring.sorted() { try? expire(token) }
    }

    /// One purchase as a listing shows it.
    public struct PurchaseSummary: Sendable, Hashable {
        public var token: String
        public var productId: String
        /// `SUBSCRIPTION_STATE_…` for a subscription; `PURCHASED`, `CONSUMED` or `CANCELED` for a one-time product.
        public var state: String
        /// Epoch milliseconds (subscriptions only).
        public var expiresAt: Int64?
        public var autoRenewing: Bool?
        public var acknowledged: Bool
        public var linkedPurchaseToken: String?
    }

    /// The purchase `token`, subscription or one-time; nil when the fake never sold it.
    public func summary(of token: String) -> PurchaseSummary? {
        state.withLock { state in
            if let s = state.subscriptions[token] {
                return PurchaseSummary(
                    token: token, productId: s.productId, state: s.state.rawValue, expiresAt: s.expiryMillis, autoRenewing: s.autoRenew,
                    acknowledged: s.acknowledged, linkedPurchaseToken: s.linkedPurchaseToken)
            }
            guard let p = state.productPurchases[token] else { return nil }
            return PurchaseSummary(
                token: token, productId: p.productId, state: p.canceled ? "CANCELED" : p.consumed ? "CONSUMED" : "PURCHASED",
                acknowledged: p.acknowledged)
        }
    }

    /// The purchases and the voided list, for a restart to continue from (access tokens, service
    /// accounts, queued notifications and injected failures are not kept).
    public struct Saved: Sendable, Codable, Equatable {
        var subscriptions: [String: FakeSubscription]
        var productPurchases: [String: FakeProductPurchase]
        var voided: [VoidedPurchase]
        var sequence: Int
    }

    /// What ``restore(_:)`` continues from.
    public func saved() -> Saved {
        state.withLock { Saved(subscriptions: $0.subscriptions, productPurchases: $0.productPurchases, voided: $0.voided, sequence: $0.sequence) }
    }

    /// Continues from `saved`: its purchases replace this fake's, and new tokens go on from its sequence.
    public func restore(_ saved: Saved) {
        state.withLock { state in
            state.subscriptions = saved.subscriptions
            state.productPurchases = saved.productPurchases
            state.voided = saved.voided
            state.sequence = max(state.sequence, saved.sequence)
        }
    }
}
