import Entitlements
import Testing

/// One notification as Apple sends it: its metadata plus the transaction and renewal info of its
/// `data`, on top of a base history; `checks` must hold at `now`. With `unchanged`, the state must
/// equal the base's state (the notification is informational).
struct NotificationCase: Sendable, CustomTestStringConvertible {
    var type: String
    var subtype: String?
    var label: String
    var base: [Fact]
    var added: [Fact]
    var now: Int64
    var checks: [Check] = []
    var unchanged = false
    var testDescription: String { "\(type)\(subtype.map { "/" + $0 } ?? "") \(label)" }
}

private let e1 = months(1)
private let e2 = months(2)
/// A monthly subscription bought at T0, renewing at e1.
private let bought: [Fact] = [
    tx("t1", purchase: T0, expires: e1), renewal(signed: T0), note(.subscribed, .initialBuy, at: T0, txn: "t1"),
]
private let mid = T0 + 10 * day
/// Renewal failed at e1 without grace.
private let failed: [Fact] = bought + [renewal(retry: true, intent: 2, signed: e1), note(.didFailToRenew, at: e1, txn: "t1")]
/// A family-shared subscription.
private let familyShared: [Fact] = [
    tx("f1", otid: "fam", purchase: T0, expires: e1, ownership: .familyShared, price: nil),
    renewal(otid: "fam", signed: T0),
]
/// Refunded at mid.
private let refunded: [Fact] = bought + [
    tx("t1", purchase: T0, expires: e1, signed: mid, revoked: mid, revocationType: .refundFull),
    note(.refund, at: mid, txn: "t1"),
]

let v2Cases: [NotificationCase] = [
    NotificationCase(
        type: "SUBSCRIBED", subtype: "INITIAL_BUY", label: "first purchase", base: [], added: bought, now: T0 + hour,
        checks: [.status("pro", .active), .willRenew("pro", true), .customer(.active), .groupClass("premium", .active)]),
    NotificationCase(
        type: "SUBSCRIBED", subtype: "INITIAL_BUY", label: "family member's first access", base: [],
        added: familyShared + [note(.subscribed, .initialBuy, at: T0, otid: "fam", txn: "f1")], now: T0 + hour,
        checks: [.status("pro", .active), .ownership("pro", .familyShared)]),
    NotificationCase(
        type: "SUBSCRIBED", subtype: "RESUBSCRIBE", label: "same group again after a lapse",
        base: bought + [renewal(autoRenew: false, signed: mid)],
        added: [
            tx("t2", purchase: months(3), expires: months(4)), renewal(signed: months(3)),
            note(.subscribed, .resubscribe, at: months(3), txn: "t2"),
        ],
        now: months(3) + hour,
        checks: [.status("pro", .active), .transaction("pro", "t2"), .willRenew("pro", true), .unsubscribed("pro", nil)]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", label: "takes effect at once", base: bought,
        added: [
            tx("t1", purchase: T0, expires: e1, signed: mid, revoked: mid, upgraded: true),
            tx("t2", product: "monthly.plus", purchase: mid, expires: months(1, after: mid)),
            renewal(product: "monthly.plus", signed: mid), note(.didChangeRenewalPref, .upgrade, at: mid, txn: "t2"),
        ],
        now: mid + hour,
        checks: [
            .status("plus", .active), .status("pro", .active), .product("pro", "monthly.plus"),
            .expires("pro", months(1, after: mid)),
        ]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", label: "at the next renewal", base: bought,
        added: [
            renewal(next: "basic.monthly", signed: mid), note(.didChangeRenewalPref, .downgrade, at: mid, txn: "t1"),
        ],
        now: mid + hour,
        checks: [
            .status("pro", .active), .product("pro", "monthly"), .renewsTo("pro", "basic.monthly"),
            .pendingChange("premium", .downgrade), .status("basic", nil),
        ]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", label: "crossgrade to another duration", base: bought,
        added: [renewal(next: "yearly", signed: mid), note(.didChangeRenewalPref, .downgrade, at: mid, txn: "t1")],
        now: mid + hour,
        checks: [.product("pro", "monthly"), .renewsTo("pro", "yearly"), .pendingChange("premium", .crossgrade)]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_PREF", subtype: nil, label: "reverts a pending downgrade",
        base: bought + [renewal(next: "basic.monthly", signed: mid)],
        added: [renewal(signed: mid + day), note(.didChangeRenewalPref, at: mid + day, txn: "t1")],
        now: mid + 2 * day,
        checks: [.renewsTo("pro", nil), .pendingChange("premium", nil)]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", label: "still active until expiry",
        base: bought,
        added: [renewal(autoRenew: false, signed: mid), note(.didChangeRenewalStatus, .autoRenewDisabled, at: mid)],
        now: mid + hour,
        checks: [.status("pro", .active), .willRenew("pro", false), .unsubscribed("pro", mid)]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_ENABLED", label: "turned back on",
        base: bought + [renewal(autoRenew: false, signed: mid)],
        added: [renewal(signed: mid + day), note(.didChangeRenewalStatus, .autoRenewEnabled, at: mid + day)],
        now: mid + 2 * day,
        checks: [.willRenew("pro", true), .unsubscribed("pro", nil)]),
    NotificationCase(
        type: "OFFER_REDEEMED", subtype: nil, label: "on the active subscription", base: bought,
        added: [renewal(offer: .promotional, signed: mid), note(.offerRedeemed, at: mid, txn: "t1")],
        now: mid + hour,
        checks: [.status("pro", .active), .product("pro", "monthly"), .willRenew("pro", true)]),
    NotificationCase(
        type: "OFFER_REDEEMED", subtype: "UPGRADE", label: "offer on a higher level, at once", base: bought,
        added: [
            tx("t1", purchase: T0, expires: e1, signed: mid, revoked: mid, upgraded: true),
            tx("t2", product: "monthly.plus", purchase: mid, expires: months(1, after: mid), offer: .promotional,
               discount: .payAsYouGo),
            renewal(product: "monthly.plus", signed: mid), note(.offerRedeemed, .upgrade, at: mid, txn: "t2"),
        ],
        now: mid + hour,
        checks: [.status("plus", .active), .period("plus", .promotional)]),
    NotificationCase(
        type: "OFFER_REDEEMED", subtype: "DOWNGRADE", label: "offer on a lower level, next renewal", base: bought,
        added: [
            renewal(next: "basic.monthly", offer: .offerCode, signed: mid),
            note(.offerRedeemed, .downgrade, at: mid, txn: "t1"),
        ],
        now: mid + hour,
        checks: [.product("pro", "monthly"), .renewsTo("pro", "basic.monthly")]),
    NotificationCase(
        type: "DID_RENEW", subtype: nil, label: "normal renewal", base: bought,
        added: [tx("t2", purchase: e1, expires: e2), renewal(signed: e1), note(.didRenew, at: e1, txn: "t2")],
        now: e1 + hour,
        checks: [.status("pro", .active), .transaction("pro", "t2"), .expires("pro", e2)]),
    NotificationCase(
        type: "DID_RENEW", subtype: nil, label: "recovered inside the grace period",
        base: bought + [renewal(retry: true, grace: e1 + 16 * day, signed: e1), note(.didFailToRenew, .gracePeriod, at: e1)],
        added: [
            tx("t2", purchase: e1 + 5 * day, expires: e2), renewal(signed: e1 + 5 * day),
            note(.didRenew, at: e1 + 5 * day, txn: "t2"),
        ],
        now: e1 + 5 * day + hour,
        checks: [.status("pro", .active), .expires("pro", e2), .grace("pro", nil), .billingIssue("pro", nil)]),
    NotificationCase(
        type: "DID_RENEW", subtype: "BILLING_RECOVERY", label: "expired subscription recovered", base: failed,
        added: [
            tx("t2", purchase: e1 + 10 * day, expires: months(1, after: e1 + 10 * day)),
            renewal(signed: e1 + 10 * day), note(.didRenew, .billingRecovery, at: e1 + 10 * day, txn: "t2"),
        ],
        now: e1 + 10 * day + hour,
        checks: [.status("pro", .active), .billingIssue("pro", nil), .customer(.active)]),
    NotificationCase(
        type: "EXPIRED", subtype: "VOLUNTARY", label: "customer turned auto-renew off",
        base: bought + [renewal(autoRenew: false, signed: mid)],
        added: [renewal(autoRenew: false, intent: 1, signed: e1), note(.expired, .voluntary, at: e1, txn: "t1")],
        now: e1 + hour,
        checks: [.status("pro", .expired), .willRenew("pro", false), .customer(.inactive)]),
    NotificationCase(
        type: "EXPIRED", subtype: "BILLING_RETRY", label: "retry ended before 60 days", base: failed,
        added: [
            renewal(autoRenew: false, retry: false, intent: 2, signed: e1 + 40 * day),
            note(.expired, .billingRetry, at: e1 + 40 * day, txn: "t1"),
        ],
        now: e1 + 41 * day,
        checks: [.status("pro", .expired), .billingIssue("pro", nil)]),
    NotificationCase(
        type: "EXPIRED", subtype: "BILLING_RETRY", label: "notification alone ends the retry", base: failed,
        added: [note(.expired, .billingRetry, at: e1 + 40 * day, txn: "t1")],
        now: e1 + 41 * day,
        checks: [.status("pro", .expired)]),
    NotificationCase(
        type: "EXPIRED", subtype: "PRICE_INCREASE", label: "no consent",
        base: bought + [renewal(priceIncrease: 0, signed: mid)],
        added: [
            renewal(autoRenew: false, intent: 3, priceIncrease: 0, signed: e1),
            note(.expired, .priceIncrease, at: e1, txn: "t1"),
        ],
        now: e1 + hour,
        checks: [.status("pro", .expired), .priceIncrease("pro", .pending)]),
    NotificationCase(
        type: "EXPIRED", subtype: "PRODUCT_NOT_FOR_SALE", label: "product removed", base: bought,
        added: [
            renewal(autoRenew: false, intent: 4, signed: e1), note(.expired, .productNotForSale, at: e1, txn: "t1"),
        ],
        now: e1 + hour, checks: [.status("pro", .expired)]),
    NotificationCase(
        type: "EXPIRED", subtype: nil, label: "other reason", base: bought,
        added: [renewal(autoRenew: false, intent: 5, signed: e1), note(.expired, at: e1, txn: "t1")],
        now: e1 + hour, checks: [.status("pro", .expired)]),
    NotificationCase(
        type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", label: "service continues", base: bought,
        added: [
            renewal(retry: true, grace: e1 + 16 * day, intent: 2, signed: e1),
            note(.didFailToRenew, .gracePeriod, at: e1, txn: "t1"),
        ],
        now: e1 + day,
        checks: [
            .status("pro", .gracePeriod), .active("pro", true), .grace("pro", e1 + 16 * day),
            .billingIssue("pro", e1), .customer(.active),
        ]),
    NotificationCase(
        type: "DID_FAIL_TO_RENEW", subtype: nil, label: "service stops, retry continues", base: bought,
        added: [renewal(retry: true, intent: 2, signed: e1), note(.didFailToRenew, at: e1, txn: "t1")],
        now: e1 + day,
        checks: [
            .status("pro", .billingRetry), .active("pro", false), .grace("pro", nil), .billingIssue("pro", e1),
        ]),
    NotificationCase(
        type: "DID_FAIL_TO_RENEW", subtype: nil, label: "newer than the last renewal info", base: bought,
        added: [note(.didFailToRenew, at: e1, txn: "t1")],
        now: e1 + day, checks: [.status("pro", .billingRetry), .billingIssue("pro", e1)]),
    NotificationCase(
        type: "GRACE_PERIOD_EXPIRED", subtype: nil, label: "ends grace even before its date",
        base: bought + [renewal(retry: true, grace: e1 + 16 * day, signed: e1)],
        added: [note(.gracePeriodExpired, at: e1 + 6 * day, txn: "t1")],
        now: e1 + 7 * day,
        checks: [.status("pro", .billingRetry), .active("pro", false)]),
    NotificationCase(
        type: "PRICE_INCREASE", subtype: "PENDING", label: "consent needed", base: bought,
        added: [renewal(priceIncrease: 0, signed: mid), note(.priceIncrease, .pending, at: mid, txn: "t1")],
        now: mid + hour, checks: [.status("pro", .active), .priceIncrease("pro", .pending)]),
    NotificationCase(
        type: "PRICE_INCREASE", subtype: "ACCEPTED", label: "consented",
        base: bought + [renewal(priceIncrease: 0, signed: mid)],
        added: [renewal(priceIncrease: 1, signed: mid + day), note(.priceIncrease, .accepted, at: mid + day, txn: "t1")],
        now: mid + 2 * day, checks: [.priceIncrease("pro", .accepted)]),
    NotificationCase(
        type: "PRICE_INCREASE", subtype: "PENDING", label: "notification without renewal info", base: bought,
        added: [note(.priceIncrease, .pending, at: mid, txn: "t1")],
        now: mid + hour, checks: [.priceIncrease("pro", .pending)]),
    NotificationCase(
        type: "REFUND", subtype: nil, label: "full refund", base: bought,
        added: [
            tx("t1", purchase: T0, expires: e1, signed: mid, revoked: mid, revocationType: .refundFull),
            note(.refund, at: mid, txn: "t1"),
        ],
        now: mid + hour, checks: [.status("pro", .refunded), .active("pro", false), .customer(.inactive)]),
    NotificationCase(
        type: "REFUND", subtype: nil, label: "prorated refund", base: bought,
        added: [
            tx("t1", purchase: T0, expires: e1, signed: mid, revoked: mid, revocationType: .refundProrated),
            note(.refund, at: mid, txn: "t1"),
        ],
        now: mid + hour, checks: [.status("pro", .refunded)]),
    NotificationCase(
        type: "REFUND", subtype: nil, label: "notification alone, newer than the transaction", base: bought,
        added: [note(.refund, at: mid, txn: "t1")],
        now: mid + hour, checks: [.status("pro", .refunded)]),
    NotificationCase(
        type: "REFUND", subtype: nil, label: "of a non-consumable",
        base: [tx("n1", otid: "n1", product: "lifetime", purchase: T0, type: .nonConsumable)],
        added: [
            tx("n1", otid: "n1", product: "lifetime", purchase: T0, signed: mid, type: .nonConsumable, revoked: mid),
            note(.refund, at: mid, otid: "n1", txn: "n1"),
        ],
        now: mid + hour, checks: [.owned("lifetime", false), .status("pro", .refunded)]),
    NotificationCase(
        type: "REFUND_DECLINED", subtype: nil, label: "changes nothing", base: bought,
        added: [note(.refundDeclined, at: mid, txn: "t1")], now: mid + hour, unchanged: true),
    NotificationCase(
        type: "REFUND_REVERSED", subtype: nil, label: "reinstates with a newer transaction version", base: refunded,
        added: [tx("t1", purchase: T0, expires: e1, signed: mid + day), note(.refundReversed, at: mid + day, txn: "t1")],
        now: mid + 2 * day, checks: [.status("pro", .active), .expires("pro", e1)]),
    NotificationCase(
        type: "REFUND_REVERSED", subtype: nil, label: "notification alone reinstates", base: refunded,
        added: [note(.refundReversed, at: mid + day, txn: "t1")],
        now: mid + 2 * day, checks: [.status("pro", .active)]),
    NotificationCase(
        type: "CONSUMPTION_REQUEST", subtype: nil, label: "informational", base: bought,
        added: [note(.consumptionRequest, at: mid, txn: "t1")], now: mid + hour, unchanged: true),
    NotificationCase(
        type: "RENEWAL_EXTENDED", subtype: nil, label: "new expiry from the re-signed transaction", base: bought,
        added: [tx("t1", purchase: T0, expires: e1 + 7 * day, signed: mid), note(.renewalExtended, at: mid, txn: "t1")],
        now: e1 + 3 * day, checks: [.status("pro", .active), .expires("pro", e1 + 7 * day)]),
    NotificationCase(
        type: "RENEWAL_EXTENSION", subtype: "SUMMARY", label: "mass extension summary", base: bought,
        added: [note(.renewalExtension, .summary, at: mid, otid: nil)], now: mid + hour, unchanged: true),
    NotificationCase(
        type: "RENEWAL_EXTENSION", subtype: "FAILURE", label: "one subscription not extended", base: bought,
        added: [note(.renewalExtension, .failure, at: mid, txn: "t1")], now: e1 + hour,
        checks: [.status("pro", .expired)], unchanged: true),
    NotificationCase(
        type: "REVOKE", subtype: nil, label: "family share withdrawn", base: familyShared,
        added: [
            tx("f1", otid: "fam", purchase: T0, expires: e1, signed: mid, ownership: .familyShared, revoked: mid,
               revocationType: .familyRevoke, price: nil),
            note(.revoke, at: mid, otid: "fam", txn: "f1"),
        ],
        now: mid + hour, checks: [.status("pro", .revoked), .active("pro", false), .customer(.inactive)]),
    NotificationCase(
        type: "REVOKE", subtype: nil, label: "notification alone", base: familyShared,
        added: [note(.revoke, at: mid, otid: "fam", txn: "f1")],
        now: mid + hour, checks: [.status("pro", .revoked)]),
    NotificationCase(
        type: "TEST", subtype: nil, label: "informational", base: bought,
        added: [note(.test, at: mid, otid: nil)], now: mid, unchanged: true),
    NotificationCase(
        type: "EXTERNAL_PURCHASE_TOKEN", subtype: "UNREPORTED", label: "not ours", base: bought,
        added: [note(.externalPurchaseToken, .unreported, at: mid, otid: nil)], now: mid, unchanged: true),
    NotificationCase(
        type: "EXTERNAL_PURCHASE_TOKEN", subtype: "CREATED", label: "not ours", base: bought,
        added: [note(.externalPurchaseToken, .created, at: mid, otid: nil)], now: mid, unchanged: true),
    NotificationCase(
        type: "EXTERNAL_PURCHASE_TOKEN", subtype: "ACTIVE_TOKEN_REMINDER", label: "not ours", base: bought,
        added: [note(.externalPurchaseToken, .activeTokenReminder, at: mid, otid: nil)], now: mid, unchanged: true),
    NotificationCase(
        type: "ONE_TIME_CHARGE", subtype: nil, label: "non-consumable", base: [],
        added: [
            tx("n1", otid: "n1", product: "lifetime", purchase: T0, type: .nonConsumable),
            note(.oneTimeCharge, at: T0, otid: "n1", txn: "n1"),
        ],
        now: T0 + hour, checks: [.owned("lifetime", true), .status("pro", .active), .customer(.active)]),
    NotificationCase(
        type: "ONE_TIME_CHARGE", subtype: nil, label: "family access to a non-consumable", base: [],
        added: [
            tx("n1", otid: "n1", product: "lifetime", purchase: T0, type: .nonConsumable, ownership: .familyShared),
            note(.oneTimeCharge, at: T0, otid: "n1", txn: "n1"),
        ],
        now: T0 + hour, checks: [.owned("lifetime", true), .ownership("pro", .familyShared)]),
    NotificationCase(
        type: "ONE_TIME_CHARGE", subtype: nil, label: "consumable", base: [],
        added: [
            tx("c1", otid: "c1", product: "coins", purchase: T0, type: .consumable, quantity: 3),
            note(.oneTimeCharge, at: T0, otid: "c1", txn: "c1"),
        ],
        now: T0 + hour, checks: [.balance("coins", 3)]),
    NotificationCase(
        type: "ONE_TIME_CHARGE", subtype: nil, label: "non-renewing subscription", base: [],
        added: [
            tx("p1", otid: "p1", product: "pass.month", purchase: T0, type: .nonRenewing),
            note(.oneTimeCharge, at: T0, otid: "p1", txn: "p1"),
        ],
        now: T0 + hour, checks: [.status("pass", .active), .passExpires("pass", months(1))]),
    NotificationCase(
        type: "RESCIND_CONSENT", subtype: nil, label: "app data only", base: bought,
        added: [note(.rescindConsent, at: mid, otid: nil)], now: mid, unchanged: true),
    NotificationCase(
        type: "METADATA_UPDATE", subtype: nil, label: "Advanced Commerce only", base: bought,
        added: [note(.metadataUpdate, at: mid, txn: "t1")], now: mid, unchanged: true),
    NotificationCase(
        type: "MIGRATION", subtype: nil, label: "Advanced Commerce only", base: bought,
        added: [note(.migration, at: mid, txn: "t1")], now: mid, unchanged: true),
    NotificationCase(
        type: "PRICE_CHANGE", subtype: nil, label: "Advanced Commerce only", base: bought,
        added: [note(.priceChange, at: mid, txn: "t1")], now: mid, unchanged: true),
    NotificationCase(
        type: "SOMETHING_NEW", subtype: "FROM_THE_FUTURE", label: "unknown types pass through", base: bought,
        added: [note("SOMETHING_NEW", "FROM_THE_FUTURE", at: mid, txn: "t1")], now: mid, unchanged: true),
]

// MARK: V1

private let v1Bought: [Fact] = [
    entry("e1", purchase: T0, expires: e1), pending(receipt: T0), v1note(.initialBuy, at: T0, txn: "e1"),
]

let v1Cases: [NotificationCase] = [
    NotificationCase(
        type: "INITIAL_BUY", label: "first purchase", base: [], added: v1Bought, now: T0 + hour,
        checks: [.status("pro", .active), .willRenew("pro", true), .customer(.active)]),
    NotificationCase(
        type: "DID_RENEW", label: "renewal", base: v1Bought,
        added: [entry("e2", purchase: e1, expires: e2), pending(receipt: e1), v1note(.didRenew, at: e1, txn: "e2")],
        now: e1 + hour, checks: [.status("pro", .active), .transaction("pro", "e2")]),
    NotificationCase(
        type: "RENEWAL", label: "removed in 2021, still read", base: v1Bought,
        added: [entry("e2", purchase: e1, expires: e2), v1note(.renewal, at: e1, txn: "e2")],
        now: e1 + hour, checks: [.status("pro", .active), .transaction("pro", "e2")]),
    NotificationCase(
        type: "INTERACTIVE_RENEWAL", label: "resubscribe after a lapse", base: v1Bought,
        added: [
            entry("e2", purchase: months(3), expires: months(4)), pending(receipt: months(3)),
            v1note(.interactiveRenewal, at: months(3), txn: "e2"),
        ],
        now: months(3) + hour, checks: [.status("pro", .active), .transaction("pro", "e2")]),
    NotificationCase(
        type: "CANCEL", label: "refund by Apple support", base: v1Bought,
        added: [entry("e1", purchase: T0, expires: e1, receipt: mid, cancelled: mid), v1note(.cancel, at: mid, txn: "e1")],
        now: mid + hour, checks: [.status("pro", .refunded), .active("pro", false)]),
    NotificationCase(
        type: "CANCEL", label: "upgrade: the old entry is superseded, not refunded", base: v1Bought,
        added: [
            entry("e1", purchase: T0, expires: e1, receipt: mid, cancelled: mid, upgraded: true),
            v1note(.cancel, at: mid, txn: "e1"),
            entry("e2", product: "monthly.plus", purchase: mid, expires: months(1, after: mid)),
            v1note(.interactiveRenewal, at: mid, txn: "e2"),
        ],
        now: mid + hour, checks: [.status("pro", .active), .status("plus", .active), .product("pro", "monthly.plus")]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_PREF", label: "downgrade at next renewal", base: v1Bought,
        added: [pending(next: "basic.monthly", receipt: mid), v1note(.didChangeRenewalPref, at: mid, txn: "e1")],
        now: mid + hour, checks: [.renewsTo("pro", "basic.monthly"), .pendingChange("premium", .downgrade)]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_STATUS", label: "auto-renew off", base: v1Bought,
        added: [pending(autoRenew: false, receipt: mid), v1note(.didChangeRenewalStatus, at: mid, autoRenew: false)],
        now: mid + hour, checks: [.status("pro", .active), .willRenew("pro", false), .unsubscribed("pro", mid)]),
    NotificationCase(
        type: "DID_CHANGE_RENEWAL_STATUS", label: "notification alone", base: v1Bought,
        added: [v1note(.didChangeRenewalStatus, at: mid, autoRenew: false)],
        now: mid + hour, checks: [.willRenew("pro", false), .unsubscribed("pro", mid)]),
    NotificationCase(
        type: "DID_FAIL_TO_RENEW", label: "no grace field: fallback grace days", base: v1Bought,
        added: [pending(retry: true, intent: 2, receipt: e1), v1note(.didFailToRenew, at: e1, txn: "e1")],
        now: e1 + day,
        checks: [.status("pro", .gracePeriod), .grace("pro", e1 + 16 * day), .billingIssue("pro", e1)]),
    NotificationCase(
        type: "DID_FAIL_TO_RENEW", label: "Apple's grace date wins over the fallback", base: v1Bought,
        added: [pending(retry: true, grace: e1 + 6 * day, receipt: e1), v1note(.didFailToRenew, at: e1, txn: "e1")],
        now: e1 + 7 * day, checks: [.status("pro", .billingRetry), .grace("pro", e1 + 6 * day)]),
    NotificationCase(
        type: "DID_FAIL_TO_RENEW", label: "notification without renewal info", base: [entry("e1", purchase: T0, expires: e1)],
        added: [v1note(.didFailToRenew, at: e1, txn: "e1")],
        now: e1 + day, checks: [.status("pro", .gracePeriod)]),
    NotificationCase(
        type: "DID_RECOVER", label: "billing recovered",
        base: v1Bought + [pending(retry: true, receipt: e1), v1note(.didFailToRenew, at: e1, txn: "e1")],
        added: [
            entry("e2", purchase: e1 + 20 * day, expires: months(1, after: e1 + 20 * day)),
            pending(receipt: e1 + 20 * day), v1note(.didRecover, at: e1 + 20 * day, txn: "e2"),
        ],
        now: e1 + 20 * day + hour, checks: [.status("pro", .active), .billingIssue("pro", nil)]),
    NotificationCase(
        type: "PRICE_INCREASE_CONSENT", label: "consent pending", base: v1Bought,
        added: [pending(priceConsent: 0, receipt: mid), v1note(.priceIncreaseConsent, at: mid, txn: "e1")],
        now: mid + hour, checks: [.priceIncrease("pro", .pending)]),
    NotificationCase(
        type: "REFUND", label: "non-consumable refunded",
        base: [entry("n1", otid: "n1", product: "lifetime", purchase: T0)],
        added: [
            entry("n1", otid: "n1", product: "lifetime", purchase: T0, receipt: mid, cancelled: mid),
            v1note(.refund, at: mid, otid: "n1", txn: "n1"),
        ],
        now: mid + hour, checks: [.owned("lifetime", false), .status("pro", .refunded)]),
    NotificationCase(
        type: "REVOKE", label: "family share withdrawn",
        base: [entry("f1", otid: "fam", purchase: T0, expires: e1, ownership: .familyShared)],
        added: [v1note(.revoke, at: mid, otid: "fam", txn: "f1")],
        now: mid + hour, checks: [.status("pro", .revoked)]),
    NotificationCase(
        type: "CONSUMPTION_REQUEST", label: "informational", base: v1Bought,
        added: [v1note(.consumptionRequest, at: mid, txn: "e1")], now: mid, unchanged: true),
]

@Suite("Every notification type and subtype")
struct NotificationTableTests {
    @Test(arguments: v2Cases)
    func v2(_ row: NotificationCase) { run(row) }

    @Test(arguments: v1Cases)
    func v1(_ row: NotificationCase) { run(row) }

    private func run(_ row: NotificationCase) {
        let after = state(row.base + row.added, at: row.now)
        verify(row.checks, after, row.testDescription)
        if row.unchanged {
            #expect(after == state(row.base, at: row.now), "\(row.testDescription) must change nothing")
        }
        // The notification's facts in any order, twice, give the same state.
        #expect(state((row.added + row.base + row.added).reversed(), at: row.now) == after)
    }

    @Test func everyDocumentedTypeAndSubtypeHasARow() {
        let v2Types = Set(v2Cases.map(\.type))
        for type in NotificationType.allDocumented {
            #expect(v2Types.contains(type.rawValue), "no V2 row for \(type)")
        }
        let pairs = Set(v2Cases.map { "\($0.type)/\($0.subtype ?? "")" })
        let documented = [
            "SUBSCRIBED/INITIAL_BUY", "SUBSCRIBED/RESUBSCRIBE", "DID_CHANGE_RENEWAL_PREF/UPGRADE",
            "DID_CHANGE_RENEWAL_PREF/DOWNGRADE", "DID_CHANGE_RENEWAL_PREF/", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED",
            "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "OFFER_REDEEMED/UPGRADE", "OFFER_REDEEMED/DOWNGRADE",
            "OFFER_REDEEMED/", "DID_RENEW/BILLING_RECOVERY", "DID_RENEW/", "EXPIRED/VOLUNTARY", "EXPIRED/BILLING_RETRY",
            "EXPIRED/PRICE_INCREASE", "EXPIRED/PRODUCT_NOT_FOR_SALE", "EXPIRED/", "DID_FAIL_TO_RENEW/GRACE_PERIOD",
            "DID_FAIL_TO_RENEW/", "GRACE_PERIOD_EXPIRED/", "PRICE_INCREASE/PENDING", "PRICE_INCREASE/ACCEPTED",
            "REFUND/", "REFUND_DECLINED/", "REFUND_REVERSED/", "CONSUMPTION_REQUEST/", "RENEWAL_EXTENDED/",
            "RENEWAL_EXTENSION/SUMMARY", "RENEWAL_EXTENSION/FAILURE", "REVOKE/", "TEST/",
            "EXTERNAL_PURCHASE_TOKEN/UNREPORTED", "EXTERNAL_PURCHASE_TOKEN/CREATED",
            "EXTERNAL_PURCHASE_TOKEN/ACTIVE_TOKEN_REMINDER", "ONE_TIME_CHARGE/", "RESCIND_CONSENT/",
            "METADATA_UPDATE/", "MIGRATION/", "PRICE_CHANGE/",
        ]
        for pair in documented { #expect(pairs.contains(pair), "no V2 row for \(pair)") }
        let v1Types = Set(v1Cases.map(\.type))
        for type in V1NotificationType.allDocumented {
            #expect(v1Types.contains(type.rawValue), "no V1 row for \(type)")
        }
    }
}
