import AppStore
import Foundation

/// How fast subscription periods pass. Apple's accelerated rates (StoreKit testing and the sandbox's
/// "monthly renewal every five minutes" …) map a week and a month to fixed short lengths; longer periods
/// scale with the month (two months = 2×, a year = 12×). Grace periods, billing retry and renewal-date
/// extensions are not accelerated here.
public enum RenewalRate: String, Sendable, Codable, Hashable, CaseIterable {
    /// Calendar time.
    case realTime
    /// Week 3 min, month 5 min, year 1 h (the sandbox's default accelerated rate).
    case monthlyEveryFiveMinutes
    /// Week 10 min, month 30 min, year 6 h.
    case monthlyEveryThirtyMinutes
    /// Week 15 min, month 1 h, year 12 h.
    case monthlyEveryHour

    /// (week, month) in milliseconds, nil for real time.
    var scale: (week: Int64, month: Int64)? {
        switch self {
        case .realTime: nil
        case .monthlyEveryFiveMinutes: (3 * Milliseconds.minute, 5 * Milliseconds.minute)
        case .monthlyEveryThirtyMinutes: (10 * Milliseconds.minute, 30 * Milliseconds.minute)
        case .monthlyEveryHour: (15 * Milliseconds.minute, Milliseconds.hour)
        }
    }

    /// The end of a period of length `period` starting at `start`.
    public func end(of period: ISODuration, from start: Int64) -> Int64 {
        guard let (week, month) = scale else { return period.added(to: start) }
        let months = Int64(period.years * 12 + period.months)
        let days = Int64(period.days)
        let clock = Int64(period.hours) * Milliseconds.hour + Int64(period.minutes) * Milliseconds.minute
            + Int64(period.seconds) * Milliseconds.second
        // Days count as sevenths of a week; sub-day parts are scaled as a day would be.
        return start + months * month + days * week / 7 + clock * week / (7 * Milliseconds.day)
    }
}

/// A customer of the simulated store.
public struct SimulatedCustomer: Sendable, Codable, Hashable {
    /// The simulator's name for this Apple ID (e.g. `alice`).
    public var id: String
    /// ISO 3166-1 alpha-3 storefront, e.g. `USA`.
    public var storefront: String
    /// Whether charges succeed; a failing method makes renewals fail into billing retry.
    public var paymentSucceeds: Bool
    /// The family group this customer belongs to.
    public var familyId: String?
    /// Subscription groups in which this customer already used an introductory offer.
    public var introUsedInGroups: Set<String> = []
}

/// A Family Sharing group: an organizer and up to five more members.
public struct FamilyGroup: Sendable, Codable, Hashable {
    /// Family Sharing allows the organizer and up to five others.
    public static let maximumMembers = 6
    /// The identifier.
    public var id: String
    /// Customer ids, organizer first.
    public var members: [String]
}

/// Where a subscription is in its life, matching the `status` field of notifications.
public enum SubscriptionState: String, Sendable, Codable, Hashable {
    case active, billingRetry, gracePeriod, expired, revoked

    /// The App Store `status` value (1 active, 2 expired, 3 billing retry, 4 grace, 5 revoked).
    public var status: SubscriptionStatus {
        switch self {
        case .active: .active
        case .expired: .expired
        case .billingRetry: .billingRetry
        case .gracePeriod: .billingGracePeriod
        case .revoked: .revoked
        }
    }
}

/// The offer applied to the current (and possibly following) periods.
public struct AppliedOffer: Sendable, Codable, Hashable {
    /// Introductory, promotional, offer code or win-back.
    public var type: OfferType
    /// The offer terms.
    public var offer: SubscriptionOffer
    /// Billed offer periods still to come after the current one.
    public var remainingPeriods: Int
}

/// A pending price increase on a subscription.
public struct PendingPriceIncrease: Sendable, Codable, Hashable {
    /// The price from the next renewal, milli-units.
    public var newPrice: Int64
    /// Whether a price increase needs consent (default true).
    public var consentRequired: Bool
    /// nil: no answer yet; true: accepted (or no consent needed); false: declined.
    public var accepted: Bool?
}

/// One auto-renewable subscription (an original transaction in a group), the purchaser's or a family member's view of it.
public struct SimulatedSubscription: Sendable, Codable, Hashable {
    /// The original transaction id (stable across renewals).
    public var originalTransactionId: String
    /// The customer holding this subscription (or family view).
    public var customerId: String
    /// The subscription group.
    public var groupId: String
    /// The product of the current period.
    public var productId: String
    /// The product the next renewal will be.
    public var autoRenewProductId: String
    /// Whether auto-renew is on.
    public var autoRenew: Bool
    /// Where the subscription is in its life.
    public var state: SubscriptionState
    /// When the original transaction was bought.
    public var originalPurchaseDate: Int64
    /// Start of the current period.
    public var purchaseDate: Int64
    /// End of the current period (the renewal date).
    public var expiresDate: Int64
    /// Start of the latest continuous run.
    public var recentStartDate: Int64
    /// The transaction of the current period.
    public var latestTransactionId: String
    /// The offer applied to the current period.
    public var offer: AppliedOffer?
    /// Why it expired (or will).
    public var expirationIntent: ExpirationIntent?
    /// When billing retry began (the failed renewal date).
    public var billingRetryStart: Int64?
    /// End of the billing grace period.
    public var gracePeriodExpires: Int64?
    /// A pending price increase.
    public var priceIncrease: PendingPriceIncrease?
    /// A UUID linking the purchase to an app account.
    public var appAccountToken: String?
    /// For a family member's view: the purchaser's original transaction id.
    public var sharedFrom: String?
    /// For a purchaser: whether the subscription is shared with the family.
    public var sharingEnabled: Bool
    /// The renewal date was extended (by a renewal-date extension).
    public var extendedDays: Int = 0
    /// Auto-renew as it was before a refund revoked the subscription (restored if the refund is reversed).
    public var autoRenewBeforeRefund: Bool?
    /// An offer redeemed with a downgrade or crossgrade, applied from the next renewal.
    public var pendingOffer: AppliedOffer?
    /// Whether this is a family member's view of someone else's purchase.
    public var isFamilyShared: Bool { sharedFrom != nil }
}

/// A notification the store decided to send, before signing.
public struct PendingNotification: Sendable, Hashable {
    /// The notification type.
    public var type: NotificationTypeV2
    /// The notification subtype, if any.
    public var subtype: NotificationSubtype?
    /// `data.status`; nil for types without one.
    public var status: SubscriptionStatus?
    /// The transaction to sign into `signedTransactionInfo`.
    public var transaction: JWSTransactionDecodedPayload?
    /// The renewal info to sign into `signedRenewalInfo`.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    /// The mass-extension summary (instead of `data`).
    public var summary: Summary?
    /// `consumptionRequestReason` for `CONSUMPTION_REQUEST`.
    public var consumptionRequestReason: ConsumptionRequestReason?
    /// The customer it concerns (nil for TEST and SUMMARY).
    public var customerId: String?
    /// When the event happened (virtual time).
    public var date: Int64
}

/// The simulated App Store's state and every action on it, as pure functions of the state and `now`.
///
/// Each action returns the notifications Apple would send for it, unsigned; ``Simulator`` signs and delivers
/// them. Time is always a parameter: nothing here reads a clock.
public struct SimulatedStore: Sendable {
    /// The app and its products.
    public var catalog: Catalog
    /// `Sandbox` or `Production`.
    public var environment: AppStoreEnvironment
    /// Customers by id.
    public private(set) var customers: [String: SimulatedCustomer] = [:]
    /// Family groups by id.
    public private(set) var families: [String: FamilyGroup] = [:]
    /// Subscriptions by original transaction id.
    public private(set) var subscriptions = SubscriptionTable()
    /// Every transaction by id, as last issued (revocation fields included).
    public private(set) var transactions: [String: JWSTransactionDecodedPayload] = [:]
    /// Transaction ids in issue order.
    public private(set) var transactionOrder: [String] = []
    private var nextTransactionNumber: Int64 = 2_000_000_000_000_001
    private var nextWebOrderNumber: Int64 = 1_000_000_000_000_001
    /// How fast subscription periods pass (Xcode and sandbox can accelerate renewals).
    public var renewalRate: RenewalRate = .realTime
    /// Billing retry lasts 60 days after the failed renewal.
    public static let billingRetryWindow: Int64 = 60 * Milliseconds.day

    /// An empty store selling `catalog`.
    public init(catalog: Catalog, environment: AppStoreEnvironment = .sandbox) {
        self.catalog = catalog
        self.environment = environment
    }

    /// When a subscription period of length `period` starting at `start` ends, at the current ``renewalRate``.
    public func end(of period: ISODuration, from start: Int64) -> Int64 {
        renewalRate.end(of: period, from: start)
    }

    // MARK: - Customers and families

    /// Adds (or updates) a customer.
    public mutating func addCustomer(_ id: String, storefront: String = "USA", paymentSucceeds: Bool = true) {
        if var existing = customers[id] {
            existing.storefront = storefront
            existing.paymentSucceeds = paymentSucceeds
            customers[id] = existing
        } else {
            customers[id] = SimulatedCustomer(id: id, storefront: storefront, paymentSucceeds: paymentSucceeds)
        }
    }

    func customer(_ id: String) throws(SimulatorError) -> SimulatedCustomer {
        guard let customer = customers[id] else { throw .unknown("customer", id) }
        return customer
    }

    func product(_ id: String) throws(SimulatorError) -> SimulatedProduct {
        guard let product = catalog.product(id) else { throw .unknown("product", id) }
        return product
    }

    /// Puts a product on sale or takes it off; subscriptions to a product off sale expire at their next
    /// renewal (`EXPIRED`/`PRODUCT_NOT_FOR_SALE`, `expirationIntent` 4). No notification now.
    public mutating func setAvailableForSale(_ productId: String, _ available: Bool) throws(SimulatorError) {
        guard let index = catalog.products.firstIndex(where: { $0.id == productId }) else { throw .unknown("product", productId) }
        catalog.products[index].availableForSale = available
    }

    /// Changes a customer's storefront; later transactions carry it. Apple sends no notification for this.
    public mutating func changeStorefront(_ customerId: String, to storefront: String) throws(SimulatorError) {
        var customer = try customer(customerId)
        customer.storefront = storefront
        customers[customerId] = customer
    }

    /// Makes the customer's payment method work or fail. When it starts working, subscriptions in
    /// billing retry or grace recover at once (`DID_RENEW` / `BILLING_RECOVERY`).
    public mutating func setPaymentMethod(_ customerId: String, succeeds: Bool, now: Int64) throws(SimulatorError)
        -> [PendingNotification]
    {
        var customer = try customer(customerId)
        customer.paymentSucceeds = succeeds
        customers[customerId] = customer
        guard succeeds else { return [] }
        var out: [PendingNotification] = []
        for id in subscriptionIds(of: customerId) {
            let sub = subscriptions[id]!
            if sub.state == .billingRetry || sub.state == .gracePeriod { out += try recover(id, now: now) }
        }
        return out
    }

    /// Creates a family group (≤ 6 members, organizer first); purchasers' shareable subscriptions become available to the others.
    public mutating func createFamily(_ id: String, members: [String], now: Int64) throws(SimulatorError) -> [PendingNotification] {
        guard members.count <= FamilyGroup.maximumMembers, !members.isEmpty else {
            throw .invalid("a family has 1 to \(FamilyGroup.maximumMembers) members")
        }
        for member in members {
            let customer = try customer(member)
            if customer.familyId != nil { throw .invalid("\(member) is already in a family") }
        }
        families[id] = FamilyGroup(id: id, members: members)
        for member in members { customers[member]!.familyId = id }
        var out: [PendingNotification] = []
        for member in members {
            for subId in subscriptionIds(of: member) where subscriptions[subId]!.sharingEnabled {
                out += shareWithFamily(subId, now: now)
            }
        }
        return out
    }

    /// Adds a customer to an existing family; they gain access to the family's shared subscriptions.
    public mutating func joinFamily(_ familyId: String, customer customerId: String, now: Int64) throws(SimulatorError)
        -> [PendingNotification]
    {
        guard var family = families[familyId] else { throw .unknown("family", familyId) }
        guard family.members.count < FamilyGroup.maximumMembers else { throw .invalid("family \(familyId) is full") }
        let customer = try customer(customerId)
        if customer.familyId != nil { throw .invalid("\(customerId) is already in a family") }
        family.members.append(customerId)
        families[familyId] = family
        customers[customerId]!.familyId = familyId
        var out: [PendingNotification] = []
        for member in family.members {
            for subId in subscriptionIds(of: member) where subscriptions[subId]!.sharingEnabled {
                out += shareWithFamily(subId, now: now)
            }
        }
        return out
    }

    /// A member leaves the family: they lose what was shared with them, and the others lose what they shared (`REVOKE`).
    public mutating func leaveFamily(_ customerId: String, now: Int64) throws(SimulatorError) -> [PendingNotification] {
        let customer = try customer(customerId)
        guard let familyId = customer.familyId, var family = families[familyId] else {
            throw .invalid("\(customerId) is in no family")
        }
        var out: [PendingNotification] = []
        // What others shared with the leaver.
        for id in subscriptions.ids(of: customerId) where subscriptions[id]!.isFamilyShared {
            out += revokeShare(id, now: now)
        }
        // What the leaver shared with the others.
        for id in subscriptionIds(of: customerId) {
            for shareId in subscriptions.views(of: id) {
                out += revokeShare(shareId, now: now)
            }
        }
        family.members.removeAll { $0 == customerId }
        families[familyId] = family
        customers[customerId]!.familyId = nil
        return out
    }

    /// Turns Family Sharing of a purchaser's subscription on (members get `SUBSCRIBED` / `INITIAL_BUY`,
    /// `FAMILY_SHARED`) or off (members get `REVOKE`).
    public mutating func setFamilySharing(_ customerId: String, product productId: String, enabled: Bool, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        let product = try product(productId)
        guard product.familyShareable else { throw .invalid("\(productId) is not family-shareable") }
        guard let id = try activeOrLatestSubscription(customerId, group: product.group ?? "") else {
            throw .invalid("\(customerId) has no subscription to \(productId)")
        }
        subscriptions[id]!.sharingEnabled = enabled
        if enabled { return shareWithFamily(id, now: now) }
        var out: [PendingNotification] = []
        for shareId in subscriptions.views(of: id) {
            out += revokeShare(shareId, now: now)
        }
        return out
    }

    // MARK: - Purchases

    /// Which offer a purchase uses.
    public enum OfferChoice: Sendable, Hashable {
        case introductory
        case promotional(String)
        case offerCode(String)
        case winBack(String)
    }

    /// Buys `productId`. Auto-renewables start (`SUBSCRIBED` `INITIAL_BUY`) or restart (`RESUBSCRIBE`, same
    /// original transaction) a subscription; an offer redeemed on an active subscription of the same
    /// product sends `OFFER_REDEEMED`. Other products send `ONE_TIME_CHARGE`.
    public mutating func purchase(
        _ customerId: String, product productId: String, offer choice: OfferChoice? = nil, appAccountToken: String? = nil,
        quantity: Int32 = 1, now: Int64
    ) throws(SimulatorError) -> [PendingNotification] {
        let customer = try customer(customerId)
        let product = try product(productId)
        guard product.availableForSale else { throw SimulatorError(code: "NOT_FOR_SALE", "\(productId) is not for sale") }
        guard customer.paymentSucceeds else {
            throw SimulatorError(code: "PAYMENT_FAILED", "\(customerId)'s payment method fails; the purchase did not happen")
        }
        guard product.kind == .autoRenewable, let group = product.group, let period = product.period else {
            guard choice == nil else { throw .invalid("offers apply to auto-renewable subscriptions only") }
            guard product.kind != .autoRenewable else { throw .invalid("\(productId) has no group or period") }
            return oneTimePurchase(customer, product, appAccountToken: appAccountToken, quantity: quantity, now: now)
        }
        guard end(of: period, from: now) > now else { throw .invalid("\(productId) has a zero-length period") }
        let existingId = try activeOrLatestSubscription(customerId, group: group)
        let existing = existingId.flatMap { subscriptions[$0] }
        let isActive = existing.map { $0.state == .active || $0.state == .gracePeriod } ?? false
        if existing?.state == .billingRetry {
            throw .invalid("\(customerId)'s subscription in \(group) is in billing retry; fix the payment method to recover it")
        }

        // Resolve the offer and its eligibility.
        var applied: AppliedOffer?
        if let choice {
            switch choice {
            case .introductory:
                guard let intro = product.introductoryOffer else { throw .invalid("\(productId) has no introductory offer") }
                guard !customer.introUsedInGroups.contains(group), existing == nil else {
                    throw SimulatorError(code: "NOT_ELIGIBLE", "\(customerId) already subscribed in group \(group)")
                }
                applied = AppliedOffer(type: .introductoryOffer, offer: intro, remainingPeriods: 0)
            case .promotional(let id):
                guard let offer = product.promotionalOffers.first(where: { $0.id == id }) else { throw .unknown("offer", id) }
                guard existing != nil else { throw SimulatorError(code: "NOT_ELIGIBLE", "promotional offers need a previous subscription") }
                applied = AppliedOffer(type: .promotionalOffer, offer: offer, remainingPeriods: 0)
            case .offerCode(let id):
                guard let offer = product.offerCodes.first(where: { $0.id == id }) else { throw .unknown("offer", id) }
                applied = AppliedOffer(type: .offerCode, offer: offer, remainingPeriods: 0)
            case .winBack(let id):
                guard let offer = product.winBackOffers.first(where: { $0.id == id }) else { throw .unknown("offer", id) }
                guard let existing, existing.state == .expired else {
                    throw SimulatorError(code: "NOT_ELIGIBLE", "win-back offers need an expired subscription")
                }
                applied = AppliedOffer(type: .winBackOffer, offer: offer, remainingPeriods: 0)
            }
        }
        if var offer = applied {
            // Pay-as-you-go bills each offer period; free trials and pay-up-front run the whole offer as one period.
            if offer.offer.discountType == .payAsYouGo {
                offer.remainingPeriods = offer.offer.periods - 1
            } else {
                offer.offer.period = offer.offer.period.multiplied(by: offer.offer.periods)
                offer.offer.periods = 1
            }
            applied = offer
        }
        if applied?.type == .introductoryOffer { customers[customerId]!.introUsedInGroups.insert(group) }

        if let existingId, var sub = existing, isActive {
            // An offer on the active subscription: OFFER_REDEEMED (takes effect now for the same product).
            guard let applied else {
                throw .invalid("\(customerId) already has an active subscription in \(group); use upgrade or downgrade")
            }
            if sub.productId != productId {
                let current = try self.product(sub.productId)
                if (product.level ?? 0) < (current.level ?? 0) {
                    // Redeemed with an upgrade: immediate, like an upgrade, with the offer's first period.
                    if var old = transactions[sub.latestTransactionId] {
                        old.isUpgraded = true
                        transactions[sub.latestTransactionId] = old
                    }
                    sub.productId = productId
                    sub.autoRenewProductId = productId
                    sub.offer = applied
                    sub.pendingOffer = nil
                    sub.priceIncrease = nil
                    sub.purchaseDate = now
                    sub.expiresDate = end(of: applied.offer.period, from: now)
                    sub.state = .active
                    sub.gracePeriodExpires = nil
                    sub.billingRetryStart = nil
                    subscriptions[existingId] = sub
                    let tx = issueTransaction(for: existingId, reason: .purchase, price: applied.offer.price, now: now)
                    return [notification(.offerRedeemed, .upgrade, subscription: existingId, transaction: tx, now: now)]
                        + mirrorToFamily(existingId, .offerRedeemed, .upgrade, now: now)
                }
                // Redeemed with a downgrade or crossgrade: the product and the offer start at the next renewal.
                sub.autoRenewProductId = productId
                sub.pendingOffer = applied
                subscriptions[existingId] = sub
                return [notification(.offerRedeemed, .downgrade, subscription: existingId, now: now)]
            }
            sub.offer = applied
            let length = applied.offer.period
            sub.purchaseDate = now
            sub.expiresDate = end(of: length, from: now)
            sub.gracePeriodExpires = nil
            sub.billingRetryStart = nil
            sub.state = .active
            subscriptions[existingId] = sub
            let tx = issueTransaction(for: existingId, reason: .purchase, price: applied.offer.price, now: now)
            return [notification(.offerRedeemed, nil, subscription: existingId, transaction: tx, now: now)]
                + mirrorToFamily(existingId, .offerRedeemed, nil, now: now)
        }

        let length = applied?.offer.period ?? period
        let price = applied?.offer.price ?? product.price
        if let existingId, var sub = existing {
            // Same group again after expiry: RESUBSCRIBE on the same original transaction.
            sub.productId = productId
            sub.autoRenewProductId = productId
            sub.autoRenew = true
            sub.state = .active
            sub.purchaseDate = now
            sub.expiresDate = end(of: length, from: now)
            if now - (existing?.expiresDate ?? now) > Self.billingRetryWindow { sub.recentStartDate = now }
            sub.offer = applied
            sub.expirationIntent = nil
            sub.billingRetryStart = nil
            sub.gracePeriodExpires = nil
            sub.priceIncrease = nil
            sub.extendedDays = 0
            if let appAccountToken { sub.appAccountToken = appAccountToken }
            subscriptions[existingId] = sub
            let tx = issueTransaction(for: existingId, reason: .purchase, price: price, now: now)
            return [notification(.subscribed, .resubscribe, subscription: existingId, transaction: tx, now: now)]
                + mirrorToFamily(existingId, .subscribed, .resubscribe, now: now)
        }

        let originalId = takeTransactionId()
        let sub = SimulatedSubscription(
            originalTransactionId: originalId, customerId: customerId, groupId: group, productId: productId,
            autoRenewProductId: productId, autoRenew: true, state: .active, originalPurchaseDate: now, purchaseDate: now,
            expiresDate: end(of: length, from: now), recentStartDate: now, latestTransactionId: originalId, offer: applied,
            appAccountToken: appAccountToken, sharingEnabled: product.familyShareable)
        subscriptions[originalId] = sub
        let tx = issueTransaction(for: originalId, reason: .purchase, price: price, now: now, transactionId: originalId)
        var out = [notification(.subscribed, .initialBuy, subscription: originalId, transaction: tx, now: now)]
        if sub.sharingEnabled { out += shareWithFamily(originalId, now: now) }
        return out
    }

    private mutating func oneTimePurchase(
        _ customer: SimulatedCustomer, _ product: SimulatedProduct, appAccountToken: String?, quantity: Int32, now: Int64
    ) -> [PendingNotification] {
        let id = takeTransactionId()
        var tx = baseTransaction(customer: customer, product: product, now: now)
        tx.transactionId = id
        tx.originalTransactionId = id
        tx.purchaseDate = now
        tx.originalPurchaseDate = now
        tx.quantity = product.kind == .consumable ? quantity : 1
        tx.price = product.price * Int64(tx.quantity ?? 1)
        tx.appAccountToken = appAccountToken
        tx.inAppOwnershipType = .purchased
        if product.kind == .nonRenewing, let period = product.period { tx.expiresDate = period.added(to: now) }
        record(tx)
        oneTimeCustomer[id] = customer.id
        var out = [
            PendingNotification(type: .oneTimeCharge, transaction: tx, customerId: customer.id, date: now)
        ]
        // Family access to a shareable non-consumable.
        if product.kind == .nonConsumable, product.familyShareable, let familyId = customer.familyId,
            let family = families[familyId]
        {
            for member in family.members where member != customer.id {
                let memberId = takeTransactionId()
                var shared = tx
                shared.transactionId = memberId
                shared.originalTransactionId = memberId
                shared.inAppOwnershipType = .familyShared
                shared.appAccountToken = nil
                shared.storefront = customers[member]?.storefront
                shared.storefrontId = shared.storefront.map(Self.storefrontId)
                record(shared)
                oneTimeCustomer[memberId] = member
                out.append(PendingNotification(type: .oneTimeCharge, transaction: shared, customerId: member, date: now))
            }
        }
        return out
    }

    // MARK: - Renewal preferences

    /// Turns auto-renew off or on (`DID_CHANGE_RENEWAL_STATUS`).
    public mutating func setAutoRenew(_ customerId: String, product productId: String, enabled: Bool, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        let id = try requireSubscription(customerId, productId)
        var sub = subscriptions[id]!
        guard sub.state != .expired, sub.state != .revoked else { throw .invalid("the subscription has ended; resubscribe instead") }
        guard sub.autoRenew != enabled else { return [] }
        sub.autoRenew = enabled
        sub.expirationIntent = nil
        subscriptions[id] = sub
        let subtype: NotificationSubtype = enabled ? .autoRenewEnabled : .autoRenewDisabled
        return [notification(.didChangeRenewalStatus, subtype, subscription: id, now: now)]
            + mirrorToFamily(id, .didChangeRenewalStatus, subtype, now: now)
    }

    /// Switches to `newProductId` in the same group. A higher service level (lower `level`) is an upgrade:
    /// immediate, the old transaction marked `isUpgraded`, a new period starts now (the unused part is
    /// refunded pro rata). A lower level, or the same level with another period, takes effect at the next
    /// renewal (`DOWNGRADE`); the same level and period is an immediate crossgrade. Choosing the current
    /// product cancels a pending change (`DID_CHANGE_RENEWAL_PREF` without subtype).
    public mutating func changeProduct(_ customerId: String, from productId: String, to newProductId: String, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        let id = try requireSubscription(customerId, productId)
        let old = try product(subscriptions[id]!.productId)
        let new = try product(newProductId)
        guard new.kind == .autoRenewable, new.group == old.group else { throw .invalid("\(newProductId) is not in group \(old.group ?? "")") }
        var sub = subscriptions[id]!
        guard sub.state == .active || sub.state == .gracePeriod else { throw .invalid("the subscription is not active") }
        if new.id == sub.productId {
            guard sub.autoRenewProductId != new.id else { return [] }
            sub.autoRenewProductId = new.id
            subscriptions[id] = sub
            return [notification(.didChangeRenewalPref, nil, subscription: id, now: now)]
        }
        let immediate = (new.level ?? 0) < (old.level ?? 0) || ((new.level ?? 0) == (old.level ?? 0) && new.period == old.period)
        if immediate {
            // Mark the current transaction upgraded.
            if var current = transactions[sub.latestTransactionId] {
                current.isUpgraded = true
                transactions[sub.latestTransactionId] = current
            }
            sub.productId = new.id
            sub.autoRenewProductId = new.id
            sub.purchaseDate = now
            sub.expiresDate = end(of: (new.period ?? ISODuration("P1M")!), from: now)
            sub.offer = nil
            sub.priceIncrease = nil
            sub.state = .active
            sub.gracePeriodExpires = nil
            sub.billingRetryStart = nil
            subscriptions[id] = sub
            let tx = issueTransaction(for: id, reason: .purchase, price: new.price, now: now)
            return [notification(.didChangeRenewalPref, .upgrade, subscription: id, transaction: tx, now: now)]
                + mirrorToFamily(id, .didChangeRenewalPref, .upgrade, now: now)
        }
        sub.autoRenewProductId = new.id
        subscriptions[id] = sub
        return [notification(.didChangeRenewalPref, .downgrade, subscription: id, now: now)]
    }

    // MARK: - Price increase

    /// Announces a price increase of `productId` to every active subscriber: `PRICE_INCREASE` `PENDING` when
    /// consent is required, `ACCEPTED` when not. The new price applies from the next renewal.
    public mutating func priceIncrease(product productId: String, newPrice: Int64, consentRequired: Bool, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        _ = try product(productId)
        var out: [PendingNotification] = []
        for (id, sub) in subscriptions.sorted(by: { $0.key < $1.key })
        where !sub.isFamilyShared && sub.autoRenewProductId == productId && sub.state != .expired && sub.state != .revoked {
            subscriptions[id]!.priceIncrease = PendingPriceIncrease(
                newPrice: newPrice, consentRequired: consentRequired, accepted: consentRequired ? nil : true)
            out.append(notification(.priceIncrease, consentRequired ? .pending : .accepted, subscription: id, now: now))
        }
        return out
    }

    /// The customer answers a price increase: accepting sends `PRICE_INCREASE` `ACCEPTED`; declining sends
    /// nothing now, and the subscription expires at renewal (`EXPIRED` `PRICE_INCREASE`).
    public mutating func respondToPriceIncrease(_ customerId: String, product productId: String, accept: Bool, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        let id = try requireSubscription(customerId, productId)
        guard var increase = subscriptions[id]!.priceIncrease else { throw .invalid("no price increase is pending") }
        increase.accepted = accept
        subscriptions[id]!.priceIncrease = increase
        return accept ? [notification(.priceIncrease, .accepted, subscription: id, now: now)] : []
    }

    // MARK: - Refunds

    /// Refunds a transaction (default: the customer's latest for the product): `REFUND` with the revocation
    /// fields; a refunded subscription is revoked (status 5) and family members get `REVOKE`.
    public mutating func refund(
        _ customerId: String, product productId: String, transactionId: String? = nil, reason: RevocationReason = .other,
        prorated: Bool = false, now: Int64
    ) throws(SimulatorError) -> [PendingNotification] {
        let txId = try refundableTransaction(customerId, productId, transactionId)
        var tx = transactions[txId]!
        tx.revocationDate = now
        tx.revocationReason = reason
        tx.revocationType = prorated ? .refundProrated : .refundFull
        tx.revocationPercentage = prorated ? 50_000 : nil
        transactions[txId] = tx
        guard tx.type == .autoRenewableSubscription, let originalId = tx.originalTransactionId,
            var sub = subscriptions[originalId]
        else {
            return [PendingNotification(type: .refund, transaction: tx, customerId: customerId, date: now)]
        }
        var out: [PendingNotification] = []
        if txId == sub.latestTransactionId {
            sub.state = .revoked
            sub.autoRenewBeforeRefund = sub.autoRenew
            sub.autoRenew = false
            subscriptions[originalId] = sub
        }
        out.append(notification(.refund, nil, subscription: originalId, transaction: tx, now: now))
        if txId == sub.latestTransactionId {
            for shareId in subscriptions.views(of: originalId) {
                out += revokeShare(shareId, now: now)
            }
        }
        return out
    }

    /// Apple declined a refund request: `REFUND_DECLINED`; nothing changes.
    public mutating func refundDeclined(_ customerId: String, product productId: String, transactionId: String? = nil, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        let txId = try refundableTransaction(customerId, productId, transactionId)
        let tx = transactions[txId]!
        if let originalId = tx.originalTransactionId, subscriptions[originalId] != nil, tx.type == .autoRenewableSubscription {
            return [notification(.refundDeclined, nil, subscription: originalId, transaction: tx, now: now)]
        }
        return [PendingNotification(type: .refundDeclined, transaction: tx, customerId: customerId, date: now)]
    }

    /// A refund was reversed: `REFUND_REVERSED`, the revocation fields cleared, and a subscription whose
    /// period has not ended is active again (its renewal date unchanged).
    public mutating func refundReversed(_ customerId: String, product productId: String, transactionId: String? = nil, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        let candidates = transactionOrder.reversed().filter {
            let tx = transactions[$0]!
            return tx.productId == productId && tx.revocationDate != nil && ownerOf(tx) == customerId
                && (transactionId == nil || tx.transactionId == transactionId)
        }
        guard let txId = candidates.first else { throw .invalid("no refunded transaction of \(productId) for \(customerId)") }
        var tx = transactions[txId]!
        tx.revocationDate = nil
        tx.revocationReason = nil
        tx.revocationType = nil
        tx.revocationPercentage = nil
        transactions[txId] = tx
        guard tx.type == .autoRenewableSubscription, let originalId = tx.originalTransactionId, var sub = subscriptions[originalId]
        else {
            return [PendingNotification(type: .refundReversed, transaction: tx, customerId: customerId, date: now)]
        }
        if sub.state == .revoked, txId == sub.latestTransactionId {
            sub.state = sub.expiresDate > now ? .active : .expired
            if sub.state == .active { sub.autoRenew = sub.autoRenewBeforeRefund ?? true }
            sub.autoRenewBeforeRefund = nil
            if sub.state == .expired { sub.expirationIntent = .other }
            subscriptions[originalId] = sub
        }
        return [notification(.refundReversed, nil, subscription: originalId, transaction: tx, now: now)]
    }

    /// Apple asks for consumption information about a refund request (`CONSUMPTION_REQUEST`) on a
    /// transaction (default: the customer's latest for the product).
    public mutating func consumptionRequest(
        _ customerId: String, product productId: String, transactionId: String? = nil,
        reason: ConsumptionRequestReason = .unintendedPurchase, now: Int64
    ) throws(SimulatorError) -> [PendingNotification] {
        let txId = try refundableTransaction(customerId, productId, transactionId)
        let tx = transactions[txId]!
        var pending: PendingNotification
        if tx.type == .autoRenewableSubscription, let originalId = tx.originalTransactionId, subscriptions[originalId] != nil {
            pending = notification(.consumptionRequest, nil, subscription: originalId, transaction: tx, now: now)
        } else {
            pending = PendingNotification(type: .consumptionRequest, transaction: tx, customerId: customerId, date: now)
        }
        pending.consumptionRequestReason = reason
        return [pending]
    }

    // MARK: - Renewal-date extensions

    /// Extends one subscription's renewal date by `days` (`RENEWAL_EXTENDED`). Family-shared views cannot be extended.
    public mutating func extendRenewalDate(_ customerId: String, product productId: String, days: Int, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        let id = try requireSubscription(customerId, productId)
        guard days > 0, days <= 90 else { throw .invalid("an extension is 1 to 90 days") }
        let sub = subscriptions[id]!
        guard !sub.isFamilyShared else { throw SimulatorError(code: "FAMILY_SHARED", "family-shared subscriptions cannot be extended") }
        guard sub.state == .active else { throw .invalid("only active subscriptions can be extended") }
        applyExtension(id, days: days)
        let tx = transactions[subscriptions[id]!.latestTransactionId]
        return [notification(.renewalExtended, nil, subscription: id, transaction: tx, now: now)]
            + mirrorToFamily(id, .renewalExtended, nil, now: now)
    }

    /// Extends every active, purchased subscription to `productId` in `storefronts` (all when empty) by `days`.
    /// Subscriptions that cannot be extended get `RENEWAL_EXTENSION` `FAILURE`; then one `SUMMARY`.
    public mutating func massExtendRenewalDate(
        product productId: String, days: Int, requestIdentifier: String, storefronts: [String] = [], now: Int64
    ) throws(SimulatorError) -> [PendingNotification] {
        _ = try product(productId)
        var succeeded: Int64 = 0
        var failed: Int64 = 0
        var out: [PendingNotification] = []
        for (id, sub) in subscriptions.sorted(by: { $0.key < $1.key }) where !sub.isFamilyShared && sub.productId == productId {
            let storefront = customers[sub.customerId]?.storefront ?? ""
            guard storefronts.isEmpty || storefronts.contains(storefront) else { continue }
            if sub.state == .active {
                applyExtension(id, days: days)
                succeeded += 1
            } else if sub.state != .expired && sub.state != .revoked {
                failed += 1
                out.append(notification(.renewalExtension, .failure, subscription: id, now: now))
            }
        }
        out.append(
            PendingNotification(
                type: .renewalExtension, subtype: .summary,
                summary: Summary(
                    environment: environment, appAppleId: environment == .production ? catalog.appAppleId : nil,
                    bundleId: catalog.bundleId, productId: productId, requestIdentifier: requestIdentifier,
                    storefrontCountryCodes: storefronts.isEmpty ? nil : storefronts, succeededCount: succeeded,
                    failedCount: failed),
                date: now))
        return out
    }

    private mutating func applyExtension(_ id: String, days: Int) {
        var sub = subscriptions[id]!
        sub.expiresDate += Int64(days) * Milliseconds.day
        sub.extendedDays += days
        subscriptions[id] = sub
        if var tx = transactions[sub.latestTransactionId] {
            tx.expiresDate = sub.expiresDate
            transactions[sub.latestTransactionId] = tx
        }
        for shareId in subscriptions.views(of: id) {
            let share = subscriptions[shareId]!
            subscriptions[shareId]!.expiresDate = sub.expiresDate
            if var tx = transactions[share.latestTransactionId] {
                tx.expiresDate = sub.expiresDate
                transactions[share.latestTransactionId] = tx
            }
        }
    }

    /// Sets (backfills) the app account token of an original transaction: the subscription's, or a
    /// one-time purchase's. Family-shared transactions are refused, as Apple does (4000185).
    public mutating func setAppAccountToken(originalTransactionId id: String, token: String) throws(SimulatorError) {
        guard UUID(uuidString: token) != nil else { throw SimulatorError(code: "INVALID_APP_ACCOUNT_TOKEN", "not a UUID") }
        if var sub = subscriptions[id] {
            guard !sub.isFamilyShared else { throw SimulatorError(code: "FAMILY_SHARED", "family-shared transaction") }
            sub.appAccountToken = token.lowercased()
            subscriptions[id] = sub
            return
        }
        guard var tx = transactions[id], tx.originalTransactionId == id else { throw .unknown("transaction", id) }
        guard tx.inAppOwnershipType != .familyShared else { throw SimulatorError(code: "FAMILY_SHARED", "family-shared transaction") }
        tx.appAccountToken = token.lowercased()
        transactions[id] = tx
    }

    /// The `TEST` notification (no signed transaction or renewal info).
    public func testNotification(now: Int64) -> PendingNotification {
        PendingNotification(type: .test, date: now)
    }

    // MARK: - Time

    /// The earliest moment after which ``processDue(now:)`` has something to do, if any.
    public mutating func nextDueTime() -> Int64? {
        subscriptions.nextDue()?.time
    }

    /// Runs everything due at or before `now`: renewals (or their failure), grace-period ends, expiry
    /// after 60 days of billing retry, voluntary and price-increase expiry. Events are stamped with the
    /// time they fell due, in time order (ties by original transaction id).
    public mutating func processDue(now: Int64) -> [PendingNotification] {
        var out: [PendingNotification] = []
        while let next = subscriptions.nextDue(), next.time <= now {
            out += step(next.id, at: next.time)
        }
        return out
    }

    private mutating func step(_ id: String, at time: Int64) -> [PendingNotification] {
        var sub = subscriptions[id]!
        switch sub.state {
        case .gracePeriod:
            if let graceEnd = sub.gracePeriodExpires, graceEnd <= time,
                time < (sub.billingRetryStart ?? sub.expiresDate) + Self.billingRetryWindow
            {
                sub.state = .billingRetry
                sub.gracePeriodExpires = nil
                subscriptions[id] = sub
                return [notification(.gracePeriodExpired, nil, subscription: id, now: time)]
                    + mirrorToFamily(id, .gracePeriodExpired, nil, now: time)
            }
            return expire(id, intent: .billingError, subtype: .billingRetry, at: time)
        case .billingRetry:
            return expire(id, intent: .billingError, subtype: .billingRetry, at: time)
        case .active:
            break
        case .expired, .revoked:
            return []
        }
        // Renewal time.
        guard sub.autoRenew else { return expire(id, intent: .customerCancelled, subtype: .voluntary, at: time) }
        if let increase = sub.priceIncrease, increase.consentRequired, increase.accepted != true {
            return expire(id, intent: .customerDidNotConsentToPriceIncrease, subtype: .priceIncrease, at: time)
        }
        guard let product = catalog.product(sub.autoRenewProductId), product.availableForSale, let period = product.period else {
            return expire(id, intent: .productNotAvailable, subtype: .productNotForSale, at: time)
        }
        guard customers[sub.customerId]?.paymentSucceeds == true else {
            sub.billingRetryStart = sub.expiresDate
            sub.expirationIntent = nil
            if let graceDays = catalog.gracePeriodDays, graceDays > 0 {
                sub.state = .gracePeriod
                sub.gracePeriodExpires = sub.expiresDate + Int64(graceDays) * Milliseconds.day
                subscriptions[id] = sub
                return [notification(.didFailToRenew, .gracePeriod, subscription: id, now: time)]
                    + mirrorToFamily(id, .didFailToRenew, .gracePeriod, now: time)
            }
            sub.state = .billingRetry
            subscriptions[id] = sub
            return [notification(.didFailToRenew, nil, subscription: id, now: time)]
                + mirrorToFamily(id, .didFailToRenew, nil, now: time)
        }
        let start = sub.expiresDate
        sub.productId = product.id
        var price = sub.priceIncrease?.newPrice ?? product.price
        var length = period
        if let pending = sub.pendingOffer {
            sub.offer = pending
            sub.pendingOffer = nil
            price = pending.offer.price
            length = pending.offer.period
        } else if var offer = sub.offer, offer.remainingPeriods > 0 {
            offer.remainingPeriods -= 1
            sub.offer = offer
            price = offer.offer.price
            length = offer.offer.period
        } else {
            sub.offer = nil
        }
        guard end(of: length, from: start) > start else {
            // A zero-length period would renew forever at one instant.
            return expire(id, intent: .productNotAvailable, subtype: .productNotForSale, at: time)
        }
        sub.priceIncrease = nil
        sub.purchaseDate = start
        sub.expiresDate = end(of: length, from: start)
        subscriptions[id] = sub
        let tx = issueTransaction(for: id, reason: .renewal, price: price, now: start)
        return [notification(.didRenew, nil, subscription: id, transaction: tx, now: time)]
            + mirrorToFamily(id, .didRenew, nil, now: time)
    }

    /// Recovers a subscription in billing retry or grace: `DID_RENEW` `BILLING_RECOVERY`. Recovered within
    /// grace, the new period starts at the old expiry (no days lost); in billing retry, it starts now.
    public mutating func recover(_ id: String, now: Int64) throws(SimulatorError) -> [PendingNotification] {
        guard var sub = subscriptions[id], sub.state == .billingRetry || sub.state == .gracePeriod else {
            throw .invalid("subscription \(id) is not in billing retry")
        }
        guard let product = catalog.product(sub.autoRenewProductId), let period = product.period else {
            throw .unknown("product", sub.autoRenewProductId)
        }
        let start = sub.state == .gracePeriod ? sub.expiresDate : now
        sub.state = .active
        sub.productId = product.id
        sub.gracePeriodExpires = nil
        sub.billingRetryStart = nil
        sub.purchaseDate = start
        sub.expiresDate = end(of: period, from: start)
        let price = sub.priceIncrease?.newPrice ?? product.price
        sub.priceIncrease = nil
        sub.offer = nil
        subscriptions[id] = sub
        let tx = issueTransaction(for: id, reason: .renewal, price: price, now: now, purchaseDate: start)
        return [notification(.didRenew, .billingRecovery, subscription: id, transaction: tx, now: now)]
            + mirrorToFamily(id, .didRenew, .billingRecovery, now: now)
    }

    private mutating func expire(_ id: String, intent: ExpirationIntent, subtype: NotificationSubtype, at time: Int64)
        -> [PendingNotification]
    {
        var sub = subscriptions[id]!
        sub.state = .expired
        sub.expirationIntent = intent
        sub.autoRenew = false
        sub.gracePeriodExpires = nil
        subscriptions[id] = sub
        let transaction = transactions[sub.latestTransactionId]
        return [notification(.expired, subtype, subscription: id, transaction: transaction, now: time)]
            + mirrorToFamily(id, .expired, subtype, now: time)
    }

    // MARK: - Family sharing internals

    private mutating func shareWithFamily(_ id: String, now: Int64) -> [PendingNotification] {
        let sub = subscriptions[id]!
        guard !sub.isFamilyShared, sub.state == .active || sub.state == .gracePeriod,
            let familyId = customers[sub.customerId]?.familyId, let family = families[familyId]
        else { return [] }
        var out: [PendingNotification] = []
        for member in family.members where member != sub.customerId {
            if subscriptions.views(of: id).contains(where: {
                subscriptions[$0]!.customerId == member && subscriptions[$0]!.state != .revoked
            }) {
                continue
            }
            let memberOriginalId = takeTransactionId()
            let view = SimulatedSubscription(
                originalTransactionId: memberOriginalId, customerId: member, groupId: sub.groupId, productId: sub.productId,
                autoRenewProductId: sub.autoRenewProductId, autoRenew: sub.autoRenew, state: sub.state,
                originalPurchaseDate: now, purchaseDate: sub.purchaseDate, expiresDate: sub.expiresDate, recentStartDate: now,
                latestTransactionId: memberOriginalId, sharedFrom: id, sharingEnabled: false)
            subscriptions[memberOriginalId] = view
            let tx = issueTransaction(
                for: memberOriginalId, reason: .purchase, price: 0, now: now, transactionId: memberOriginalId,
                purchaseDate: sub.purchaseDate)
            out.append(notification(.subscribed, .initialBuy, subscription: memberOriginalId, transaction: tx, now: now))
        }
        return out
    }

    private mutating func revokeShare(_ shareId: String, now: Int64) -> [PendingNotification] {
        guard var share = subscriptions[shareId], share.state != .revoked else { return [] }
        share.state = .revoked
        share.autoRenew = false
        subscriptions[shareId] = share
        var tx = transactions[share.latestTransactionId]!
        tx.revocationDate = now
        tx.revocationReason = .other
        tx.revocationType = .familyRevoke
        transactions[share.latestTransactionId] = tx
        return [notification(.revoke, nil, subscription: shareId, transaction: tx, now: now)]
    }

    /// Copies the purchaser's change to each family member's view and emits the same notification for them.
    private mutating func mirrorToFamily(_ id: String, _ type: NotificationTypeV2, _ subtype: NotificationSubtype?, now: Int64)
        -> [PendingNotification]
    {
        let source = subscriptions[id]!
        var out: [PendingNotification] = []
        for shareId in subscriptions.views(of: id) where subscriptions[shareId]!.state != .revoked {
            let share = subscriptions[shareId]!
            var view = share
            view.productId = source.productId
            view.autoRenewProductId = source.autoRenewProductId
            view.autoRenew = source.autoRenew
            view.state = source.state
            view.purchaseDate = source.purchaseDate
            view.expiresDate = source.expiresDate
            view.expirationIntent = source.expirationIntent
            view.gracePeriodExpires = source.gracePeriodExpires
            view.billingRetryStart = source.billingRetryStart
            subscriptions[shareId] = view
            var tx: JWSTransactionDecodedPayload?
            if type == .didRenew || type == .didChangeRenewalPref && subtype == .upgrade || type == .offerRedeemed
                || type == .subscribed
            {
                tx = issueTransaction(for: shareId, reason: type == .didRenew ? .renewal : .purchase, price: 0, now: now,
                    purchaseDate: source.purchaseDate)
            }
            out.append(notification(type, subtype, subscription: shareId, transaction: tx, now: now))
        }
        return out
    }

    // MARK: - Transactions and payloads

    private mutating func takeTransactionId() -> String {
        defer { nextTransactionNumber += 1 }
        return String(nextTransactionNumber)
    }

    private mutating func record(_ tx: JWSTransactionDecodedPayload) {
        if transactions[tx.transactionId!] == nil { transactionOrder.append(tx.transactionId!) }
        transactions[tx.transactionId!] = tx
    }

    private func baseTransaction(customer: SimulatedCustomer, product: SimulatedProduct, now: Int64) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            bundleId: catalog.bundleId, productId: product.id, subscriptionGroupIdentifier: product.group, quantity: 1,
            type: product.kind.productType, environment: environment, storefront: customer.storefront,
            storefrontId: Self.storefrontId(customer.storefront), transactionReason: .purchase, currency: product.currency,
            price: product.price)
    }

    /// A plausible numeric storefront id for an alpha-3 code (Apple's real ids are not derivable).
    static func storefrontId(_ storefront: String) -> String {
        ["USA": "143441", "GBR": "143444", "DEU": "143443", "FRA": "143442", "JPN": "143462", "CAN": "143455"][storefront]
            ?? "143441"
    }

    /// Issues the next transaction of subscription `id` for its current period.
    private mutating func issueTransaction(
        for id: String, reason: TransactionReason, price: Int64, now: Int64, transactionId: String? = nil,
        purchaseDate: Int64? = nil
    ) -> JWSTransactionDecodedPayload {
        var sub = subscriptions[id]!
        let customer = customers[sub.customerId]!
        let product = catalog.product(sub.productId)!
        var tx = baseTransaction(customer: customer, product: product, now: now)
        tx.transactionId = transactionId ?? takeTransactionId()
        tx.originalTransactionId = sub.originalTransactionId
        tx.webOrderLineItemId = String(nextWebOrderNumber)
        nextWebOrderNumber += 1
        tx.purchaseDate = purchaseDate ?? (reason == .renewal ? now : sub.purchaseDate)
        tx.originalPurchaseDate = sub.originalPurchaseDate
        tx.expiresDate = sub.expiresDate
        tx.transactionReason = reason
        tx.price = price
        tx.appAccountToken = sub.appAccountToken
        tx.inAppOwnershipType = sub.isFamilyShared ? .familyShared : .purchased
        if let offer = sub.offer, !sub.isFamilyShared {
            tx.offerType = offer.type
            tx.offerIdentifier = offer.offer.id
            tx.offerDiscountType = offer.offer.discountType
            tx.offerPeriod = offer.offer.period.text
        }
        sub.latestTransactionId = tx.transactionId!
        subscriptions[id] = sub
        record(tx)
        return tx
    }

    /// The renewal info of subscription `id` as of now.
    public func renewalInfo(_ id: String) -> JWSRenewalInfoDecodedPayload? {
        guard let sub = subscriptions[id] else { return nil }
        let next = catalog.product(sub.autoRenewProductId)
        var info = JWSRenewalInfoDecodedPayload(
            originalTransactionId: sub.originalTransactionId, autoRenewProductId: sub.autoRenewProductId,
            productId: sub.productId, autoRenewStatus: sub.autoRenew ? .on : .off, environment: environment,
            recentSubscriptionStartDate: sub.recentStartDate, currency: next?.currency, appAccountToken: sub.appAccountToken)
        info.isInBillingRetryPeriod = sub.state == .billingRetry || sub.state == .gracePeriod
        info.gracePeriodExpiresDate = sub.state == .gracePeriod ? sub.gracePeriodExpires : nil
        if sub.state == .expired || sub.state == .billingRetry || sub.state == .gracePeriod {
            info.expirationIntent = sub.state == .expired ? sub.expirationIntent : .billingError
        }
        if sub.autoRenew, sub.state != .expired, sub.state != .revoked {
            info.renewalDate = sub.expiresDate
            var price = sub.priceIncrease?.newPrice ?? next?.price
            if let offer = sub.pendingOffer ?? (sub.offer.flatMap { $0.remainingPeriods > 0 ? $0 : nil }) {
                info.offerType = offer.type
                info.offerIdentifier = offer.offer.id
                info.offerDiscountType = offer.offer.discountType
                info.offerPeriod = offer.offer.period.text
                price = offer.offer.price
            }
            info.renewalPrice = price
        }
        if let increase = sub.priceIncrease {
            info.priceIncreaseStatus = increase.accepted == true ? .customerConsentedOrWasNotifiedWithoutNeedingConsent : .customerHasNotResponded
        }
        if sub.state == .expired, !sub.isFamilyShared, let next, !next.winBackOffers.isEmpty {
            info.eligibleWinBackOfferIds = next.winBackOffers.compactMap(\.id)
        }
        return info
    }

    private func notification(
        _ type: NotificationTypeV2, _ subtype: NotificationSubtype?, subscription id: String,
        transaction: JWSTransactionDecodedPayload? = nil, now: Int64
    ) -> PendingNotification {
        let sub = subscriptions[id]!
        return PendingNotification(
            type: type, subtype: subtype, status: sub.state.status,
            transaction: transaction ?? transactions[sub.latestTransactionId], renewalInfo: renewalInfo(id),
            customerId: sub.customerId, date: now)
    }

    // MARK: - Lookups

    /// The customer's own (purchased, not family-shared) subscriptions, by original transaction id.
    public func subscriptionIds(of customerId: String) -> [String] {
        subscriptions.ids(of: customerId).filter { !subscriptions[$0]!.isFamilyShared }.sorted()
    }

    /// The customer's purchased subscription in `group`, if any.
    func activeOrLatestSubscription(_ customerId: String, group: String) throws(SimulatorError) -> String? {
        _ = try customer(customerId)
        return subscriptions.ids(of: customerId).first {
            subscriptions[$0]!.groupId == group && !subscriptions[$0]!.isFamilyShared
        }
    }

    func requireSubscription(_ customerId: String, _ productId: String) throws(SimulatorError) -> String {
        let product = try product(productId)
        guard product.kind == .autoRenewable, let group = product.group,
            let id = try activeOrLatestSubscription(customerId, group: group)
        else { throw .invalid("\(customerId) has no subscription in the group of \(productId)") }
        return id
    }

    private func ownerOf(_ tx: JWSTransactionDecodedPayload) -> String? {
        if let originalId = tx.originalTransactionId, let sub = subscriptions[originalId] { return sub.customerId }
        return oneTimeCustomer[tx.transactionId ?? ""]
    }

    private func refundableTransaction(_ customerId: String, _ productId: String, _ transactionId: String?) throws(SimulatorError)
        -> String
    {
        _ = try customer(customerId)
        let candidates = transactionOrder.reversed().filter { id in
            let tx = transactions[id]!
            return tx.productId == productId && tx.revocationDate == nil && tx.inAppOwnershipType == .purchased
                && (transactionId == nil || id == transactionId) && belongs(tx, to: customerId)
        }
        guard let id = candidates.first else { throw .invalid("no refundable transaction of \(productId) for \(customerId)") }
        return id
    }

    private func belongs(_ tx: JWSTransactionDecodedPayload, to customerId: String) -> Bool {
        if tx.type == .autoRenewableSubscription, let originalId = tx.originalTransactionId {
            return subscriptions[originalId]?.customerId == customerId
        }
        return oneTimeCustomer[tx.transactionId ?? ""] == customerId
    }

    /// Purchaser of each one-time transaction.
    public private(set) var oneTimeCustomer: [String: String] = [:]
}
