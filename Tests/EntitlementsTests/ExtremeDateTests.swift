import Entitlements
import Testing

/// A stored fact with absurd dates (or amounts) beside an ordinary purchase: evaluation must end in
/// a state, never a trap, and the ordinary purchase must still show (the bad fact can only make
/// its own answer wrong).
struct ExtremeCase: Sendable, CustomTestStringConvertible {
    var label: String
    var facts: [Fact]
    var now: Int64 = T0 + day
    var rules: Policy = policy
    var checks: [Check] = []
    var testDescription: String { label }
}

private let hi = Int64.max
private let lo = Int64.min
/// Just inside the range before the arithmetic of a 60-day retry or lapse overflows.
private let nearMax = Int64.max - 30 * day
private let nearMin = Int64.min + 30 * day
/// The ordinary purchase every row carries (a product that grants no entitlement, so it hides none).
private let bystander = tx("n1", otid: "n1", product: "mystery", purchase: T0, type: .nonConsumable)

/// A policy whose settings multiply into overflow: fallback grace of `Int.max` days, a pass of `Int.max` years.
private let hugePolicy: Policy = {
    var p = policy
    p.fallbackGraceDays = .max
    p.products["pass.month"]?.duration = ISODuration(years: .max, months: .max, weeks: .max, days: .max,
                                                      hours: .max, minutes: .max, seconds: .max)
    return p
}()

let extremeCases: [ExtremeCase] = [
    ExtremeCase(
        label: "expiry at Int64.max", facts: [tx("t1", purchase: T0, expires: hi)],
        checks: [.status("pro", .active), .expires("pro", hi)]),
    ExtremeCase(
        label: "expiry at Int64.min", facts: [tx("t1", purchase: T0, expires: lo)],
        checks: [.status("pro", .expired), .paidDays("premium", 0)]),
    ExtremeCase(
        label: "purchase at Int64.min, expiry at Int64.max", facts: [tx("t1", purchase: lo, expires: hi, signed: T0)],
        checks: [.status("pro", .active)]),
    ExtremeCase(
        label: "periods at both ends", facts: [tx("t1", purchase: lo, expires: lo + 1), tx("t2", purchase: hi - 1, expires: hi)],
        checks: [.status("pro", .active)]),
    ExtremeCase(
        label: "lapse since an expiry at Int64.min", facts: [tx("t1", purchase: lo, expires: lo + day, signed: T0)],
        checks: [.status("pro", .expired), .paidDays("premium", 0)]),
    ExtremeCase(
        label: "expiry before purchase", facts: [tx("t1", purchase: T0, expires: T0 - 400 * day)],
        checks: [.status("pro", .expired), .paidDays("premium", 0)]),
    ExtremeCase(label: "every date zero", facts: [tx("t1", purchase: 0, expires: 0, signed: 0), renewal(retry: true, grace: 0, signed: 0)]),
    ExtremeCase(
        label: "every date negative",
        facts: [tx("t1", purchase: -5 * day, expires: -day, signed: -day, revoked: -2 * day), note(.refund, at: -1, txn: "t1")],
        checks: [.status("pro", .refunded)]),
    ExtremeCase(
        label: "billing retry from an expiry near Int64.max",
        facts: [tx("t1", purchase: T0, expires: nearMax), renewal(retry: true, signed: nearMax), note(.didFailToRenew, at: nearMax)],
        now: nearMax + day, checks: [.status("pro", .billingRetry)]),
    ExtremeCase(
        label: "grace ends at Int64.max",
        facts: [tx("t1", purchase: T0, expires: months(1)), renewal(retry: true, grace: hi, signed: months(1))],
        now: months(1) + day, checks: [.status("pro", .gracePeriod), .grace("pro", hi)]),
    ExtremeCase(
        label: "grace ends at Int64.min",
        facts: [tx("t1", purchase: T0, expires: months(1)), renewal(retry: true, grace: lo, signed: months(1))],
        now: months(1) + day, checks: [.status("pro", .billingRetry)]),
    ExtremeCase(
        label: "V1 fallback grace of Int.max days",
        facts: [entry("e1", purchase: T0, expires: months(1)), v1note(.didFailToRenew, at: months(1), txn: "e1")],
        now: months(1) + day, rules: hugePolicy, checks: [.status("pro", .gracePeriod)]),
    ExtremeCase(
        label: "V1 fallback grace from an expiry near Int64.max",
        facts: [entry("e1", purchase: T0, expires: hi - day), v1note(.didFailToRenew, at: hi - day, txn: "e1")],
        now: hi - 1, checks: [.status("pro", .gracePeriod)]),
    ExtremeCase(
        label: "pass bought at Int64.max",
        facts: [tx("p1", otid: "p1", product: "pass.month", purchase: hi, type: .nonRenewing)],
        now: hi, checks: [.passExpires("pass", hi), .passStatus("pass", .expired)]),
    ExtremeCase(
        label: "passes stacked past Int64.max",
        facts: [
            tx("p1", otid: "p1", product: "pass.year", purchase: hi - 200 * day, type: .nonRenewing),
            tx("p2", otid: "p2", product: "pass.year", purchase: hi - 100 * day, type: .nonRenewing),
        ],
        now: hi - 1, checks: [.passStatus("pass", .active)]),
    ExtremeCase(
        label: "pass bought at Int64.min",
        facts: [tx("p1", otid: "p1", product: "pass.month", purchase: lo, type: .nonRenewing)],
        checks: [.passStatus("pass", .expired)]),
    ExtremeCase(
        label: "pass of Int.max years, months, weeks and days",
        facts: [tx("p1", otid: "p1", product: "pass.month", purchase: T0, type: .nonRenewing)],
        rules: hugePolicy, checks: [.passStatus("pass", .active), .passExpires("pass", hi)]),
    ExtremeCase(
        label: "consumable quantities past Int.max",
        facts: [
            tx("c1", otid: "c1", product: "coins", purchase: T0, type: .consumable, quantity: .max),
            tx("c2", otid: "c2", product: "coins", purchase: T0, type: .consumable, revoked: T0, quantity: .max),
        ],
        checks: [.consumableCredited("coins", .max)]),
    ExtremeCase(
        label: "consumable quantities below Int.min",
        facts: [
            tx("c1", otid: "c1", product: "coins", purchase: T0, type: .consumable, quantity: .min),
            tx("c2", otid: "c2", product: "coins", purchase: T0, type: .consumable, quantity: -1),
        ]),
    ExtremeCase(
        label: "price Int64.max", facts: [tx("t1", purchase: T0, expires: months(1), price: hi)],
        checks: [.status("pro", .active)]),
    ExtremeCase(
        label: "price Int64.min", facts: [tx("t1", purchase: T0, expires: months(1), price: lo)],
        checks: [.status("pro", .active)]),
    ExtremeCase(label: "now at Int64.min", facts: [tx("t1", purchase: T0, expires: months(1))], now: lo),
    ExtremeCase(
        label: "now at Int64.max", facts: [tx("t1", purchase: T0, expires: months(1))], now: hi,
        checks: [.status("pro", .expired)]),
    ExtremeCase(
        label: "notifications and renewal info at both ends",
        facts: [
            tx("t1", purchase: T0, expires: months(1)), renewal(retry: true, grace: hi, signed: lo),
            renewal(autoRenew: false, signed: hi), note(.didFailToRenew, .gracePeriod, at: lo),
            note(.expired, .billingRetry, at: hi), note(.gracePeriodExpired, at: lo), note(.refund, at: hi, txn: "t1"),
            note(.priceIncrease, .pending, at: lo), v1note(.didRecover, at: hi),
        ],
        now: months(1) + day, checks: [.status("pro", .refunded)]),
    ExtremeCase(
        label: "upgraded at Int64.min",
        facts: [
            tx("t1", purchase: T0, expires: months(1), signed: T0 + day, revoked: lo, upgraded: true),
            tx("t2", product: "monthly.plus", purchase: T0 + day, expires: hi),
        ],
        checks: [.status("plus", .active)]),
]

@Suite("Extreme dates and amounts never trap")
struct ExtremeDateTests {
    @Test(arguments: extremeCases)
    func evaluatesWithoutTrapping(_ row: ExtremeCase) {
        let s = evaluate(facts: row.facts + [bystander], policy: row.rules, now: row.now)
        verify(row.checks + [.owned("mystery", true)], s, row.label)
        // Order-free and duplicate-free as always.
        let again = evaluate(facts: (row.facts + [bystander] + row.facts).reversed(), policy: row.rules, now: row.now)
        #expect(again == s, "\(row.label): order")
        if let next = s.nextStatusChangeAt { #expect(next > row.now, "\(row.label): next change after now") }
    }

    @Test(arguments: [Int64.min, Int64.min + 1, -Time.day, -1, 0, 1, Time.day, Int64.max - 1, Int64.max])
    func calendarArithmeticSaturates(_ instant: Int64) {
        let date = Time.civilDate(of: instant)
        #expect((1...12).contains(date.month) && (1...31).contains(date.day))
        let later = ISODuration(years: 1, months: 1, days: 1, hours: 1).added(to: instant)
        #expect(later >= instant)
        #expect(ISODuration(months: 1).added(to: instant) >= instant)
        // Far inside the range nothing saturates: a month and back lands on the same day.
        if instant > Int64.min / 2 && instant < Int64.max / 2 {
            #expect(later > instant)
        }
    }

    @Test func publicCalendarFunctionsClampAbsurdInput() {
        #expect(Time.millis(year: .max, month: 12, day: 31) == Int64.max)
        #expect(Time.millis(year: .min, month: 1, day: 1) == Int64.min)
        #expect(Time.millis(year: 2026, month: 1, day: 1, hour: .max) == Int64.max)
        _ = Time.daysFromCivil(year: .max, month: .max, day: .max)
        _ = Time.daysFromCivil(year: .min, month: .min, day: .min)
        _ = Time.civilFromDays(.max)
        _ = Time.civilFromDays(.min)
        #expect(ISODuration(years: .max).added(to: T0) == Int64.max)
        // Ordinary dates are unchanged by the clamping.
        #expect(Time.millis(year: 2026, month: 1, day: 15, hour: 9) == T0)
    }
}
