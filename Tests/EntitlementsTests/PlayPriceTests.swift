import Entitlements
import Testing

/// Priced Play subscriptions in the rollups: the same subscription bought on the App Store and on
/// Google Play at the same price gives the same MRR, revenue, MRR movement and refunds.
@Suite struct PlayPriceTests {
    /// Two paid months from T0 at 9.99 USD, then no renewal; the second month refunded two days in when `refunded`.
    static func appleFacts(refunded: Bool) -> [Fact] {
        let refund = refunded ? months(1) + 2 * day : nil
        return [
            tx("a0", otid: "a", purchase: T0, expires: months(1)),
            tx("a1", otid: "a", purchase: months(1), expires: months(2), signed: months(1) + hour),
        ] + (refund.map { [tx("a1", otid: "a", purchase: months(1), expires: months(2), signed: $0, revoked: $0)] } ?? [])
    }

    static func playFacts(refunded: Bool) -> [Fact] {
        [
            play("p", .active, observed: T0, order: "GPA.p.0", price: 9_990, periodType: .normal),
            play("p", .active, expiry: months(2), observed: months(1) + hour, order: "GPA.p.1", price: 9_990, periodType: .normal),
            play("p", .expired, expiry: months(2), observed: months(2) + hour, autoRenew: false, order: "GPA.p.1",
                                   price: 9_990, periodType: .normal),
        ] + (refunded ? [voided("p", order: "GPA.p.1", at: months(1) + 2 * day)] : [])
    }

    /// Money and stock series, by day and currency (the store and storefront segments aside).
    static func series(_ charts: [ChartDelta], _ kinds: Set<ChartKind>) -> [String: Int64] {
        var out: [String: Int64] = [:]
        for d in charts where kinds.contains(d.kind) { out["\(d.day) \(d.kind.rawValue) \(d.currency) \(d.segment.periodType)", default: 0] += d.value }
        return out
    }

    static let compared: Set<ChartKind> = [
        .mrr, .mrrNew, .mrrReactivated, .mrrExpansion, .mrrContraction, .mrrChurned, .actives, .activesNew, .activesChurned,
        .revenue, .refundAmount, .refunds, .paidTransactions, .customersNew, .customersPaying, .customerRevenue,
    ]

    @Test(arguments: [false, true])
    func samePriceGivesTheSameMoneyAsApple(refunded: Bool) {
        let apple = metricContribution(facts: Self.appleFacts(refunded: refunded), policy: playPolicy)
        let play = metricContribution(facts: Self.playFacts(refunded: refunded), policy: playPolicy)
        func money(_ deltas: [MetricDelta]) -> [MetricDelta] { deltas.filter { [.mrr, .revenue, .refundAmount].contains($0.kind) } }
        #expect(!money(play.deltas).isEmpty)
        #expect(money(play.deltas) == money(apple.deltas))
        #expect(Self.series(play.charts, Self.compared) == Self.series(apple.charts, Self.compared))
        #expect(play.charts.allSatisfy { $0.segment.store == "playStore" })
        let revenue: Int64 = play.deltas.filter { $0.kind == .revenue }.map(\.value).reduce(0, +)
        #expect(revenue == 19_980)
        let refundedAmount: Int64 = play.deltas.filter { $0.kind == .refundAmount }.map(\.value).reduce(0, +)
        #expect(refundedAmount == (refunded ? 9_990 : 0))
    }

    /// Google's service fee: 15 % of every subscription payment (Apple's 30 % in the first year).
    @Test func playProceedsAfterGooglesFee() {
        let play = metricContribution(facts: Self.playFacts(refunded: false), policy: playPolicy)
        let proceeds: Int64 = play.charts.filter { $0.kind == .proceeds }.map(\.value).reduce(0, +)
        let playExpected: Int64 = 2 * (9_990 * 85 / 100)
        #expect(proceeds == playExpected)
        let apple = metricContribution(facts: Self.appleFacts(refunded: false), policy: playPolicy)
        let appleProceeds: Int64 = apple.charts.filter { $0.kind == .proceeds }.map(\.value).reduce(0, +)
        let appleExpected: Int64 = 2 * (9_990 * 70 / 100)
        #expect(appleProceeds == appleExpected)
    }

    /// A free trial is a trial, not paid access: no MRR or revenue until the first paid order.
    @Test func trialThenPaidConverts() {
        let facts: [Fact] = [
            play("p", .active, expiry: T0 + 7 * day, observed: T0, order: "GPA.p", price: 0, periodType: .trial),
            play("p", .active, expiry: months(1, after: T0 + 7 * day), observed: T0 + 7 * day + hour, order: "GPA.p..0",
                                   price: 9_990, periodType: .normal),
        ]
        let c = metricContribution(facts: facts, policy: playPolicy)
        func total(_ kind: MetricKind, through instant: Int64 = .max) -> Int64 {
            c.deltas.filter { $0.kind == kind && $0.day <= metricDay(instant) }.map(\.value).reduce(0, +)
        }
        #expect(total(.activeTrials, through: T0) == 1)
        #expect(total(.activeSubscriptions, through: T0) == 0)
        #expect(total(.mrr, through: T0) == 0)
        #expect(total(.conversions) == 1)
        #expect(total(.mrr, through: T0 + 8 * day) > 0)
        #expect(total(.revenue) == 9_990)
        #expect(c.charts.contains { $0.kind == .trialsConverted && $0.segment.store == "playStore" })
    }

    /// Snapshots without a price (stored before prices were kept) still count, with no money.
    @Test func unpricedSnapshotsAddNoMoney() {
        let facts: [Fact] = [play("p", .active, observed: T0)]
        let c = metricContribution(facts: facts, policy: playPolicy)
        #expect(c.deltas.contains { $0.kind == .activeSubscriptions && $0.value == 1 })
        #expect(!c.deltas.contains { $0.kind == .mrr || $0.kind == .revenue })
    }

    /// An experiment counts a Play customer's revenue as an App Store one's.
    @Test func experimentOutcomeCountsPlayRevenue() {
        let play = ExperimentOutcome(facts: Self.playFacts(refunded: true), environments: [.production], enrolledAt: T0, until: months(3))
        let apple = ExperimentOutcome(facts: Self.appleFacts(refunded: true), environments: [.production], enrolledAt: T0, until: months(3))
        #expect(play.revenue == ["USD": 19_980])
        #expect(play.realizedRevenue == ["USD": 9_990])
        #expect(play == apple)
    }
}
