import AppStore
import struct Entitlements.NotificationType
import struct Entitlements.NotificationSubtype
import Foundation

/// Family Sharing: groups, sharing a purchase with the members, and mirroring the purchaser's changes to their views.
extension SimulatedStore {
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
        for member in members { customers[member]?.familyId = id }
        var out: [PendingNotification] = []
        for member in members {
            for subId in subscriptionIds(of: member) where subscriptions[subId]?.sharingEnabled == true {
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
        customers[customerId]?.familyId = familyId
        var out: [PendingNotification] = []
        for member in family.members {
            for subId in subscriptionIds(of: member) where subscriptions[subId]?.sharingEnabled == true {
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
        for id in subscriptions.ids(of: customerId) where subscriptions[id]?.isFamilyShared == true {
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
        customers[customerId]?.familyId = nil
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
        subscriptions[id]?.sharingEnabled = enabled
        if enabled { return shareWithFamily(id, now: now) }
        var out: [PendingNotification] = []
        for shareId in subscriptions.views(of: id) {
            out += revokeShare(shareId, now: now)
        }
        return out
    }

    // MARK: - Family sharing internals

    mutating func shareWithFamily(_ id: String, now: Int64) -> [PendingNotification] {
        guard let sub = subscriptions[id] else { return [] }
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

    mutating func revokeShare(_ shareId: String, now: Int64) -> [PendingNotification] {
        guard var share = subscriptions[shareId], share.state != .revoked else { return [] }
        share.state = .revoked
        share.autoRenew = false
        subscriptions[shareId] = share
        guard var tx = transactions[share.latestTransactionId] else { return [] }
        tx.revocationDate = now
        tx.revocationReason = .other
        tx.revocationType = .familyRevoke
        transactions[share.latestTransactionId] = tx
        return [notification(.revoke, nil, subscription: shareId, transaction: tx, now: now)]
    }

    /// Copies the purchaser's change to each family member's view and emits the same notification for them.
    mutating func mirrorToFamily(_ id: String, _ type: NotificationType, _ subtype: NotificationSubtype?, now: Int64)
        -> [PendingNotification]
    {
        guard let source = subscriptions[id] else { return [] }
        var out: [PendingNotification] = []
        for shareId in subscriptions.views(of: id) {
            guard let share = subscriptions[shareId], share.state != .revoked else { continue }
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
}
