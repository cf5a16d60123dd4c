import AppStore
import struct Entitlements.NotificationSubtype
import Foundation

/// Time: renewals and their failure (billing retry, grace), recovery, expiry and renewal-date extensions.
extension SimulatedStore {
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
            guard let sub = subscriptions[id] else { continue }
            if sub.state == .billingRetry || sub.state == .gracePeriod { out += try recover(id, now: now) }
        }
        return out
    }


    // MARK: - Renewal-date extensions

    /// Extends one subscription's renewal date by `days` (`RENEWAL_EXTENDED`). Family-shared views cannot be extended.
    public mutating func extendRenewalDate(_ customerId: String, product productId: String, days: Int, now: Int64)
        throws(SimulatorError) -> [PendingNotification]
    {
        let id = try requireSubscription(customerId, productId)
        guard days > 0, days <= 90 else { throw .invalid("an extension is 1 to 90 days") }
        guard let sub = subscriptions[id] else { throw .unknown("subscription", id) }
        guard !sub.isFamilyShared else { throw SimulatorError(code: "FAMILY_SHARED", "family-shared subscriptions cannot be extended") }
        guard sub.state == .active else { throw .invalid("only active subscriptions can be extended") }
        applyExtension(id, days: days)
        let tx = subscriptions[id].flatMap { transactions[$0.latestTransactionId] }
        return [notification(.renewalExtended, nil, subscription: id, transaction: tx, now: now)]
            + mirrorToFamily(id, .renewalExtended, nil, now: now)
    }

    /// Extends every active, purchased subscription to `productId` in `storefronts` (all when empty) by `days`.
    /// Subscriptions that cannot be extended get `RENEWAL_EXTENSION` `FAILURE`; then one `SUMMARY`.
    public mutating func massExtendRenewalDate(
        product productId: String, days: Int, requestIdentifier: String, storefronts: [String] = [], now: Int64
    ) throws(SimulatorError) -> [PendingNotification] {
        _ = try product(productId)
        // Apple's limit, as for one subscription; it also keeps the date arithmetic far from overflow.
        guard days > 0, days <= 90 else { throw .invalid("an extension is 1 to 90 days") }
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

    mutating func applyExtension(_ id: String, days: Int) {
        guard var sub = subscriptions[id] else { return }
        sub.expiresDate += Int64(days) * Milliseconds.day
        sub.extendedDays += days
        subscriptions[id] = sub
        if var tx = transactions[sub.latestTransactionId] {
            tx.expiresDate = sub.expiresDate
            transactions[sub.latestTransactionId] = tx
        }
        for shareId in subscriptions.views(of: id) {
            guard let share = subscriptions[shareId] else { continue }
            subscriptions[shareId]?.expiresDate = sub.expiresDate
            if var tx = transactions[share.latestTransactionId] {
                tx.expiresDate = sub.expiresDate
                transactions[share.latestTransactionId] = tx
            }
        }
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

    mutating func step(_ id: String, at time: Int64) -> [PendingNotification] {
        guard var sub = subscriptions[id] else { return [] }
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

    mutating func expire(_ id: String, intent: ExpirationIntent, subtype: NotificationSubtype, at time: Int64)
        -> [PendingNotification]
    {
        guard var sub = subscriptions[id] else { return [] }
        sub.state = .expired
        sub.expirationIntent = intent
        sub.autoRenew = false
        sub.gracePeriodExpires = nil
        subscriptions[id] = sub
        let transaction = transactions[sub.latestTransactionId]
        return [notification(.expired, subtype, subscription: id, transaction: transaction, now: time)]
            + mirrorToFamily(id, .expired, subtype, now: time)
    }
}
