import Entitlements

// Stories beyond a V2 auto-renewable subscription: one-time products, a non-renewing
// subscription and the V1 notifications.

extension Lifecycles {
    static let nonConsumable: Lifecycle = {
        let refundAt = T0 + 30 * day
        return Lifecycle(
            name: "non-consumable purchase, then refund",
            steps: [
                Step(
                    label: "ONE_TIME_CHARGE",
                    facts: [
                        tx("n1", otid: "n1", product: "lifetime", purchase: T0, type: .nonConsumable),
                        note(.oneTimeCharge, at: T0, otid: "n1", txn: "n1"),
                    ],
                    now: T0 + hour,
                    checks: [.owned("lifetime", true), .status("pro", .active), .expires("pro", nil), .customer(.active)]),
                Step(
                    label: "years later, still owned", facts: [], now: T0 + 1_000 * day,
                    checks: [.owned("lifetime", true), .status("pro", .active)]),
                Step(
                    label: "REFUND",
                    facts: [
                        tx("n1", otid: "n1", product: "lifetime", purchase: T0, signed: refundAt, type: .nonConsumable,
                           revoked: refundAt),
                        note(.refund, at: refundAt, otid: "n1", txn: "n1"),
                    ],
                    now: T0 + 1_000 * day,
                    checks: [.owned("lifetime", false), .status("pro", .refunded), .customer(.inactive)]),
            ])
    }()

    static let nonRenewing: Lifecycle = {
        let second = T0 + 10 * day
        let refundAt = months(1) + 16 * day
        let yearAt = months(3)
        return Lifecycle(
            name: "non-renewing passes stack",
            steps: [
                Step(
                    label: "one month",
                    facts: [tx("p1", otid: "p1", product: "pass.month", purchase: T0, type: .nonRenewing)],
                    now: T0 + hour,
                    checks: [.status("pass", .active), .passExpires("pass", months(1))]),
                Step(
                    label: "a second month stacks",
                    facts: [tx("p2", otid: "p2", product: "pass.month", purchase: second, type: .nonRenewing)],
                    now: second + hour,
                    checks: [.status("pass", .active), .passExpires("pass", months(2)), .expires("pass", months(2))]),
                Step(
                    label: "inside the stacked month", facts: [], now: months(1) + 15 * day,
                    checks: [.status("pass", .active)]),
                Step(
                    label: "refund of the second pass",
                    facts: [
                        tx("p2", otid: "p2", product: "pass.month", purchase: second, signed: refundAt,
                           type: .nonRenewing, revoked: refundAt),
                        note(.refund, at: refundAt, otid: "p2", txn: "p2"),
                    ],
                    now: refundAt + hour,
                    checks: [.status("pass", .expired), .passExpires("pass", months(1)), .customer(.inactive)]),
                Step(
                    label: "a year pass",
                    facts: [tx("p3", otid: "p3", product: "pass.year", purchase: yearAt, type: .nonRenewing)],
                    now: yearAt + hour,
                    checks: [.status("pass", .active), .passExpires("pass", months(15)), .passStatus("pass", .active)]),
            ])
    }()

    static let consumable: Lifecycle = {
        let refundAt = T0 + 3 * day
        return Lifecycle(
            name: "consumables credit once, debit on refund",
            steps: [
                Step(
                    label: "ten coins",
                    facts: [
                        tx("c1", otid: "c1", product: "coins", purchase: T0, type: .consumable, quantity: 10),
                        note(.oneTimeCharge, at: T0, otid: "c1", txn: "c1"),
                    ],
                    now: T0 + hour, checks: [.balance("coins", 10), .customer(.new)]),
                Step(
                    label: "five more, delivered twice",
                    facts: [
                        tx("c2", otid: "c2", product: "coins", purchase: T0 + day, type: .consumable, quantity: 5),
                        tx("c2", otid: "c2", product: "coins", purchase: T0 + day, type: .consumable, quantity: 5),
                        note(.oneTimeCharge, at: T0 + day, otid: "c2", txn: "c2"),
                    ],
                    now: T0 + day + hour, checks: [.balance("coins", 15), .consumableCredited("coins", 15)]),
                Step(
                    label: "consumption request, then refund of the first",
                    facts: [
                        note(.consumptionRequest, at: refundAt - day, otid: "c1", txn: "c1"),
                        tx("c1", otid: "c1", product: "coins", purchase: T0, signed: refundAt, type: .consumable,
                           revoked: refundAt, quantity: 10),
                        note(.refund, at: refundAt, otid: "c1", txn: "c1"),
                    ],
                    now: refundAt + hour, checks: [.balance("coins", 5), .consumableCredited("coins", 15)]),
                Step(
                    label: "refund declined on the second",
                    facts: [note(.refundDeclined, at: refundAt + day, otid: "c2", txn: "c2")],
                    now: refundAt + day + hour, checks: [.balance("coins", 5)]),
            ])
    }()

    // V1: INITIAL_BUY → DID_RENEW → CANCEL + INTERACTIVE_RENEWAL (upgrade) → DID_CHANGE_RENEWAL_PREF
    // → DID_CHANGE_RENEWAL_STATUS → DID_FAIL_TO_RENEW (no grace field: fallback) → DID_RECOVER.
    static let subscriptionV1: Lifecycle = {
        let e1 = months(1), e2 = months(2)
        let upgradeAt = e1 + 10 * day
        let eU = months(1, after: upgradeAt)
        let prefAt = upgradeAt + 5 * day
        let eD = months(1, after: eU)
        let offAt = eU + 3 * day, onAt = offAt + 2 * day
        let recoveredAt = eD + 20 * day
        return Lifecycle(
            name: "V1 purchase, renew, upgrade, downgrade, auto-renew, fallback grace, recovery",
            steps: [
                Step(
                    label: "INITIAL_BUY",
                    facts: [entry("e1", purchase: T0, expires: e1), pending(receipt: T0), v1note(.initialBuy, at: T0, txn: "e1")],
                    now: T0 + day, checks: [.status("pro", .active), .willRenew("pro", true)]),
                Step(
                    label: "DID_RENEW",
                    facts: [
                        entry("e2", purchase: e1, expires: e2), pending(receipt: e1), v1note(.didRenew, at: e1, txn: "e2"),
                    ],
                    now: e1 + day, checks: [.status("pro", .active), .transaction("pro", "e2")]),
                Step(
                    label: "CANCEL then INTERACTIVE_RENEWAL (upgrade)",
                    facts: [
                        entry("e2", purchase: e1, expires: e2, receipt: upgradeAt, cancelled: upgradeAt, upgraded: true),
                        v1note(.cancel, at: upgradeAt, txn: "e2"),
                        entry("e3", product: "monthly.plus", purchase: upgradeAt, expires: eU),
                        pending(product: "monthly.plus", receipt: upgradeAt),
                        v1note(.interactiveRenewal, at: upgradeAt, txn: "e3"),
                    ],
                    now: upgradeAt + hour,
                    checks: [
                        .status("plus", .active), .status("pro", .active), .product("pro", "monthly.plus"),
                        .customer(.active),
                    ]),
                Step(
                    label: "DID_CHANGE_RENEWAL_PREF (downgrade)",
                    facts: [
                        pending(product: "monthly.plus", next: "monthly", receipt: prefAt),
                        v1note(.didChangeRenewalPref, at: prefAt, txn: "e3"),
                    ],
                    now: prefAt + hour,
                    checks: [.renewsTo("plus", "monthly"), .pendingChange("premium", .downgrade)]),
                Step(
                    label: "DID_RENEW into the lower product",
                    facts: [
                        entry("e4", purchase: eU, expires: eD), pending(receipt: eU), v1note(.didRenew, at: eU, txn: "e4"),
                    ],
                    now: eU + hour,
                    checks: [.status("plus", .expired), .status("pro", .active), .product("pro", "monthly")]),
                Step(
                    label: "DID_CHANGE_RENEWAL_STATUS off",
                    facts: [
                        pending(autoRenew: false, receipt: offAt),
                        v1note(.didChangeRenewalStatus, at: offAt, autoRenew: false),
                    ],
                    now: offAt + hour, checks: [.willRenew("pro", false), .unsubscribed("pro", offAt)]),
                Step(
                    label: "DID_CHANGE_RENEWAL_STATUS on",
                    facts: [pending(receipt: onAt), v1note(.didChangeRenewalStatus, at: onAt, autoRenew: true)],
                    now: onAt + hour, checks: [.willRenew("pro", true), .unsubscribed("pro", nil)]),
                Step(
                    label: "DID_FAIL_TO_RENEW without grace_period_expires_date: fallback grace",
                    facts: [pending(retry: true, intent: 2, receipt: eD), v1note(.didFailToRenew, at: eD, txn: "e4")],
                    now: eD + day,
                    checks: [
                        .status("pro", .gracePeriod), .active("pro", true), .grace("pro", eD + 16 * day),
                        .billingIssue("pro", eD),
                    ]),
                Step(
                    label: "fallback grace over", facts: [], now: eD + 17 * day,
                    checks: [.status("pro", .billingRetry), .active("pro", false)]),
                Step(
                    label: "DID_RECOVER",
                    facts: [
                        entry("e5", purchase: recoveredAt, expires: months(1, after: recoveredAt)),
                        pending(receipt: recoveredAt), v1note(.didRecover, at: recoveredAt, txn: "e5"),
                    ],
                    now: recoveredAt + hour,
                    checks: [.status("pro", .active), .transaction("pro", "e5"), .billingIssue("pro", nil)]),
            ])
    }()
}
