import Entitlements
import Testing

/// A history and what must hold at `now` (paid service and restore classes as Apple counts them).
struct PaidServiceCase: Sendable, CustomTestStringConvertible {
    var label: String
    var facts: [Fact]
    var now: Int64
    var checks: [Check]
    var testDescription: String { label }
}

private func days(_ from: Int64, _ to: Int64) -> Int { Int((to - from) / day) }

// A yearly subscriber bought at T0; 200 days in, Apple extends the renewal date by 40 days.
private let yearEnd = ISODuration(years: 1).added(to: T0)
private let extendedAt = T0 + 200 * day
private func extended(by extra: Int64) -> [Fact] {
    [
        tx("y1", product: "yearly", purchase: T0, expires: yearEnd), renewal(product: "yearly", signed: T0),
        tx("y1", product: "yearly", purchase: T0, expires: yearEnd + extra * day, signed: extendedAt),
        note(.renewalExtended, at: extendedAt, txn: "y1"),
    ]
}
private let renewedAfterExtension = tx(
    "y2", product: "yearly", purchase: yearEnd + 40 * day, expires: ISODuration(years: 1).added(to: yearEnd + 40 * day))

// A monthly subscriber: eleven months paid (T0 … months(11), 334 days), the eleventh extended by 40 days.
private let elevenMonths: [Fact] = (0..<11).map { tx("m\($0)", purchase: months($0), expires: months($0 + 1)) } + [
    tx("m10", purchase: months(10), expires: months(11) + 40 * day, signed: months(10) + 5 * day),
    tx("m11", purchase: months(11) + 40 * day, expires: months(1, after: months(11) + 40 * day)),
]

// A monthly subscription bought at T0 whose renewal at e1 fails; Apple's grace period is 16 days.
private let e1 = months(1)
private let e2 = months(2)
private let bought: [Fact] = [tx("t1", purchase: T0, expires: e1), renewal(signed: T0)]
/// Day 5 of the grace period (e1 is the start of day 1).
private let day5 = e1 + 4 * day + 6 * hour
/// Recovered inside grace, the renewal date does not move: the new period still ends at e2.
private let recoveredOnDay5: [Fact] = [
    tx("t2", purchase: day5, expires: e2), renewal(signed: day5), note(.didRenew, .billingRecovery, at: day5, txn: "t2"),
]
private let day20 = e1 + 20 * day
/// Recovered in billing retry after grace, the new period starts at the recovery.
private let recoveredOnDay20: [Fact] = [
    tx("t2", purchase: day20, expires: months(1, after: day20)), renewal(signed: day20),
    note(.didRenew, .billingRecovery, at: day20, txn: "t2"),
]

let paidServiceCases: [PaidServiceCase] = [
    // 1. Renewal-date extensions are not paid service.
    PaidServiceCase(
        label: "yearly, 40-day extension, before the renewal", facts: extended(by: 40), now: yearEnd + 10 * day,
        checks: [.status("pro", .active), .expires("pro", yearEnd + 40 * day), .paidDays("premium", 365)]),
    PaidServiceCase(
        label: "yearly, 40-day extension, renewed", facts: extended(by: 40) + [renewedAfterExtension],
        now: yearEnd + 41 * day,
        checks: [
            .rate("y2", 0.85),
            .paidDays("premium", 365 + days(yearEnd + 40 * day, ISODuration(years: 1).added(to: yearEnd + 40 * day))),
        ]),
    PaidServiceCase(
        label: "yearly, 90-day extension is no lapse",
        facts: extended(by: 90) + [
            tx("y2", product: "yearly", purchase: yearEnd + 90 * day, expires: ISODuration(years: 1).added(to: yearEnd + 90 * day))
        ],
        now: yearEnd + 91 * day,
        checks: [.rate("y2", 0.85), .paidDays("premium", 365 + days(yearEnd + 90 * day, ISODuration(years: 1).added(to: yearEnd + 90 * day)))]),
    PaidServiceCase(
        label: "monthly, 40-day extension in month 11 does not bring the 85% rate", facts: elevenMonths,
        now: months(11) + 41 * day,
        checks: [.rate("m11", 0.70), .paidDays("premium", days(T0, months(1, after: months(11) + 40 * day)) - 40)]),

    // 2. Recovery inside billing grace does not interrupt paid service; in billing retry after grace, it does.
    PaidServiceCase(
        label: "recovery on day 5 of a 16-day grace period",
        facts: bought + [renewal(retry: true, grace: e1 + 16 * day, intent: 2, signed: e1), note(.didFailToRenew, .gracePeriod, at: e1)]
            + recoveredOnDay5,
        now: day5 + hour, checks: [.status("pro", .active), .expires("pro", e2), .paidDays("premium", days(T0, e2))]),
    PaidServiceCase(
        label: "recovery on day 5, grace shown by the GRACE_PERIOD notification alone",
        facts: bought + [note(.didFailToRenew, .gracePeriod, at: e1)] + recoveredOnDay5,
        now: day5 + hour, checks: [.paidDays("premium", days(T0, e2))]),
    PaidServiceCase(
        label: "recovery on day 5, V1 data with the policy's 16 fallback grace days",
        facts: [
            entry("e1", purchase: T0, expires: e1), pending(receipt: T0), pending(retry: true, receipt: e1),
            v1note(.didFailToRenew, at: e1, txn: "e1"), entry("e2", purchase: day5, expires: e2),
            pending(receipt: day5), v1note(.didRecover, at: day5, txn: "e2"),
        ],
        now: day5 + hour, checks: [.status("pro", .active), .paidDays("premium", days(T0, e2))]),
    PaidServiceCase(
        label: "recovery after grace, in billing retry",
        facts: bought + [
            renewal(retry: true, grace: e1 + 16 * day, intent: 2, signed: e1), note(.didFailToRenew, .gracePeriod, at: e1),
            note(.gracePeriodExpired, at: e1 + 16 * day),
        ] + recoveredOnDay20,
        now: day20 + hour,
        checks: [.status("pro", .active), .paidDays("premium", days(T0, e1) + days(day20, months(1, after: day20)))]),
    PaidServiceCase(
        label: "recovery after grace, grace end from renewal info only",
        facts: bought + [renewal(retry: true, grace: e1 + 16 * day, intent: 2, signed: e1)] + recoveredOnDay20,
        now: day20 + hour, checks: [.paidDays("premium", days(T0, e1) + days(day20, months(1, after: day20)))]),
    PaidServiceCase(
        label: "recovery on day 5 of billing retry without grace",
        facts: bought + [renewal(retry: true, intent: 2, signed: e1), note(.didFailToRenew, at: e1)] + [
            tx("t2", purchase: day5, expires: months(1, after: day5)), renewal(signed: day5),
            note(.didRenew, .billingRecovery, at: day5, txn: "t2"),
        ],
        now: day5 + hour, checks: [.paidDays("premium", days(T0, e1) + days(day5, months(1, after: day5)))]),

    // 3. Restore classes: consumables are not purchase history.
    PaidServiceCase(
        label: "consumables only: new",
        facts: [tx("c1", otid: "c1", product: "coins", purchase: T0, type: .consumable, quantity: 10)],
        now: T0 + hour, checks: [.customer(.new), .balance("coins", 10)]),
    PaidServiceCase(
        label: "consumables and an expired subscription: inactive",
        facts: bought + [tx("c1", otid: "c1", product: "coins", purchase: T0, type: .consumable)],
        now: e1 + hour, checks: [.customer(.inactive)]),
    PaidServiceCase(
        label: "consumables and a refunded non-consumable: inactive",
        facts: [
            tx("c1", otid: "c1", product: "coins", purchase: T0, type: .consumable),
            tx("n1", otid: "n1", product: "lifetime", purchase: T0, type: .nonConsumable, revoked: T0 + day),
        ],
        now: T0 + 2 * day, checks: [.customer(.inactive)]),

    // 4. EXPIRED/BILLING_RETRY and renewal info still in retry at the same instant: the notification wins.
    PaidServiceCase(
        label: "EXPIRED/BILLING_RETRY beside renewal info still in retry",
        facts: bought + [
            renewal(retry: true, intent: 2, signed: e1), note(.didFailToRenew, at: e1),
            renewal(autoRenew: false, retry: true, intent: 2, signed: e1 + 40 * day),
            note(.expired, .billingRetry, at: e1 + 40 * day, txn: "t1"),
        ],
        now: e1 + 41 * day, checks: [.status("pro", .expired), .billingIssue("pro", nil), .customer(.inactive)]),
]

@Suite("Paid service and restore classes as Apple counts them")
struct PaidServiceTests {
    @Test(arguments: paidServiceCases)
    func row(_ row: PaidServiceCase) {
        let s = state(row.facts, at: row.now)
        verify(row.checks, s, row.label)
        // Any order, with duplicates, gives the same state.
        #expect(state((row.facts + row.facts.prefix(3)).reversed(), at: row.now) == s, "\(row.label): order")
    }
}

extension Lifecycles {
    // Yearly: RENEWAL_EXTENDED by 40 days (not paid service) → DID_RENEW at the extended date → billing
    // failure with a 16-day grace period → recovered on day 5 (no interruption of paid service).
    static let extensionAndGraceRecovery: Lifecycle = {
        let year = ISODuration(years: 1)
        let y1End = year.added(to: T0)
        let extendedAt = T0 + 100 * day
        let y2Start = y1End + 40 * day
        let y2End = year.added(to: y2Start)
        let recoveredAt = y2End + 4 * day
        let y3End = year.added(to: y2End)
        return Lifecycle(
            name: "yearly, renewal-date extension, grace recovery",
            steps: [
                Step(
                    label: "SUBSCRIBED",
                    facts: [
                        tx("y1", product: "yearly", purchase: T0, expires: y1End), renewal(product: "yearly", signed: T0),
                        note(.subscribed, .initialBuy, at: T0, txn: "y1"),
                    ],
                    now: T0 + day, checks: [.status("pro", .active), .paidDays("premium", 365)]),
                Step(
                    label: "RENEWAL_EXTENDED by 40 days",
                    facts: [
                        tx("y1", product: "yearly", purchase: T0, expires: y2Start, signed: extendedAt),
                        renewal(product: "yearly", signed: extendedAt), note(.renewalExtended, at: extendedAt, txn: "y1"),
                    ],
                    now: extendedAt + hour,
                    checks: [.expires("pro", y2Start), .paidDays("premium", 365)]),
                Step(
                    label: "DID_RENEW at the extended date",
                    facts: [
                        tx("y2", product: "yearly", purchase: y2Start, expires: y2End),
                        renewal(product: "yearly", signed: y2Start), note(.didRenew, at: y2Start, txn: "y2"),
                    ],
                    now: y2Start + hour,
                    checks: [.rate("y2", 0.85), .paidDays("premium", 365 + Int((y2End - y2Start) / day))]),
                Step(
                    label: "DID_FAIL_TO_RENEW/GRACE_PERIOD",
                    facts: [
                        renewal(product: "yearly", retry: true, grace: y2End + 16 * day, intent: 2, signed: y2End),
                        note(.didFailToRenew, .gracePeriod, at: y2End, txn: "y2"),
                    ],
                    now: y2End + day, checks: [.status("pro", .gracePeriod), .grace("pro", y2End + 16 * day)]),
                Step(
                    label: "recovered on day 5 of grace",
                    facts: [
                        tx("y3", product: "yearly", purchase: recoveredAt, expires: y3End),
                        renewal(product: "yearly", signed: recoveredAt),
                        note(.didRenew, .billingRecovery, at: recoveredAt, txn: "y3"),
                    ],
                    now: recoveredAt + hour,
                    checks: [
                        .status("pro", .active), .expires("pro", y3End),
                        .paidDays("premium", 365 + Int((y3End - y2Start) / day)),
                    ]),
            ])
    }()
}
