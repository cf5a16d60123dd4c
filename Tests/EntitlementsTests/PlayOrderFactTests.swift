import Entitlements
import Testing

/// Prices from the Orders API (``PlayOrderFact``) in the rollups: an introductory order and a
/// one-time purchase priced by it count like priced snapshots, whatever the order the facts came
/// in, a rollup recomputed from the fact's date equals one computed afresh, and refunds by
/// quantity take back their units' share.
@Suite struct PlayOrderFactTests {
    static func order(_ token: String, _ orderId: String, price: Int64, observed: Int64) -> Fact {
        .playOrder(
            PlayOrderFact(
                purchaseToken: token, orderId: orderId, packageName: "com.example.app", price: price, currency: "USD",
                purchaseTime: T0, observedAt: observed))
    }

    /// An introductory month at an unknown price, then a renewal at 9.99 the snapshot names; the
    /// Orders API's answer about the first order comes ten days after the renewal.
    static let introFacts: [Fact] = [
        play("p", .active, observed: T0, order: "GPA.p.0", periodType: .intro),
        play("p", .active, expiry: months(2), observed: months(1) + hour, order: "GPA.p.0..0", price: 9_990, periodType: .normal),
        order("p", "GPA.p.0", price: 1_990, observed: months(1) + 10 * day),
    ]

    static func sum(_ deltas: [MetricDelta], _ kind: MetricKind) -> Int64 { deltas.filter { $0.kind == kind }.map(\.value).reduce(0, +) }

    @Test func anIntroductoryOrderCountsItsOrdersAPIPrice() {
        let priced = metricContribution(facts: Self.introFacts, policy: playPolicy)
        let unpriced = metricContribution(facts: Array(Self.introFacts.prefix(2)), policy: playPolicy)
        #expect(Self.sum(priced.deltas, .revenue) == 1_990 + 9_990)
        #expect(Self.sum(unpriced.deltas, .revenue) == 9_990)
        // The introductory month's MRR counts from its first day.
        let firstDay = priced.deltas.filter { $0.kind == .mrr && $0.day == metricDay(T0) }
        #expect(firstDay.map(\.value) == [1_990])
        #expect(unpriced.deltas.filter { $0.kind == .mrr && $0.day == metricDay(T0) }.isEmpty)
    }

    @Test func theFactsInAnyOrderAndTwiceGiveOneCount() {
        let expected = metricContribution(facts: Self.introFacts, policy: playPolicy)
        let again = Self.order("p", "GPA.p.0", price: 1_990, observed: months(2))
        for facts in [Self.introFacts.reversed(), [Self.introFacts[2], Self.introFacts[0], Self.introFacts[1]], Self.introFacts + [again]] {
            #expect(metricContribution(facts: Array(facts), policy: playPolicy) == expected)
        }
    }

    /// The store recomputes a customer's rollups from the new fact's date on (``metricContribution``
    /// reusing the stored days before): the order's fact is dated by its purchase, so the
    /// introductory month's days, long past when the answer came, are recomputed too.
    @Test func aRollupRecomputedFromTheFactsDateEqualsAFreshOne() {
        let before = metricContribution(facts: Array(Self.introFacts.prefix(2)), policy: playPolicy)
        let from = metricDay(Self.introFacts[2].date)
        let incremental = metricContribution(
            facts: Self.introFacts, policy: playPolicy, reusing: (before.deltas, from), reusingCharts: before.charts)
        let fresh = metricContribution(facts: Self.introFacts, policy: playPolicy)
        #expect(incremental.deltas == fresh.deltas)
        #expect(incremental.charts == fresh.charts)
    }

    /// Five coins at 5.00 USD, two refunded by quantity, then the rest in full.
    @Test func refundsByQuantityTakeBackTheirShare() {
        let bought = playProduct("c", product: "play.coins", quantity: 5, observed: T0)
        let priced = Self.order("c", "GPA.c", price: 5_000, observed: T0 + hour)
        let partly = Fact.playProduct(
            PlayProductFact(
                purchaseToken: "c", packageName: "com.example.app", productId: "play.coins", orderId: "GPA.c", purchaseState: 0, quantity: 5,
                purchaseTime: T0, observedAt: T0 + day, refundableQuantity: 3))
        let partial = Fact.playVoided(
            PlayVoidedPurchaseFact(purchaseToken: "c", orderId: "GPA.c", productType: 2, refundType: 2, voidedTime: T0 + day))
        func charts(_ facts: [Fact]) -> [ChartKind: Int64] {
            var out: [ChartKind: Int64] = [:]
            for d in metricContribution(facts: facts, policy: playPolicy).charts { out[d.kind, default: 0] += d.value }
            return out
        }
        let kept = charts([bought, priced, partly, partial])
        #expect(kept[.revenue] == 5_000)
        #expect(kept[.refundAmount] == 2_000)
        #expect(kept[.customerRevenue] == 3_000)
        #expect(kept[.refunds] == nil, "a refund by quantity leaves the purchase unrefunded")
        let full = charts([bought, priced, partly, partial, voided("c", order: "GPA.c", at: T0 + 2 * day, productType: 2)])
        #expect(full[.refundAmount] == 5_000)
        #expect(full[.refunds] == 1)
        #expect(full[.customerRevenue] == nil)
        #expect(charts([bought, partly, partial])[.revenue] == nil, "no price without the Orders API's answer")
    }

    @Test func partialAmountsAddUpToTheRefundedShare() {
        // Seven units: two refunded, then one more.
        let snapshots = [7, 5, 4].enumerated().map { index, refundable in
            PlayProductFact(
                purchaseToken: "c", packageName: "com.example.app", productId: "play.coins", orderId: "GPA.c", purchaseState: 0,
                quantity: 7, purchaseTime: T0, observedAt: T0 + Int64(index) * day, refundableQuantity: refundable)
        }
        let refunds = PlayProductRefunds(snapshots: snapshots, voids: [])
        let amounts = refunds.partialRefundAmounts(ofPrice: 10_000)
        #expect(amounts.map(\.amount) == [2_857, 1_428])
        #expect(amounts.map(\.amount).reduce(0, +) == refunds.refundedAmount(ofPrice: 10_000))
    }
}
