import Entitlements
import Testing

/// Random fact bags drawn from small id and date spaces, so that versions collide, signed dates
/// tie, V1 and V2 describe the same transaction and environments mix; one date, quantity or price
/// in eight is extreme (`Int64.min`, `Int64.max`, 0, negative, just inside the range). Whatever the
/// bag, evaluation ends (never traps) and every permutation with duplicates gives the same state.
@Suite("Order independence on random fact bags")
struct FuzzTests {
    @Test(arguments: 0..<200)
    func randomBag(_ seed: Int) {
        var rng = SplitMix64(seed: UInt64(seed) &* 0xA24B_AED4_963E_E407)
        let facts = randomFacts(count: Int.random(in: 1...40, using: &rng), using: &rng)
        let now = Int.random(in: 0..<16, using: &rng) == 0
            ? extremes.randomElement(using: &rng)! : T0 + Int64.random(in: -5...120, using: &rng) * day
        let expected = state(facts, at: now)
        let sandbox = state(facts, at: now, environment: .sandbox)
        for round in 0..<20 {
            var shuffled = facts
            for _ in 0..<Int.random(in: 0...facts.count, using: &rng) { shuffled.append(facts.randomElement(using: &rng)!) }
            shuffled.shuffle(using: &rng)
            let got = state(shuffled, at: now)
            #expect(got == expected, "seed \(seed), round \(round)")
            #expect(state(shuffled, at: now, environment: .sandbox) == sandbox, "seed \(seed), round \(round), sandbox")
            if got != expected { return }
        }
    }

    private func randomFacts(count: Int, using rng: inout SplitMix64) -> [Fact] {
        let products = ["monthly", "monthly.plus", "basic.monthly", "yearly", "magazine", "lifetime", "pass.month", "coins", "unknown"]
        let otids = ["o1", "o2", "o3"]
        let txns = ["t1", "t2", "t3", "t4", "t5"]
        func extreme() -> Bool { Int.random(in: 0..<8, using: &rng) == 0 }
        func date() -> Int64 {
            extreme() ? extremes.randomElement(using: &rng)! : T0 + Int64.random(in: 0...6, using: &rng) * 10 * day
        }
        /// `base + days`, or an extreme date; saturating, so the generator itself never traps.
        func after(_ base: Int64, days: ClosedRange<Int64>) -> Int64 {
            if extreme() { return extremes.randomElement(using: &rng)! }
            let (sum, overflow) = base.addingReportingOverflow(Int64.random(in: days, using: &rng) * day)
            return overflow ? (base > 0 ? .max : .min) : sum
        }
        func pick<T>(_ values: [T]) -> T { values.randomElement(using: &rng)! }
        func maybe<T>(_ value: T) -> T? { Bool.random(using: &rng) ? value : nil }
        var facts: [Fact] = []
        for _ in 0..<count {
            let environment: Environment = Int.random(in: 0..<6, using: &rng) == 0 ? .sandbox : .production
            switch Int.random(in: 0..<8, using: &rng) {
            case 0, 1:
                let product = pick(products)
                let type: ProductType =
                    switch product {
                    case "lifetime": .nonConsumable
                    case "pass.month": .nonRenewing
                    case "coins": .consumable
                    default: .autoRenewable
                    }
                let purchase = date()
                facts.append(
                    tx(pick(txns), otid: pick(otids), product: product, purchase: purchase,
                       expires: type == .autoRenewable ? after(purchase, days: 1...40) : nil,
                       signed: after(purchase, days: 0...2), type: type,
                       ownership: Bool.random(using: &rng) ? .purchased : .familyShared,
                       revoked: maybe(after(purchase, days: 1...1)), revocationType: maybe(pick([.refundFull, .familyRevoke])),
                       upgraded: Int.random(in: 0..<5, using: &rng) == 0,
                       offer: maybe(pick(OfferType.allCases)), discount: maybe(.freeTrial),
                       quantity: extreme() ? pick([.max, .min, 0, -1]) : Int.random(in: 1...3, using: &rng),
                       price: extreme() ? pick([.max, .min, 0, -1]) : 9_990, environment: environment))
            case 2:
                facts.append(
                    renewal(otid: pick(otids), product: pick(products), next: maybe(pick(products)),
                            autoRenew: Bool.random(using: &rng), retry: maybe(Bool.random(using: &rng)),
                            grace: maybe(after(date(), days: 16...16)), priceIncrease: maybe(Int.random(in: 0...1, using: &rng)),
                            winBack: Bool.random(using: &rng) ? ["wb"] : [], signed: date(), environment: environment))
            case 3, 4:
                let types: [NotificationType] = [
                    .didFailToRenew, .didRenew, .subscribed, .didChangeRenewalStatus, .expired, .gracePeriodExpired,
                    .priceIncrease, .refund, .revoke, .refundReversed, .refundDeclined, .renewalExtended, .test,
                ]
                let subtypes: [NotificationSubtype?] = [
                    nil, .autoRenewEnabled, .autoRenewDisabled, .pending, .accepted, .gracePeriod, .billingRecovery,
                    .billingRetry,
                ]
                facts.append(
                    note(pick(types), pick(subtypes), at: date(), otid: maybe(pick(otids)), txn: maybe(pick(txns)),
                         environment: environment))
            case 5:
                let purchase = date()
                facts.append(
                    entry(pick(txns), otid: pick(otids), product: pick(products), purchase: purchase,
                          expires: maybe(after(purchase, days: 30...30)), receipt: after(purchase, days: 0...2),
                          cancelled: maybe(after(purchase, days: 1...1)), upgraded: Int.random(in: 0..<5, using: &rng) == 0,
                          trial: Bool.random(using: &rng)))
            case 6:
                facts.append(
                    pending(otid: pick(otids), product: pick(products), autoRenew: Bool.random(using: &rng),
                            retry: maybe(Bool.random(using: &rng)), grace: maybe(date()),
                            priceConsent: maybe(0), receipt: date()))
            default:
                let types: [V1NotificationType] = [.didFailToRenew, .didRecover, .didChangeRenewalStatus, .revoke, .cancel, .priceIncreaseConsent]
                facts.append(
                    v1note(pick(types), at: date(), otid: maybe(pick(otids)), txn: maybe(pick(txns)),
                           autoRenew: maybe(Bool.random(using: &rng))))
            }
        }
        // A renewal-date extension: a newer version of a transaction with a later expiry.
        if let last = facts.last(where: { if case .transaction = $0 { true } else { false } }),
            case .transaction(var t) = last, let expires = t.expiresDate
        {
            t.signedDate = t.signedDate &+ day
            t.expiresDate = expires > .max - 40 * day ? expires : expires + 40 * day
            facts.append(.transaction(t))
        }
        // Same-id, same-date versions that differ in content exercise the tie-break.
        if let first = facts.first, case .transaction(var t) = first {
            t.quantity &+= 1  // wrapping: extremes are generated too
            t.price = (t.price ?? 0) &+ 1
            facts.append(.transaction(t))
        }
        return facts
    }
}

/// Dates at and near the ends of the range, and the ones that sit oddly with everything (0, negative).
private let extremes: [Int64] = [
    .min, .min + 1, .min + 30 * day, -day, -1, 0, 1, .max - 30 * day, .max - 1, .max,
]
