import Entitlements
import Foundation
import FuzzSupport

// libFuzzer target for the entitlement engine (scripts/fuzz.sh): the fuzzer's bytes become a bag
// of facts, a policy and `now`, and `evaluate` must end in a state — never trap — whatever the
// dates (Int64.min, Int64.max, 0, negative, expiry before purchase), quantities or prices, and the
// state must keep the engine's promises.

/// Reads the fuzzer's bytes front to back; past the end every read is 0, so any input decodes.
/// A class, so that nested reads (`reader.maybe(fuzzDate(reader))`) share one position.
final class ByteReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    func int64() -> Int64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return Int64(bitPattern: value)
    }

    func bool() -> Bool { byte() & 1 == 1 }

    func pick<T>(_ values: [T]) -> T { values[Int(byte()) % values.count] }

    func maybe<T>(_ value: @autoclosure () -> T) -> T? { bool() ? value() : nil }
}

/// 2026-01-15T09:00Z, the base of the ordinary dates.
private let base = Time.millis(year: 2026, month: 1, day: 15, hour: 9)

/// Dates that break arithmetic, or sit oddly with everything.
private let extremes: [Int64] = [
    .min, .min + 1, .min + 30 * Time.day, -Time.day, -1, 0, 1, .max - 30 * Time.day, .max - 1, .max,
]

private let products = ["monthly", "monthly.plus", "yearly", "magazine", "lifetime", "pass", "coins", "unknown"]
private let ids = ["t1", "t2", "t3", "t4"]
private let chains = ["o1", "o2", "o3"]

/// The policy, with its two overflow-prone settings (fallback grace days, pass duration) from the input.
func fuzzPolicy(_ reader: ByteReader) -> Policy {
    let durations: [ISODuration] = [
        ISODuration(months: 1), ISODuration(years: 1), ISODuration(days: 7), ISODuration(hours: 36), ISODuration(),
        ISODuration(years: 1_000_000, months: 1_000_000, weeks: 1_000_000, days: 1_000_000),
        ISODuration(years: .max, months: .max, weeks: .max, days: .max, hours: .max, minutes: .max, seconds: .max),
    ]
    return Policy(
        products: [
            "monthly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "premium", level: 2),
            "yearly": ProductPolicy(type: .autoRenewable, entitlements: ["pro"], subscriptionGroup: "premium", level: 2),
            "monthly.plus": ProductPolicy(
                type: .autoRenewable, entitlements: ["pro", "plus"], subscriptionGroup: "premium", level: 1),
            "magazine": ProductPolicy(type: .autoRenewable, entitlements: ["magazine"]),
            "lifetime": ProductPolicy(type: .nonConsumable, entitlements: ["pro"]),
            "pass": ProductPolicy(type: .nonRenewing, entitlements: ["pass"], duration: reader.pick(durations)),
            "coins": ProductPolicy(type: .consumable),
        ],
        fallbackGraceDays: reader.pick([0, 3, 16, Int.max, Int.min, -1]),
        smallBusiness: reader.bool())
}

/// A date: one of the extremes, the base plus a few days, or any 64 bits.
func fuzzDate(_ reader: ByteReader) -> Int64 {
    let selector = reader.byte()
    switch selector % 4 {
    case 0: return extremes[Int(selector / 4) % extremes.count]
    case 1, 2: return base + Int64(Int8(bitPattern: reader.byte())) * Time.day + Int64(selector / 4) * Time.hour
    default: return reader.int64()
    }
}

func fuzzFact(_ reader: ByteReader) -> Fact {
    let environment: Environment = reader.byte() % 8 == 0 ? .sandbox : .production
    switch reader.byte() % 10 {
    case 0:
        let product = reader.pick(products)
        let type: ProductType =
            switch product {
            case "lifetime": .nonConsumable
            case "pass": .nonRenewing
            case "coins": .consumable
            default: reader.bool() ? .autoRenewable : reader.pick(ProductType.allCases)
            }
        return .transaction(
            TransactionFact(
                transactionId: reader.pick(ids), originalTransactionId: reader.pick(chains), productId: product,
                purchaseDate: fuzzDate(reader), expiresDate: reader.maybe(fuzzDate(reader)),
                quantity: reader.pick([1, 2, 0, -1, .max, .min]), productType: type,
                ownership: reader.bool() ? .purchased : .familyShared, signedDate: fuzzDate(reader),
                revocationDate: reader.maybe(fuzzDate(reader)),
                revocationType: reader.maybe(reader.pick([.refundFull, .familyRevoke])), isUpgraded: reader.byte() % 5 == 0,
                offerType: reader.maybe(reader.pick(OfferType.allCases)), offerDiscountType: reader.maybe(.freeTrial),
                environment: environment, price: reader.maybe(reader.pick([9_990, 0, -1, .max, .min]))))
    case 1:
        return .renewalInfo(
            RenewalInfoFact(
                originalTransactionId: reader.pick(chains), productId: reader.pick(products),
                autoRenewProductId: reader.maybe(reader.pick(products)), autoRenewStatus: reader.bool(),
                isInBillingRetryPeriod: reader.maybe(reader.bool()), gracePeriodExpiresDate: reader.maybe(fuzzDate(reader)),
                priceIncreaseStatus: reader.maybe(reader.pick([0, 1])), signedDate: fuzzDate(reader),
                eligibleWinBackOfferIds: reader.bool() ? ["wb"] : [], environment: environment))
    case 2:
        let types: [NotificationType] = [
            .didFailToRenew, .didRenew, .subscribed, .didChangeRenewalStatus, .expired, .gracePeriodExpired,
            .priceIncrease, .refund, .revoke, .refundReversed, .refundDeclined, .renewalExtended, .test,
        ]
        let subtypes: [NotificationSubtype?] = [
            nil, .autoRenewEnabled, .autoRenewDisabled, .pending, .accepted, .gracePeriod, .billingRecovery, .billingRetry,
        ]
        let date = fuzzDate(reader)
        return .notification(
            NotificationFact(
                type: reader.pick(types), subtype: reader.pick(subtypes), notificationUUID: "n\(date)",
                signedDate: date, environment: environment, originalTransactionId: reader.maybe(reader.pick(chains)),
                transactionId: reader.maybe(reader.pick(ids))))
    case 3:
        return .receiptEntry(
            ReceiptEntryFact(
                transactionId: reader.pick(ids), originalTransactionId: reader.pick(chains),
                productId: reader.pick(products), purchaseDate: fuzzDate(reader),
                expiresDate: reader.maybe(fuzzDate(reader)), cancellationDate: reader.maybe(fuzzDate(reader)),
                isTrialPeriod: reader.bool(), isUpgraded: reader.byte() % 5 == 0,
                quantity: reader.pick([1, .max, .min]), receiptDate: fuzzDate(reader), environment: environment))
    case 4:
        return .pendingRenewal(
            PendingRenewalFact(
                originalTransactionId: reader.pick(chains), productId: reader.pick(products),
                autoRenewStatus: reader.bool(), isInBillingRetryPeriod: reader.maybe(reader.bool()),
                gracePeriodExpiresDate: reader.maybe(fuzzDate(reader)), receiptDate: fuzzDate(reader),
                environment: environment))
    case 5:
        let types: [V1NotificationType] = [
            .didFailToRenew, .didRecover, .didRenew, .didChangeRenewalStatus, .revoke, .cancel, .priceIncreaseConsent,
        ]
        return .v1Notification(
            V1NotificationFact(
                type: reader.pick(types), date: fuzzDate(reader), environment: environment,
                originalTransactionId: reader.maybe(reader.pick(chains)), transactionId: reader.maybe(reader.pick(ids)),
                autoRenewStatus: reader.maybe(reader.bool())))
    case 6:
        // The server's own spends: any quantity, keys that collide, any product.
        return .consumableSpend(
            ConsumableSpendFact(
                appAccountToken: "6f2d7a1e-0c4b-4b8e-9d3a-2f1e0a9b8c7d", productId: reader.pick(products),
                quantity: reader.pick([1, 2, 0, -1, .max, .min]), idempotencyKey: reader.pick(["k1", "k2", "k3"]),
                spentAt: fuzzDate(reader), balanceAfter: reader.pick([0, .max, .min]), environment: environment))
    case 7:
        // The operator's grants: any window (ends before starts included), ids that collide.
        return .promotionalGrant(
            PromotionalGrantFact(
                grantId: reader.pick(["g1", "g2"]), entitlement: reader.pick(["pro", "plus", "pass"]), grantedAt: fuzzDate(reader),
                expiresDate: fuzzDate(reader), reason: reader.maybe("r"), appAccountToken: "6f2d7a1e-0c4b-4b8e-9d3a-2f1e0a9b8c7d"))
    case 8:
        return .promotionalGrantEnd(
            PromotionalGrantEndFact(
                grantId: reader.pick(["g1", "g2"]), endedAt: fuzzDate(reader), appAccountToken: "6f2d7a1e-0c4b-4b8e-9d3a-2f1e0a9b8c7d"))
    default:
        return .appTransaction(
            AppTransactionFact(
                originalPurchaseDate: fuzzDate(reader), preorderDate: reader.maybe(fuzzDate(reader)),
                signedDate: fuzzDate(reader), environment: environment))
    }
}

/// One input: decode, evaluate, check the invariants. A broken invariant is a crash (a finding).
func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    let reader = ByteReader(bytes)
    let policy = fuzzPolicy(reader)
    let now = fuzzDate(reader)
    var facts: [Fact] = []
    while !reader.isAtEnd && facts.count < 64 { facts.append(fuzzFact(reader)) }

    let state = evaluate(facts: facts, policy: policy, now: now)
    // Order and duplicates change nothing.
    // A permutation drawn from the input: indices sorted by a multiplicative hash keyed on `now`.
    let key = UInt64(bitPattern: now) ^ UInt64(facts.count)
    let order = facts.indices.sorted { UInt64($0) &* 0x9E37_79B9_7F4A_7C15 ^ key < UInt64($1) &* 0x9E37_79B9_7F4A_7C15 ^ key }
    let shuffled = order.map { facts[$0] } + facts.prefix(facts.count / 2)
    require(evaluate(facts: shuffled, policy: policy, now: now) == state, "a permutation changed the state")
    require(evaluate(facts: facts.reversed(), policy: policy, now: now) == state, "the reverse order changed the state")
    // Facts of other environments never count.
    let others = facts.filter { $0.environment != .production }
    let production = facts.filter { $0.environment == .production }
    require(evaluate(facts: production, policy: policy, now: now) == state, "another environment's facts counted")
    _ = evaluate(facts: others, policy: policy, now: now, environment: .sandbox)
    // The next status change is in the future, and time alone changes nothing before it (what lets
    // the server serve a stored answer until then).
    // Without one, nothing changes in the next ten years.
    if let next = state.nextStatusChangeAt { require(next > now, "nextStatusChangeAt \(next) is not after now \(now)") }
    let (tenYears, overflow) = now.addingReportingOverflow(3_650 * Time.day)
    let horizon = state.nextStatusChangeAt ?? (overflow ? .max : tenYears)
    if horizon > now {
        var later = evaluate(facts: facts, policy: policy, now: horizon - 1)
        later.evaluatedAt = now
        require(later == state, "the state changed before \(horizon) (now \(now))")
    }
    require(state.entitlements.allSatisfy { $0.active == $0.status.grantsAccess }, "active disagrees with status")
}

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("FuzzEngine: \(message())") }
}

@main
enum FuzzEngineMain {
    static func main() { FuzzMain.run("FuzzEngine", fuzzOne) }
}
