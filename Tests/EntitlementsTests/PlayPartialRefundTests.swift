import Entitlements
import Testing

// Quantity-based partial refunds of Play one-time purchases: only the refunded units are taken
// back, counted once however Google reports them (docs/engine.md, "Partial refunds").

/// A one-time purchase snapshot saying how many units are still refundable.
func unitsLeft(_ token: String, product: String = "play.coins", quantity: Int, refundable: Int?, state: Int = 0, observed: Int64) -> Fact {
    .playProduct(
        PlayProductFact(
            purchaseToken: token, packageName: "com.example.app", productId: product, orderId: "GPA.\(token)", purchaseState: state,
            quantity: quantity, purchaseTime: T0, observedAt: observed, refundableQuantity: refundable))
}

/// A quantity-based partial refund: a notification's (no units) or a listed one's (`units`).
func partialVoid(_ token: String, at date: Int64, units: Int? = nil) -> Fact {
    .playVoided(
        PlayVoidedPurchaseFact(
            purchaseToken: token, orderId: "GPA.\(token)", productType: 2, refundType: units == nil ? 2 : nil, voidedTime: date,
            voidedSource: 0, voidedReason: 1, voidedQuantity: units))
}

struct PartialRefundRow: CustomTestStringConvertible, Sendable {
    var name: String
    var facts: [Fact]
    var remaining: Int
    var refundedInFull: Bool
    /// (instant, units, units left) of each partial refund.
    var steps: [String]

    var testDescription: String { name }
}

func step(_ at: Int64, _ units: Int, left: Int) -> String { "\(at):\(units):\(left)" }

let partialRefundTable: [PartialRefundRow] = [
    PartialRefundRow(
        name: "nothing refunded", facts: [unitsLeft("c1", quantity: 3, refundable: 3, observed: T0)], remaining: 3, refundedInFull: false,
        steps: []),
    PartialRefundRow(
        name: "one of three, told by the notification",
        facts: [
            unitsLeft("c1", quantity: 3, refundable: 3, observed: T0), partialVoid("c1", at: T0 + day),
            unitsLeft("c1", quantity: 3, refundable: 2, observed: T0 + day + 1),
        ],
        remaining: 2, refundedInFull: false, steps: [step(T0 + day + 1, 1, left: 2)]),
    PartialRefundRow(
        name: "one refund told by the notification and the list",
        facts: [
            unitsLeft("c1", quantity: 3, refundable: 3, observed: T0), partialVoid("c1", at: T0 + day),
            unitsLeft("c1", quantity: 3, refundable: 2, observed: T0 + day + 1), partialVoid("c1", at: T0 + day - 5, units: 1),
            unitsLeft("c1", quantity: 3, refundable: 2, observed: T0 + 2 * day),
        ],
        remaining: 2, refundedInFull: false, steps: [step(T0 + day + 1, 1, left: 2)]),
    PartialRefundRow(
        name: "two refunds",
        facts: [
            unitsLeft("c1", quantity: 5, refundable: 5, observed: T0), unitsLeft("c1", quantity: 5, refundable: 3, observed: T0 + day),
            unitsLeft("c1", quantity: 5, refundable: 2, observed: T0 + 2 * day),
        ],
        remaining: 2, refundedInFull: false, steps: [step(T0 + day, 2, left: 3), step(T0 + 2 * day, 1, left: 2)]),
    PartialRefundRow(
        name: "the last units by quantity",
        facts: [
            unitsLeft("c1", quantity: 2, refundable: 2, observed: T0), unitsLeft("c1", quantity: 2, refundable: 1, observed: T0 + day),
            unitsLeft("c1", quantity: 2, refundable: 0, observed: T0 + 2 * day),
        ],
        remaining: 0, refundedInFull: true, steps: [step(T0 + day, 1, left: 1), step(T0 + 2 * day, 1, left: 0)]),
    PartialRefundRow(
        name: "a full refund of what was left",
        facts: [
            unitsLeft("c1", quantity: 3, refundable: 3, observed: T0), unitsLeft("c1", quantity: 3, refundable: 2, observed: T0 + day),
            voided("c1", order: "GPA.c1", at: T0 + 2 * day, productType: 2),
            unitsLeft("c1", quantity: 3, refundable: 0, state: 1, observed: T0 + 2 * day + 1),
        ],
        remaining: 0, refundedInFull: true, steps: [step(T0 + day, 1, left: 2)]),
    PartialRefundRow(
        name: "listed units when Google's answers give no count",
        facts: [
            unitsLeft("c1", quantity: 4, refundable: nil, observed: T0), partialVoid("c1", at: T0 + day, units: 1),
            partialVoid("c1", at: T0 + day, units: 1), partialVoid("c1", at: T0 + 2 * day, units: 2),
        ],
        remaining: 1, refundedInFull: false, steps: [step(T0 + day, 1, left: 3), step(T0 + 2 * day, 2, left: 1)]),
    PartialRefundRow(
        name: "a notification alone takes nothing",
        facts: [unitsLeft("c1", quantity: 3, refundable: nil, observed: T0), partialVoid("c1", at: T0 + day)],
        remaining: 3, refundedInFull: false, steps: []),
]

@Suite struct PlayPartialRefundTests {
    static func refunds(_ facts: [Fact]) -> PlayProductRefunds {
        var snapshots: [PlayProductFact] = []
        var voids: [PlayVoidedPurchaseFact] = []
        for fact in facts {
            if case .playProduct(let p) = fact { snapshots.append(p) }
            if case .playVoided(let v) = fact { voids.append(v) }
        }
        return PlayProductRefunds(snapshots: snapshots, voids: voids)
    }

    static func said(_ refunds: PlayProductRefunds) -> [String] { refunds.steps.map { step($0.at, $0.quantity, left: $0.remaining) } }

    @Test(arguments: partialRefundTable)
    func unitsLeftAndSteps(_ row: PartialRefundRow) {
        let refunds = Self.refunds(row.facts)
        #expect(refunds.remaining == row.remaining)
        #expect(refunds.refundedInFull == row.refundedInFull)
        #expect(Self.said(refunds) == row.steps)
    }

    @Test(arguments: 1...8 as ClosedRange<UInt64>)
    func shuffledAndDuplicatedCountOnce(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        for row in partialRefundTable {
            let bag = (row.facts + row.facts.shuffled(using: &rng).prefix(2)).shuffled(using: &rng)
            let refunds = Self.refunds(bag)
            #expect(refunds.remaining == row.remaining, "\(row.name) seed \(seed)")
            #expect(Self.said(refunds) == row.steps, "\(row.name) seed \(seed)")
        }
    }

    /// Revenue (when the purchase has a price) is reduced in proportion to the units refunded.
    @Test(arguments: [
        (Int64(9_990), 3, 1, Int64(3_330)), (10_000, 3, 1, 3_333), (10_000, 3, 3, 10_000), (10_000, 3, 0, 0),
        (Int64.max, 7, 3, Int64.max / 7 * 3 + Int64.max % 7 * 3 / 7),
    ])
    func refundedAmountIsProportional(price: Int64, quantity: Int, refunded: Int, expected: Int64) {
        let refunds = Self.refunds([unitsLeft("c1", quantity: quantity, refundable: quantity - refunded, observed: T0)])
        #expect(refunds.refundedAmount(ofPrice: price) == expected)
    }

    /// A non-consumable bought three times stays owned while a unit is left.
    @Test func nonConsumableStaysOwnedWhileUnitsRemain() {
        let bought = unitsLeft("p1", product: "play.lifetime", quantity: 3, refundable: 3, observed: T0)
        let two = unitsLeft("p1", product: "play.lifetime", quantity: 3, refundable: 1, observed: T0 + day)
        let none = unitsLeft("p1", product: "play.lifetime", quantity: 3, refundable: 0, observed: T0 + 2 * day)
        let partly = evaluate(facts: [bought, partialVoid("p1", at: T0 + day), two], policy: playPolicy, now: T0 + day + 1)
        #expect(partly.entitlement("lifetime")?.status == .active)
        #expect(partly.nonConsumable("play.lifetime")?.owned == true)
        let all = evaluate(facts: [bought, two, none], policy: playPolicy, now: T0 + 3 * day)
        #expect(all.entitlement("lifetime")?.status == .refunded)
    }

    /// A consumable's balance loses only the refunded units, once, however the refund was reported.
    @Test func consumableLosesOnlyTheRefundedUnits() {
        let facts = [
            unitsLeft("c1", quantity: 5, refundable: 5, observed: T0), partialVoid("c1", at: T0 + day),
            unitsLeft("c1", quantity: 5, refundable: 3, observed: T0 + day + 1), partialVoid("c1", at: T0 + day, units: 2),
            unitsLeft("c1", quantity: 5, refundable: 3, observed: T0 + 2 * day),
            playProduct("c2", product: "play.coins", quantity: 2, observed: T0),
        ]
        let state = evaluate(facts: facts + facts.prefix(3), policy: playPolicy, now: T0 + 3 * day)
        let coins = state.consumable("play.coins")
        #expect(coins?.credited == 7)
        #expect(coins?.debited == 2)
        #expect(coins?.balance == 5)
        #expect(coins?.refundedTransactionIds == ["c1"])
    }

    static let lifecycle: [Fact] = [
        unitsLeft("c1", quantity: 5, refundable: 5, observed: T0), partialVoid("c1", at: T0 + day),
        unitsLeft("c1", quantity: 5, refundable: 3, observed: T0 + day + 1), partialVoid("c1", at: T0 + day, units: 2),
        unitsLeft("c1", quantity: 5, refundable: 3, observed: T0 + 2 * day), unitsLeft("c1", quantity: 5, refundable: 2, observed: T0 + 3 * day),
        voided("c1", order: "GPA.c1", at: T0 + 4 * day, productType: 2),
        unitsLeft("c1", quantity: 5, refundable: 0, state: 1, observed: T0 + 4 * day + 1),
    ]

    /// Each partial refund is one `purchase.refunded` naming its units; the full refund takes what was left.
    @Test func partialRefundsAreEventsNamingTheirUnits() {
        let events = PlayEventTests.timeline(Self.lifecycle)
        #expect(events.map { eventLine($0.type, $0.occurredAt, $0.subject) } == [
            eventLine(.purchaseCompleted, T0, "c1"), eventLine(.purchaseRefunded, T0 + day + 1, "c1"),
            eventLine(.purchaseRefunded, T0 + 3 * day, "c1"), eventLine(.purchaseRefunded, T0 + 4 * day, "c1"),
        ])
        #expect(events.map { $0.details["quantity"] } == [nil, "2", "1", "2"])
        #expect(events.map { $0.details["remainingQuantity"] } == [nil, "3", "2", "0"])
        #expect(events.map { $0.details["refundType"] } == [nil, "quantity", "quantity", nil])
    }

    @Test(arguments: 1...8 as ClosedRange<UInt64>)
    func shuffledAndDuplicatedGiveTheSameEvents(seed: UInt64) {
        PlayEventTests.expectOrderProof(Self.lifecycle, seed: seed)
    }
}
