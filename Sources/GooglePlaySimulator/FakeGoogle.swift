import AppStore
import EntitledCrypto
import Foundation
import GooglePlay
import Synchronization

/// A local fake of the Google services a Play integration talks to: the OAuth token endpoint, the
/// Developer API's purchase resources, the JWKS that signs Pub/Sub pushes, and real-time developer
/// notifications (queued here, pushed by ``FakePubSubPusher``).
///
/// Purchases are stateful and move through Play's lifecycle by the methods below (buy, renew, fail
/// into grace, hold, recover, pause, cancel, expire, revoke, upgrade, refund, acknowledge); each
/// change queues the notification Play would send. Time comes from the injected clock, so an
/// unacknowledged purchase is refunded once ``acknowledgementDeadlineSeconds`` have passed and
/// ``sweep()`` runs, as Google does after three days. HTTP routes: `FakeGoogleRoutes.swift`.
public final class FakeGoogle: Sendable {
    /// Google refunds a purchase not acknowledged within three days.
    public static let acknowledgementDeadlineSeconds: Int64 = 3 * 86_400

    public let clock: any EpochClock
    /// The products on sale, by id.
    public let products: [String: FakePlayProduct]
    /// How long a failed renewal keeps access (Play's grace period).
    public let gracePeriodSeconds: Int64
    /// The key the fake signs push tokens with, and its `kid` in the JWKS.
    public let signingKey: RSAPrivateKey
    public let signingKeyId: String

    struct State: Sendable {
        var subscriptions: [String: FakeSubscription] = [:]
        var productPurchases: [String: FakeProductPurchase] = [:]
        var voided: [VoidedPurchase] = []
        var outbox: [DeveloperNotification] = []
        var accessTokens: [String: Int64] = [:]
        var serviceAccounts: [String: RSAPublicKey] = [:]
        var injectedFailures: [Int] = []
        var sequence = 0
        /// Refund reviews asked, by pending refund token (`FakeGoogle+RefundReviews.swift`).
        var refundReviews: [String: FakeRefundReview] = [:]
        /// Every accepted `orders.reviewrefund` call, in order.
        var reviewRefundCalls: [RecordedReviewRefund] = []
    }

    let state = Mutex(State())

    public init(
        products: [FakePlayProduct], clock: any EpochClock, gracePeriodSeconds: Int64 = 3 * 86_400, signingKey: RSAPrivateKey? = nil,
        signingKeyId: String = "fake-google-1"
    ) throws(CryptoError) {
        self.products = Dictionary(products.map { ($0.productId, $0) }, uniquingKeysWith: { first, _ in first })
        self.clock = clock
        self.gracePeriodSeconds = gracePeriodSeconds
        if let signingKey { self.signingKey = signingKey } else { self.signingKey = try RSAPrivateKey() }
        self.signingKeyId = signingKeyId
    }

    /// Lets the service account `email` sign token-endpoint assertions with `publicKey`'s private half.
    public func register(serviceAccount email: String, publicKey: RSAPublicKey) {
        state.withLock { $0.serviceAccounts[email] = publicKey }
    }

    /// Makes the next `count` Developer API calls answer `status` (503, 429 …) before normal service resumes.
    public func failNextCalls(status: Int, count: Int = 1) {
        state.withLock { $0.injectedFailures += Array(repeating: status, count: count) }
    }

    /// The notifications queued since the last ``takeNotifications()``, oldest first.
    public func takeNotifications() -> [DeveloperNotification] {
        state.withLock { state in
            defer { state.outbox.removeAll() }
            return state.outbox
        }
    }

    /// The current state of a subscription token as the Developer API would answer it.
    public func subscription(_ token: String) -> SubscriptionPurchaseV2? { state.withLock { $0.subscriptions[token]?.purchase } }

    /// The current state of a one-time purchase token.
    public func productPurchase(_ token: String) -> ProductPurchase? {
        state.withLock { $0.productPurchases[token]?.purchase(token: token) }
    }

    var nowMillis: Int64 { clock.nowMilliseconds() }

    func nextToken(_ state: inout State, _ prefix: String) -> String {
        state.sequence += 1
        // Real tokens are long opaque strings with dots; keep that shape so nothing assumes short ids.
        return "\(prefix).\(String(state.sequence, radix: 36)).AO-J1Oz" + String(repeating: "x", count: 40)
    }

    func notify(_ state: inout State, packageName: String, subscription type: SubscriptionNotificationType, token: String, productId: String) {
        state.outbox.append(
            DeveloperNotification(
                packageName: packageName, eventTimeMillis: nowMillis,
                subscriptionNotification: SubscriptionNotification(notificationType: type, purchaseToken: token, subscriptionId: productId)))
    }

    // MARK: - Subscriptions

    /// Buys `productId` on `basePlanId` (the product's first base plan when nil); answers the new
    /// purchase token. With `introductoryPrice`, the first `introductoryPeriods` periods are an
    /// introductory offer charged that price. Queues `SUBSCRIPTION_PURCHASED`.
    @discardableResult
    public func buySubscription(
        packageName: String, productId: String, basePlanId: String? = nil, offerId: String? = nil, obfuscatedAccountId: String? = nil,
        test: Bool = false, linkedPurchaseToken: String? = nil, introductoryPrice: Money? = nil, introductoryPeriods: Int = 1
    ) throws(FakeGoogleError) -> String {
        guard case .subscription(let plans, let period)? = products[productId]?.kind else {
            throw FakeGoogleError("no subscription product \(productId)")
        }
        let plan = basePlanId ?? plans.first ?? "base"
        guard plans.isEmpty || plans.contains(plan) else { throw FakeGoogleError("no base plan \(plan) in \(productId)") }
        let now = nowMillis
        return state.withLock { state in
            let token = nextToken(&state, "sub")
            state.subscriptions[token] = FakeSubscription(
                packageName: packageName, productId: productId, basePlanId: plan, offerId: offerId, periodSeconds: period, state: .active,
                startMillis: now, expiryMillis: now + period * 1000, autoRenew: true, acknowledged: false,
                linkedPurchaseToken: linkedPurchaseToken, obfuscatedAccountId: obfuscatedAccountId, test: test,
                orderBase: "GPA.\(3300 + state.sequence)-\(1000 + state.sequence)-\(2000 + state.sequence)-\(40000 + state.sequence)",
                renewals: 0, autoResumeMillis: nil, canceledBy: nil, voided: false, price: products[productId]?.price,
                introductoryPrice: introductoryPrice, introductoryPeriods: introductoryPrice == nil ? nil : introductoryPeriods)
            notify(&state, packageName: packageName, subscription: .purchased, token: token, productId: productId)
            return token
        }
    }

    /// Applies `change` to a subscription and queues `type`.
    func change(
        _ token: String, notifying type: SubscriptionNotificationType, _ change: (inout FakeSubscription, Int64) throws(FakeGoogleError) -> Void
    ) throws(FakeGoogleError) {
        let now = nowMillis
        try state.withLock { (state) throws(FakeGoogleError) in
            guard var subscription = state.subscriptions[token] else { throw FakeGoogleError("no subscription \(token)") }
            try change(&subscription, now)
            state.subscriptions[token] = subscription
            notify(&state, packageName: subscription.packageName, subscription: type, token: token, productId: subscription.productId)
        }
    }

    /// A successful renewal: one more period. Queues `SUBSCRIPTION_RENEWED`.
    public func renew(_ token: String) throws(FakeGoogleError) {
        try change(token, notifying: .renewed) { (s, now) throws(FakeGoogleError) in
            guard [.active, .inGracePeriod, .canceled].contains(s.state), s.autoRenew || s.state == .inGracePeriod else {
                throw FakeGoogleError("cannot renew a \(s.state.rawValue) subscription")
            }
            s.expiryMillis = max(s.expiryMillis, now) + s.periodSeconds * 1000
            s.renewals += 1
            s.state = .active
        }
    }

    /// A failed renewal: into the grace period, access extended to its end. Queues `SUBSCRIPTION_IN_GRACE_PERIOD`.
    public func failRenewal(_ token: String) throws(FakeGoogleError) {
        try change(token, notifying: .inGracePeriod) { (s, now) throws(FakeGoogleError) in
            guard s.state == .active, s.autoRenew else { throw FakeGoogleError("only an active, renewing subscription can fail") }
            s.state = .inGracePeriod
            s.expiryMillis = max(s.expiryMillis, now) + gracePeriodSeconds * 1000
        }
    }

    /// The grace period ended unpaid: account hold, no access. Queues `SUBSCRIPTION_ON_HOLD`.
    public func putOnHold(_ token: String) throws(FakeGoogleError) {
        try change(token, notifying: .onHold) { (s, now) throws(FakeGoogleError) in
            guard s.state == .active || s.state == .inGracePeriod else { throw FakeGoogleError("cannot hold a \(s.state.rawValue) subscription") }
            s.state = .onHold
            s.expiryMillis = min(s.expiryMillis, now)
        }
    }

    /// Payment fixed during grace or hold: a fresh period from now. Queues `SUBSCRIPTION_RECOVERED`.
    public func recover(_ token: String) throws(FakeGoogleError) {
        try change(token, notifying: .recovered) { (s, now) throws(FakeGoogleError) in
            guard s.state == .inGracePeriod || s.state == .onHold else { throw FakeGoogleError("nothing to recover") }
            s.state = .active
            s.expiryMillis = now + s.periodSeconds * 1000
            s.renewals += 1
        }
    }

    /// Paused at the end of the current period until `resumeAtMillis`. Queues `SUBSCRIPTION_PAUSED`.
    public func pause(_ token: String, resumeAtMillis: Int64) throws(FakeGoogleError) {
        try change(token, notifying: .paused) { (s, now) throws(FakeGoogleError) in
            guard s.state == .active, resumeAtMillis > now else { throw FakeGoogleError("only an active subscription can pause, into the future") }
            s.state = .paused
            s.expiryMillis = min(s.expiryMillis, now)
            s.autoResumeMillis = resumeAtMillis
        }
    }

    /// The user canceled: access until expiry, no renewal. Queues `SUBSCRIPTION_CANCELED`.
    public func cancel(_ token: String) throws(FakeGoogleError) {
        try change(token, notifying: .canceled) { (s, _) throws(FakeGoogleError) in
            guard [.active, .inGracePeriod, .paused, .onHold].contains(s.state) else { throw FakeGoogleError("nothing to cancel") }
            s.state = .canceled
            s.autoRenew = false
            s.canceledBy = .user
        }
    }

    /// The subscription ended. Queues `SUBSCRIPTION_EXPIRED`.
    public func expire(_ token: String) throws(FakeGoogleError) {
        try change(token, notifying: .expired) { (s, now) throws(FakeGoogleError) in
            guard s.state != .expired else { throw FakeGoogleError("already expired") }
            s.state = .expired
            s.autoRenew = false
            s.expiryMillis = min(s.expiryMillis, now)
        }
    }

    /// Refunded and revoked at once (Play Console "refund and revoke", or a chargeback): expired now,
    /// listed in voided purchases. Queues `SUBSCRIPTION_REVOKED` and a voided-purchase notification.
    public func revoke(_ token: String, reason: Int = 0, source: Int = 1) throws(FakeGoogleError) {
        try change(token, notifying: .revoked) { (s, now) throws(FakeGoogleError) in
            guard !s.voided else { throw FakeGoogleError("already revoked") }
            s.state = .expired
            s.autoRenew = false
            s.expiryMillis = min(s.expiryMillis, now)
            s.canceledBy = .developer
            s.voided = true
        }
        voidPurchase(token: token, productType: .subscription, reason: reason, source: source)
    }

    /// Replaces the subscription `token` with `productId` (upgrade, downgrade, crossgrade): a new
    /// token linked to the old one; the old one expires, canceled by replacement. Answers the new token.
    @discardableResult
    public func upgrade(_ token: String, to productId: String, basePlanId: String? = nil) throws(FakeGoogleError) -> String {
        guard let old = subscription(token), [.active, .inGracePeriod, .canceled].contains(old.subscriptionState) else {
            throw FakeGoogleError("no live subscription \(token) to replace")
        }
        let (packageName, account, test) = state.withLock { state in
            let s = state.subscriptions[token]!
            return (s.packageName, s.obfuscatedAccountId, s.test)
        }
        let fresh = try buySubscription(
            packageName: packageName, productId: productId, basePlanId: basePlanId, obfuscatedAccountId: account, test: test,
            linkedPurchaseToken: token)
        let now = nowMillis
        state.withLock { state in
            state.subscriptions[token]?.state = .expired
            state.subscriptions[token]?.autoRenew = false
            state.subscriptions[token]?.canceledBy = .replacement
            state.subscriptions[token]?.expiryMillis = now
        }
        return fresh
    }

    // MARK: - One-time products

    /// Buys a one-time product; answers the purchase token. Queues `ONE_TIME_PRODUCT_PURCHASED`.
    @discardableResult
    public func buyProduct(
        packageName: String, productId: String, quantity: Int = 1, obfuscatedAccountId: String? = nil, test: Bool = false
    ) throws(FakeGoogleError) -> String {
        guard case .oneTime? = products[productId]?.kind else { throw FakeGoogleError("no one-time product \(productId)") }
        let now = nowMillis
        return state.withLock { state in
            let token = nextToken(&state, "prod")
            state.productPurchases[token] = FakeProductPurchase(
                packageName: packageName, productId: productId, purchaseMillis: now, orderId: "GPA.\(5500 + state.sequence)-0000",
                quantity: max(1, quantity), canceled: false, consumed: false, acknowledged: false, obfuscatedAccountId: obfuscatedAccountId,
                test: test)
            state.outbox.append(
                DeveloperNotification(
                    packageName: packageName, eventTimeMillis: now,
                    oneTimeProductNotification: OneTimeProductNotification(notificationType: .purchased, purchaseToken: token, sku: productId)))
            return token
        }
    }

    /// Refunds a one-time purchase: canceled and listed in voided purchases.
    public func refundProduct(_ token: String, reason: Int = 1, source: Int = 0) throws(FakeGoogleError) {
        try state.withLock { (state) throws(FakeGoogleError) in
            guard let p = state.productPurchases[token], !p.canceled else { throw FakeGoogleError("no refundable purchase \(token)") }
            state.productPurchases[token]?.canceled = true
        }
        voidPurchase(token: token, productType: .oneTime, reason: reason, source: source)
    }

    /// Refunds `quantity` units of a multi-quantity one-time purchase (a quantity-based partial
    /// refund): its `refundableQuantity` drops, the voided-purchases list names the units
    /// (`voidedQuantity`, listed only to `includeQuantityBasedPartialRefund`) and a voided-purchase
    /// notification with `refundType` 2 is queued. Refunding the last units leaves it purchased
    /// with nothing refundable, as Google does.
    public func refundProductQuantity(_ token: String, quantity: Int, reason: Int = 1, source: Int = 0) throws(FakeGoogleError) {
        let now = nowMillis
        try state.withLock { (state) throws(FakeGoogleError) in
            guard let p = state.productPurchases[token], !p.canceled, quantity > 0, quantity <= p.quantity - (p.refundedQuantity ?? 0) else {
                throw FakeGoogleError("cannot refund \(quantity) of \(token)")
            }
            state.productPurchases[token]?.refundedQuantity = (p.refundedQuantity ?? 0) + quantity
            state.voided.append(
                VoidedPurchase(
                    purchaseToken: token, purchaseTimeMillis: p.purchaseMillis, voidedTimeMillis: now, orderId: p.orderId,
                    voidedSource: source, voidedReason: reason, voidedQuantity: quantity))
            state.outbox.append(
                DeveloperNotification(
                    packageName: p.packageName, eventTimeMillis: now,
                    voidedPurchaseNotification: VoidedPurchaseNotification(
                        purchaseToken: token, orderId: p.orderId, productType: .oneTime, refundType: .quantityBasedPartialRefund)))
        }
    }

    func voidPurchase(token: String, productType: VoidedProductType, reason: Int, source: Int) {
        let now = nowMillis
        state.withLock { state in
            let (packageName, orderId, purchased): (String, String, Int64)
            if let s = state.subscriptions[token] {
                (packageName, orderId, purchased) = (s.packageName, s.purchase.latestOrderId ?? "", s.startMillis)
            } else if let p = state.productPurchases[token] {
                (packageName, orderId, purchased) = (p.packageName, p.orderId, p.purchaseMillis)
            } else {
                return
            }
            state.voided.append(
                VoidedPurchase(
                    purchaseToken: token, purchaseTimeMillis: purchased, voidedTimeMillis: now, orderId: orderId, voidedSource: source,
                    voidedReason: reason, refundType: .fullRefund))
            state.outbox.append(
                DeveloperNotification(
                    packageName: packageName, eventTimeMillis: now,
                    voidedPurchaseNotification: VoidedPurchaseNotification(
                        purchaseToken: token, orderId: orderId, productType: productType, refundType: .fullRefund)))
        }
    }

    // MARK: - Time

    /// Applies what time does by itself: purchases unacknowledged past the deadline are refunded
    /// (Google voids them) unless `refundingUnacknowledged` is false, canceled subscriptions past
    /// expiry expire, paused ones resume.
    public func sweep(refundingUnacknowledged: Bool = true) {
        let now = nowMillis
        let deadline = refundingUnacknowledged ? Self.acknowledgementDeadlineSeconds * 1000 : .max
        let (subscriptionRefunds, productRefunds, expiring, resuming) = state.withLock { state in
            (
                state.subscriptions.filter { !$0.value.acknowledged && !$0.value.voided && now - $0.value.startMillis >= deadline }.map(\.key),
                state.productPurchases.filter { !$0.value.acknowledged && !$0.value.canceled && now - $0.value.purchaseMillis >= deadline }
                    .map(\.key),
                state.subscriptions.filter { $0.value.state == .canceled && $0.value.expiryMillis <= now }.map(\.key),
                state.subscriptions.filter { $0.value.state == .paused && ($0.value.autoResumeMillis ?? .max) <= now }.map(\.key)
            )
        }
        for token in subscriptionRefunds.sorted() { try? revoke(token, reason: 0, source: 2) }
        for token in productRefunds.sorted() { try? refundProduct(token, reason: 0, source: 2) }
        for token in expiring.sorted() { try? expire(token) }
        for token in resuming.sorted() {
            try? change(token, notifying: .renewed) { (s, now) throws(FakeGoogleError) in
                s.state = .active
                s.expiryMillis = now + s.periodSeconds * 1000
                s.autoResumeMillis = nil
                s.renewals += 1
            }
        }
    }
}
