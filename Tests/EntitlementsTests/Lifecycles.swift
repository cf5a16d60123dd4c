import Entitlements

/// One step of a lifecycle: the facts that arrive, the instant to evaluate at, what must hold.
/// Steps are cumulative: step k is evaluated over the facts of steps 0…k.
struct Step: Sendable {
    var label: String
    var facts: [Fact]
    var now: Int64
    var checks: [Check]
}

/// A customer's story from the seed documents, step by step with `now` advancing.
struct Lifecycle: Sendable, CustomStringConvertible {
    var name: String
    var steps: [Step]
    var description: String { name }
    var allFacts: [Fact] { steps.flatMap(\.facts) }
    var checkpoints: [Int64] { steps.map(\.now) }
}

enum Lifecycles {
    static let all: [Lifecycle] = [
        subscriptionV2, billingRetryWithoutGrace, voluntaryChurnWinBack, refundReversal, familySharing,
        priceIncreaseExpiry, trialToPaid, nonConsumable, nonRenewing, consumable, subscriptionV1,
        extensionAndGraceRecovery,
    ]

    static func named(_ name: String) -> Lifecycle { all.first { $0.name == name }! }

    // purchase → renew → upgrade → pending downgrade → auto-renew off/on → billing failure with grace
    // → grace runs out → recovered (BILLING_RECOVERY).
    static let subscriptionV2: Lifecycle = {
        let e1 = months(1), e2 = months(2)
        let upgradeAt = e1 + 10 * day
        let eU = months(1, after: upgradeAt)
        let downgradeAt = upgradeAt + 5 * day
        let eD = months(1, after: eU)
        let offAt = eU + 3 * day, onAt = offAt + 2 * day
        let graceEnd = eD + 16 * day
        let recoveredAt = eD + 20 * day
        return Lifecycle(
            name: "V2 purchase, renew, upgrade, downgrade, auto-renew, grace, recovery",
            steps: [
                Step(
                    label: "purchase",
                    facts: [
                        tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
                        note(.subscribed, .initialBuy, at: T0, txn: "t1"),
                    ],
                    now: T0 + day,
                    checks: [
                        .status("pro", .active), .product("pro", "monthly"), .willRenew("pro", true),
                        .period("pro", .normal), .expires("pro", e1), .customer(.active),
                        .groupClass("premium", .active), .introEligible("premium", false),
                        .promoEligible("premium", true), .groupClass("reading", .new),
                        .promoEligible("reading", false), .status("plus", nil),
                    ]),
                Step(
                    label: "renew",
                    facts: [
                        tx("t2", purchase: e1, expires: e2), renewal(signed: e1),
                        note(.didRenew, at: e1, txn: "t2"),
                    ],
                    now: e1 + day,
                    checks: [.status("pro", .active), .transaction("pro", "t2"), .expires("pro", e2)]),
                Step(
                    label: "upgrade takes effect at once",
                    facts: [
                        tx("t2", purchase: e1, expires: e2, signed: upgradeAt, revoked: upgradeAt, upgraded: true),
                        tx("t3", product: "monthly.plus", purchase: upgradeAt, expires: eU),
                        renewal(product: "monthly.plus", signed: upgradeAt),
                        note(.didChangeRenewalPref, .upgrade, at: upgradeAt, txn: "t3"),
                    ],
                    now: upgradeAt + hour,
                    checks: [
                        .status("plus", .active), .status("pro", .active), .product("pro", "monthly.plus"),
                        .transaction("pro", "t3"), .expires("pro", eU), .renewsTo("plus", nil),
                    ]),
                Step(
                    label: "downgrade waits for the next renewal",
                    facts: [
                        renewal(product: "monthly.plus", next: "monthly", signed: downgradeAt),
                        note(.didChangeRenewalPref, .downgrade, at: downgradeAt, txn: "t3"),
                    ],
                    now: downgradeAt + hour,
                    checks: [
                        .status("plus", .active), .renewsTo("plus", "monthly"),
                        .pendingChange("premium", .downgrade),
                    ]),
                Step(
                    label: "downgrade renews",
                    facts: [
                        tx("t4", purchase: eU, expires: eD), renewal(signed: eU), note(.didRenew, at: eU, txn: "t4"),
                    ],
                    now: eU + hour,
                    checks: [
                        .status("plus", .expired), .active("plus", false), .status("pro", .active),
                        .product("pro", "monthly"), .renewsTo("pro", nil), .pendingChange("premium", nil),
                    ]),
                Step(
                    label: "auto-renew off",
                    facts: [
                        renewal(autoRenew: false, signed: offAt),
                        note(.didChangeRenewalStatus, .autoRenewDisabled, at: offAt),
                    ],
                    now: offAt + hour,
                    checks: [.status("pro", .active), .willRenew("pro", false), .unsubscribed("pro", offAt)]),
                Step(
                    label: "auto-renew on again",
                    facts: [
                        renewal(autoRenew: true, signed: onAt),
                        note(.didChangeRenewalStatus, .autoRenewEnabled, at: onAt),
                    ],
                    now: onAt + hour,
                    checks: [.willRenew("pro", true), .unsubscribed("pro", nil)]),
                Step(
                    label: "billing failure with grace period",
                    facts: [
                        renewal(retry: true, grace: graceEnd, intent: 2, signed: eD),
                        note(.didFailToRenew, .gracePeriod, at: eD, txn: "t4"),
                    ],
                    now: eD + day,
                    checks: [
                        .status("pro", .gracePeriod), .active("pro", true), .grace("pro", graceEnd),
                        .billingIssue("pro", eD), .willRenew("pro", true), .customer(.active),
                    ]),
                Step(
                    label: "grace period runs out (no event needed)",
                    facts: [],
                    now: graceEnd + hour,
                    checks: [
                        .status("pro", .billingRetry), .active("pro", false), .billingIssue("pro", eD),
                        .customer(.inactive),
                    ]),
                Step(
                    label: "recovered",
                    facts: [
                        tx("t5", purchase: recoveredAt, expires: months(1, after: recoveredAt)),
                        renewal(signed: recoveredAt),
                        note(.didRenew, .billingRecovery, at: recoveredAt, txn: "t5"),
                    ],
                    now: recoveredAt + hour,
                    checks: [
                        .status("pro", .active), .transaction("pro", "t5"), .billingIssue("pro", nil),
                        .grace("pro", nil), .customer(.active),
                    ]),
            ])
    }()

    // billing failure without grace → 60 days of retry → EXPIRED/BILLING_RETRY.
    static let billingRetryWithoutGrace: Lifecycle = {
        let e1 = months(1)
        return Lifecycle(
            name: "V2 billing retry without grace, then EXPIRED/BILLING_RETRY",
            steps: [
                Step(
                    label: "purchase",
                    facts: [
                        tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
                        note(.subscribed, .initialBuy, at: T0, txn: "t1"),
                    ],
                    now: T0 + hour, checks: [.status("pro", .active)]),
                Step(
                    label: "renewal fails, no grace: no access",
                    facts: [renewal(retry: true, intent: 2, signed: e1), note(.didFailToRenew, at: e1, txn: "t1")],
                    now: e1 + day,
                    checks: [
                        .status("pro", .billingRetry), .active("pro", false), .grace("pro", nil),
                        .billingIssue("pro", e1), .willRenew("pro", true), .customer(.inactive),
                        .groupClass("premium", .inactive),
                    ]),
                Step(
                    label: "day 59 of retry", facts: [], now: e1 + 59 * day,
                    checks: [.status("pro", .billingRetry)]),
                Step(
                    label: "EXPIRED/BILLING_RETRY",
                    facts: [
                        renewal(autoRenew: false, retry: false, intent: 2, signed: e1 + 60 * day),
                        note(.expired, .billingRetry, at: e1 + 60 * day, txn: "t1"),
                    ],
                    now: e1 + 60 * day + hour,
                    checks: [
                        .status("pro", .expired), .willRenew("pro", false), .billingIssue("pro", nil),
                        .customer(.inactive),
                    ]),
                Step(
                    label: "a year later", facts: [], now: e1 + 400 * day,
                    checks: [.status("pro", .expired), .paidDays("premium", 0)]),
            ])
    }()

    // voluntary churn → win-back offer.
    static let voluntaryChurnWinBack: Lifecycle = {
        let e1 = months(1)
        let offAt = T0 + 10 * day
        let back = months(3)
        return Lifecycle(
            name: "V2 voluntary churn, then win-back",
            steps: [
                Step(
                    label: "purchase",
                    facts: [
                        tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
                        note(.subscribed, .initialBuy, at: T0, txn: "t1"),
                    ],
                    now: T0 + hour, checks: [.status("pro", .active)]),
                Step(
                    label: "auto-renew off",
                    facts: [
                        renewal(autoRenew: false, signed: offAt),
                        note(.didChangeRenewalStatus, .autoRenewDisabled, at: offAt),
                    ],
                    now: offAt + hour,
                    checks: [.status("pro", .active), .willRenew("pro", false), .unsubscribed("pro", offAt)]),
                Step(
                    label: "expiry needs no event", facts: [], now: e1 + hour,
                    checks: [
                        .status("pro", .expired), .customer(.inactive), .groupClass("premium", .inactive),
                        .promoEligible("premium", true), .unsubscribed("pro", offAt),
                    ]),
                Step(
                    label: "EXPIRED/VOLUNTARY offers a win-back",
                    facts: [
                        renewal(autoRenew: false, intent: 1, winBack: ["wb-50"], signed: e1),
                        note(.expired, .voluntary, at: e1, txn: "t1"),
                    ],
                    now: e1 + day,
                    checks: [.status("pro", .expired), .winBack("premium", ["wb-50"])]),
                Step(
                    label: "win-back redeemed",
                    facts: [
                        tx("t2", purchase: back, expires: months(1, after: back), offer: .winBack, discount: .payAsYouGo),
                        renewal(offer: .winBack, signed: back),
                        note(.subscribed, .resubscribe, at: back, txn: "t2"),
                    ],
                    now: back + hour,
                    checks: [
                        .status("pro", .active), .period("pro", .winBack), .winBack("premium", []),
                        .willRenew("pro", true), .unsubscribed("pro", nil), .customer(.active),
                    ]),
            ])
    }()

    // refund → reversal.
    static let refundReversal: Lifecycle = {
        let e1 = months(1), e2 = months(2)
        let refundAt = e1 + 5 * day
        let reverseAt = e1 + 20 * day
        return Lifecycle(
            name: "V2 refund, then REFUND_REVERSED",
            steps: [
                Step(
                    label: "purchase and renew",
                    facts: [
                        tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
                        note(.subscribed, .initialBuy, at: T0, txn: "t1"),
                        tx("t2", purchase: e1, expires: e2), renewal(signed: e1), note(.didRenew, at: e1, txn: "t2"),
                    ],
                    now: e1 + day, checks: [.status("pro", .active)]),
                Step(
                    label: "refund",
                    facts: [
                        tx("t2", purchase: e1, expires: e2, signed: refundAt, revoked: refundAt, revocationType: .refundFull),
                        renewal(autoRenew: false, signed: refundAt),
                        note(.refund, at: refundAt, txn: "t2"),
                        note(.didChangeRenewalStatus, .autoRenewDisabled, at: refundAt),
                    ],
                    now: refundAt + hour,
                    checks: [
                        .status("pro", .refunded), .active("pro", false), .willRenew("pro", false),
                        .customer(.inactive),
                    ]),
                Step(
                    label: "refund reversed",
                    facts: [
                        tx("t2", purchase: e1, expires: e2, signed: reverseAt),
                        note(.refundReversed, at: reverseAt, txn: "t2"),
                    ],
                    now: reverseAt + hour,
                    checks: [.status("pro", .active), .expires("pro", e2), .customer(.active)]),
            ])
    }()

    // family sharing → REVOKE while the member's own purchase still grants access.
    static let familySharing: Lifecycle = {
        let e1 = months(1)
        let buyAt = T0 + 5 * day
        let revokeAt = T0 + 10 * day
        return Lifecycle(
            name: "Family Sharing revoked while another purchase grants",
            steps: [
                Step(
                    label: "family access",
                    facts: [
                        tx("f1", otid: "fam", purchase: T0, expires: e1, ownership: .familyShared, price: nil),
                        renewal(otid: "fam", signed: T0),
                        note(.subscribed, .initialBuy, at: T0, otid: "fam", txn: "f1"),
                    ],
                    now: T0 + day,
                    checks: [.status("pro", .active), .ownership("pro", .familyShared), .customer(.active)]),
                Step(
                    label: "own lifetime purchase",
                    facts: [
                        tx("L1", otid: "L1", product: "lifetime", purchase: buyAt, type: .nonConsumable),
                        note(.oneTimeCharge, at: buyAt, otid: "L1", txn: "L1"),
                    ],
                    now: buyAt + hour,
                    checks: [
                        .status("pro", .active), .product("pro", "lifetime"), .ownership("pro", .purchased),
                        .owned("lifetime", true),
                    ]),
                Step(
                    label: "REVOKE of the family share",
                    facts: [
                        tx("f1", otid: "fam", purchase: T0, expires: e1, signed: revokeAt, ownership: .familyShared,
                           revoked: revokeAt, revocationType: .familyRevoke, price: nil),
                        note(.revoke, at: revokeAt, otid: "fam", txn: "f1"),
                    ],
                    now: revokeAt + hour,
                    checks: [
                        .status("pro", .active), .product("pro", "lifetime"), .groupStatus("premium", .revoked),
                        .customer(.active), .groupClass("premium", .inactive),
                    ]),
            ])
    }()

    // price increase pending → EXPIRED/PRICE_INCREASE.
    static let priceIncreaseExpiry: Lifecycle = {
        let e1 = months(1), e2 = months(2)
        let askedAt = e1 + 3 * day
        return Lifecycle(
            name: "V2 price increase pending, then EXPIRED/PRICE_INCREASE",
            steps: [
                Step(
                    label: "purchase and renew",
                    facts: [
                        tx("t1", purchase: T0, expires: e1), renewal(signed: T0),
                        note(.subscribed, .initialBuy, at: T0, txn: "t1"),
                        tx("t2", purchase: e1, expires: e2), renewal(signed: e1), note(.didRenew, at: e1, txn: "t2"),
                    ],
                    now: e1 + hour, checks: [.status("pro", .active), .priceIncrease("pro", nil)]),
                Step(
                    label: "price increase pending",
                    facts: [renewal(priceIncrease: 0, signed: askedAt), note(.priceIncrease, .pending, at: askedAt, txn: "t2")],
                    now: askedAt + hour,
                    checks: [.status("pro", .active), .priceIncrease("pro", .pending)]),
                Step(
                    label: "no consent: EXPIRED/PRICE_INCREASE",
                    facts: [
                        renewal(autoRenew: false, intent: 3, priceIncrease: 0, signed: e2),
                        note(.expired, .priceIncrease, at: e2, txn: "t2"),
                    ],
                    now: e2 + hour,
                    checks: [.status("pro", .expired), .priceIncrease("pro", .pending), .willRenew("pro", false)]),
            ])
    }()

    // free trial → paid.
    static let trialToPaid: Lifecycle = {
        let trialEnd = T0 + 7 * day
        return Lifecycle(
            name: "V2 free trial, then paid",
            steps: [
                Step(
                    label: "free trial",
                    facts: [
                        tx("t1", purchase: T0, expires: trialEnd, offer: .introductory, discount: .freeTrial, price: 0),
                        renewal(signed: T0), note(.subscribed, .initialBuy, at: T0, txn: "t1"),
                    ],
                    now: T0 + day,
                    checks: [
                        .status("pro", .active), .period("pro", .trial), .introEligible("premium", false),
                        .paidDays("premium", 0),
                    ]),
                Step(
                    label: "first paid period",
                    facts: [
                        tx("t2", purchase: trialEnd, expires: months(1, after: trialEnd)), renewal(signed: trialEnd),
                        note(.didRenew, at: trialEnd, txn: "t2"),
                    ],
                    now: trialEnd + 10 * day,
                    checks: [
                        .status("pro", .active), .period("pro", .normal), .introEligible("premium", false),
                        // The paid month counts whole once bought (the trial not at all).
                        .paidDays("premium", Int((months(1, after: trialEnd) - trialEnd) / day)),
                    ]),
            ])
    }()
}
