import AppStore
import struct Entitlements.NotificationSubtype
import Foundation

/// Purchases, product changes, auto-renew preferences and price increases.
extension SimulatedStore {
    // MARK: - Purchases

    /// Which offer a purchase uses.
    public enum OfferChoice: Sendable, Hashable {
        case introductory
        case promotional(String)
        case offerCode(String)
        case winBack(String)
        /// One of the product's promotional offers given as a retention offer (`offerType` 5): what
        /// Apple applies when the cancel sheet's retention answer offers it to a subscriber.
        case retention(String)
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
            return try oneTimePurchase(customer, product, appAccountToken: appAccountToken, quantity: quantity, now: now)
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
            case .retention(let id):
                guard let offer = product.promotionalOffers.first(where: { $0.id == id }) else { throw .unknown("offer", id) }
                guard existing != nil, isActive else {
                    throw SimulatorError(code: "NOT_ELIGIBLE", "retention offers keep an active subscription")
                }
                applied = AppliedOffer(type: .retentionOffer, offer: offer, remainingPeriods: 0)
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
        if applied?.type == .introductoryOffer { customers[customerId]?.introUsedInGroups.insert(group) }

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

    mutating func oneTimePurchase(
        _ customer: SimulatedCustomer, _ product: SimulatedProduct, appAccountToken: String?, quantity: Int32, now: Int64
    ) throws(SimulatorError) -> [PendingNotification] {
        let billed = product.kind == .consumable ? quantity : 1
        // The quantity comes from the request: a product of it beyond Int64 is refused, not a trap.
        let (price, overflow) = product.price.multipliedReportingOverflow(by: Int64(billed))
        guard !overflow else { throw .invalid("\(billed) × \(product.id) costs more than the store can count") }
        let id = takeTransactionId()
        var tx = baseTransaction(customer: customer, product: product, now: now)
        tx.transactionId = id
        tx.originalTransactionId = id
        tx.purchaseDate = now
        tx.originalPurchaseDate = now
        tx.quantity = billed
        tx.price = price
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
        guard var sub = subscriptions[id] else { throw .unknown("subscription", id) }
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
        guard var sub = subscriptions[id] else { throw .unknown("subscription", id) }
        let old = try product(sub.productId)
        let new = try product(newProductId)
        guard new.kind == .autoRenewable, new.group == old.group else { throw .invalid("\(newProductId) is not in group \(old.group ?? "")") }
        guard sub.state == .active || sub.state == .gracePeriod else { throw .invalid("the subscription is not active") }
        if new.id == sub.productId {
            guard sub.autoRenewProductId != new.id else { return [] }
            sub.autoRenewProductId = new.id
            subscriptions[id] = sub
            return [notification(.didChangeRenewalPref, nil, subscription: id, now: now)]
        }
        let immediate = (new.level ?? 0) < (old.level ?? 0) || ((new.level ?? 0) == (old.level ?? 0) && new.period == old.period)
        if immediate {
            // Like `purchase`, an immediate switch needs the new product's period.
            guard let newPeriod = new.period else { throw .invalid("\(newProductId) has no period") }
            // Mark the current transaction upgraded.
            if var current = transactions[sub.latestTransactionId] {
                current.isUpgraded = true
                transactions[sub.latestTransactionId] = current
            }
            sub.productId = new.id
            sub.autoRenewProductId = new.id
            sub.purchaseDate = now
            sub.expiresDate = end(of: newPeriod, from: now)
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
            subscriptions[id]?.priceIncrease = PendingPriceIncrease(
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
        guard var increase = subscriptions[id]?.priceIncrease else { throw .invalid("no price increase is pending") }
        increase.accepted = accept
        subscriptions[id]?.priceIncrease = increase
        return accept ? [notification(.priceIncrease, .accepted, subscription: id, now: now)] : []
    }
}
