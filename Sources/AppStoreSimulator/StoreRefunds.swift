import AppStore
import Foundation

/// Refunds, declined and reversed refunds, consumption requests.
extension SimulatedStore {
    // MARK: - Refunds

    /// Refunds a transaction (default: the customer's latest for the product): `REFUND` with the revocation
    /// fields; a refunded subscription is revoked (status 5) and family members get `REVOKE`.
    public mutating func refund(
        _ customerId: String, product productId: String, transactionId: String? = nil, reason: RevocationReason = .other,
        prorated: Bool = false, now: Int64
    ) throws(SimulatorError) -> [PendingNotification] {
        let txId = try refundableTransaction(customerId, productId, transactionId)
        guard var tx = transactions[txId] else { throw .unknown("transaction", txId) }
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
        guard let tx = transactions[txId] else { throw .unknown("transaction", txId) }
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
            guard let tx = transactions[$0] else { return false }
            return tx.productId == productId && tx.revocationDate != nil && ownerOf(tx) == customerId
                && (transactionId == nil || tx.transactionId == transactionId)
        }
        guard let txId = candidates.first else { throw .invalid("no refunded transaction of \(productId) for \(customerId)") }
        guard var tx = transactions[txId] else { throw .unknown("transaction", txId) }
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
        guard let tx = transactions[txId] else { throw .unknown("transaction", txId) }
        var pending: PendingNotification
        if tx.type == .autoRenewableSubscription, let originalId = tx.originalTransactionId, subscriptions[originalId] != nil {
            pending = notification(.consumptionRequest, nil, subscription: originalId, transaction: tx, now: now)
        } else {
            pending = PendingNotification(type: .consumptionRequest, transaction: tx, customerId: customerId, date: now)
        }
        pending.consumptionRequestReason = reason
        return [pending]
    }

    func ownerOf(_ tx: JWSTransactionDecodedPayload) -> String? {
        if let originalId = tx.originalTransactionId, let sub = subscriptions[originalId] { return sub.customerId }
        return oneTimeCustomer[tx.transactionId ?? ""]
    }

    func refundableTransaction(_ customerId: String, _ productId: String, _ transactionId: String?) throws(SimulatorError)
        -> String
    {
        _ = try customer(customerId)
        let candidates = transactionOrder.reversed().filter { id in
            guard let tx = transactions[id] else { return false }
            return tx.productId == productId && tx.revocationDate == nil && tx.inAppOwnershipType == .purchased
                && (transactionId == nil || id == transactionId) && belongs(tx, to: customerId)
        }
        guard let id = candidates.first else { throw .invalid("no refundable transaction of \(productId) for \(customerId)") }
        return id
    }

    func belongs(_ tx: JWSTransactionDecodedPayload, to customerId: String) -> Bool {
        if tx.type == .autoRenewableSubscription, let originalId = tx.originalTransactionId {
            return subscriptions[originalId]?.customerId == customerId
        }
        return oneTimeCustomer[tx.transactionId ?? ""] == customerId
    }
}
