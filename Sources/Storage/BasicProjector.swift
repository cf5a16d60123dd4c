import Foundation

/// A minimal ``Projector`` that reads a few fields of each fact's decoded JSON.
///
/// It stands in until the entitlement engine is wired (tests, the crash child, `entitled rebuild`
/// before then); it knows nothing of grace periods, offers, family sharing or upgrades.
///
/// Per `originalTransactionId`, the latest `transaction` fact (by `signedDate`) gives `productId`,
/// `expiresDate`, `environment`, `subscriptionGroupIdentifier` and `revocationDate`; the latest
/// `renewal` fact gives `autoRenewStatus` (1 = on). Status is `revoked`, `active` (expires after
/// `now`) or `expired`. The entitlement is ``entitlements``[productId], or the product id itself.
public struct BasicProjector: Projector {
    /// Product id → entitlement name.
    public var entitlements: [String: String]

    /// Creates the projector.
    public init(entitlements: [String: String] = [:]) {
        self.entitlements = entitlements
    }

    public func project(customer: CustomerRecord, facts: [StoredFact], now: Int64) -> CustomerProjection {
        struct Latest {
            var transaction: [String: Any]?
            var transactionDate: Int64 = .min
            var autoRenew: Bool?
            var renewalDate: Int64 = .min
        }
        var byOTID: [String: Latest] = [:]
        for stored in facts {
            guard let otid = stored.fact.originalTransactionId,
                let data = stored.fact.payload.data(using: .utf8),
                let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            else { continue }
            let signed = stored.fact.signedDate ?? 0
            var latest = byOTID[otid] ?? Latest()
            switch stored.fact.kind {
            case .transaction where signed >= latest.transactionDate:
                latest.transaction = object
                latest.transactionDate = signed
            case .renewal where signed >= latest.renewalDate:
                latest.autoRenew = Self.int(object["autoRenewStatus"]).map { $0 == 1 }
                latest.renewalDate = signed
            default:
                break
            }
            byOTID[otid] = latest
        }
        var subscriptions: [SubscriptionRow] = []
        var entitlementRows: [String: EntitlementRow] = [:]
        for (otid, latest) in byOTID {
            guard let transaction = latest.transaction, let productId = transaction["productId"] as? String else { continue }
            let expires = Self.int(transaction["expiresDate"])
            let environment = transaction["environment"] as? String ?? "Production"
            let status: String
            if Self.int(transaction["revocationDate"]) != nil {
                status = "revoked"
            } else if let expires, expires <= now {
                status = "expired"
            } else {
                status = "active"
            }
            let autoRenew = latest.autoRenew ?? (status == "active")
            subscriptions.append(
                SubscriptionRow(
                    originalTransactionId: otid, productId: productId,
                    group: transaction["subscriptionGroupIdentifier"] as? String, status: status, expiresAt: expires,
                    graceUntil: nil, autoRenew: autoRenew, environment: environment))
            let name = entitlements[productId] ?? productId
            let row = EntitlementRow(
                entitlement: name, status: status, active: status == "active", productId: productId,
                originalTransactionId: otid, expiresAt: expires, graceUntil: nil, willRenew: autoRenew,
                environment: environment)
            let key = name + "\u{0}" + environment
            // Keep the best row per entitlement: active first, then the latest expiry, then the smallest id.
            if let existing = entitlementRows[key] {
                let better =
                    (row.active && !existing.active)
                    || (row.active == existing.active
                        && ((row.expiresAt ?? .max) > (existing.expiresAt ?? .max)
                            || ((row.expiresAt ?? .max) == (existing.expiresAt ?? .max)
                                && otid < (existing.originalTransactionId ?? ""))))
                if better { entitlementRows[key] = row }
            } else {
                entitlementRows[key] = row
            }
        }
        let projection = CustomerProjection(
            entitlements: Array(entitlementRows.values), subscriptions: subscriptions, state: []
        ).canonical
        let document: [String: Any] = [
            "appUserId": customer.appUserId,
            "appAccountToken": customer.appAccountToken,
            "entitlements": projection.entitlements.map { row -> [String: Any] in
                var item: [String: Any] = [
                    "entitlement": row.entitlement, "status": row.status, "active": row.active,
                    "environment": row.environment, "willRenew": row.willRenew,
                ]
                item["productId"] = row.productId
                item["expiresAt"] = row.expiresAt
                return item
            },
        ]
        let state = (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])).map { Array($0) } ?? Array("{}".utf8)
        return CustomerProjection(entitlements: projection.entitlements, subscriptions: projection.subscriptions, state: state)
    }

    private static func int(_ value: Any?) -> Int64? {
        switch value {
        case let number as NSNumber: return number.int64Value
        case let text as String: return Int64(text)
        default: return nil
        }
    }
}
