import Testing

@testable import Entitlements

/// The charts from one customer's contribution (docs/charts.md): a free trial that converts, a
/// renewal refunded three days later, a second subscription in another currency and storefront
/// upgraded to a dearer product, each chart checked against the engine's answers or the hand count.
@Suite struct ChartTests {
    static let start = T0 + 7 * day
    static let renewed = months(1, after: start)
    static let facts: [Fact] = [
        tx("t0", product: "magazine", purchase: T0, expires: start, offer: .introductory, discount: .freeTrial, price: 0),
        tx("t1", product: "magazine", purchase: start, expires: renewed),
        tx("t2", product: "magazine", purchase: renewed, expires: months(2, after: start)),
        tx("t2", product: "magazine", purchase: renewed, expires: months(2, after: start), signed: renewed + 3 * day, revoked: renewed + 3 * day),
        // Another subscription: EUR, from Germany, basic then upgraded to the dearer monthly.plus.
        euro("e1", product: "basic.monthly", purchase: T0 + 2 * day, expires: months(1, after: T0 + 2 * day), price: 4_990),
        euro("e1", product: "basic.monthly", purchase: T0 + 2 * day, expires: months(1, after: T0 + 2 * day), price: 4_990,
             signed: T0 + 10 * day, revoked: T0 + 10 * day, upgraded: true),
        euro("e2", product: "monthly.plus", purchase: T0 + 10 * day, expires: months(1, after: T0 + 10 * day), price: 14_990),
    ]

    static func euro(
        _ id: String, product: String, purchase: Int64, expires: Int64, price: Int64, signed: Int64? = nil, revoked: Int64? = nil,
        upgraded: Bool = false
    ) -> Fact {
        guard case .transaction(var t) = tx(id, otid: "o2", product: product, purchase: purchase, expires: expires, signed: signed,
                                            revoked: revoked, upgraded: upgraded, price: price) else { fatalError() }
        t.currency = "EUR"
        t.storefront = "DEU"
        return .transaction(t)
    }

    static let first = metricDay(T0)
    static let last = first + 120
    static let rows = ChartRows(days: metricContribution(facts: facts, policy: policy).charts)

    static func points(_ chart: ChartID, interval: ChartInterval = .day, segment: ChartSegmentation? = nil) -> [ChartPoint] {
        chartPoints(ChartRequest(chart: chart, from: first, to: last, interval: interval, segment: segment, today: last), rows: rows)
    }

    static func value(_ points: [ChartPoint], _ series: String, on day: Int64, segment: String? = nil, currency: String? = nil) -> Double {
        points.filter { $0.series == series && $0.date == day && $0.segment == segment && $0.currency == currency && !$0.converted }
            .reduce(0) { $0 + $1.value }
    }

    /// Actives, trials and MRR equal the engine's answer at the end of every day.
    @Test func stocksEqualTheAnswersEveryDay() {
        let actives = Self.points(.actives, segment: .product), trials = Self.points(.trials), mrr = Self.points(.mrr)
        for day in Self.first...Self.last {
            let end = (day + 1) * Time.day - 1
            let answer = state(Self.facts.filter { $0.date <= end }, at: end)
            var paid: [String: Double] = [:], trial = 0.0, monthly: [String: Double] = [:]
            for group in answer.subscriptionGroups {
                guard let grant = group.current, grant.status.grantsAccess else { continue }
                if grant.periodType == .trial { trial += 1; continue }
                paid[grant.productId, default: 0] += 1
                let t = Self.facts.compactMap { fact -> TransactionFact? in
                    if case .transaction(let t) = fact, t.transactionId == grant.transactionId { return t }
                    return nil
                }.last!
                monthly[t.currency!, default: 0] += Double(monthlyPrice(t)) / 1000
            }
            for product in ["magazine", "basic.monthly", "monthly.plus"] {
                #expect(Self.value(actives, "actives", on: day, segment: product) == paid[product] ?? 0, "day \(day - Self.first) \(product)")
            }
            #expect(Self.value(trials, "trials", on: day) == trial)
            for currency in ["USD", "EUR"] {
                #expect(Self.value(mrr, "mrr", on: day, currency: currency) == monthly[currency] ?? 0, "day \(day - Self.first) \(currency)")
            }
        }
    }

    @Test func movementsAndCohorts() {
        let startDay = metricDay(Self.start), refundDay = metricDay(Self.renewed + 3 * day), upgradeDay = metricDay(T0 + 10 * day)
        let moves = Self.points(.activesMovement, segment: .product)
        #expect(Self.value(moves, "new", on: startDay, segment: "magazine") == 1)  // the trial converted: its first paid period
        #expect(Self.value(moves, "churned", on: refundDay, segment: "magazine") == -1)
        let mrr = Self.points(.mrrMovement)
        #expect(Self.value(mrr, "new", on: startDay, currency: "USD") == 9.99)
        #expect(Self.value(mrr, "expansion", on: upgradeDay, currency: "EUR") == 10)  // 4.99 → 14.99
        #expect(Self.value(mrr, "churned", on: refundDay, currency: "USD") == -9.99)
        let trials = Self.points(.trialsMovement)
        #expect(Self.value(trials, "new", on: Self.first) == 1)
        #expect(Self.value(trials, "converted", on: startDay) == -1)

        let conversion = Self.points(.trialConversionRate)
        #expect(Self.value(conversion, "trials", on: Self.first) == 1 && Self.value(conversion, "rate", on: Self.first) == 1)
        let revenue = Self.points(.revenue)
        #expect(Self.value(revenue, "gross", on: metricDay(Self.renewed), currency: "USD") == 9.99)
        #expect(Self.value(revenue, "proceeds", on: metricDay(Self.renewed), currency: "USD") == 6.993)
        #expect(Self.value(revenue, "refunds", on: refundDay, currency: "USD") == 9.99)
        #expect(Self.value(revenue, "net", on: refundDay, currency: "USD") == -9.99)
        // The upgraded transaction's revocation is no refund.
        #expect(!revenue.contains { $0.series == "refunds" && $0.currency == "EUR" })
        let refunds = Self.points(.refundRate)
        #expect(Self.value(refunds, "rate", on: metricDay(Self.renewed)) == 1)
        #expect(Self.value(refunds, "rate", on: startDay) == 0)

        // One customer, first seen on T0's day, paying: realized value is what was kept, 9.99 USD
        // and 4.99 + 14.99 EUR.
        let ltv = Self.points(.ltvPerPayingCustomer)
        #expect(Self.value(ltv, "ltv", on: Self.first, currency: "USD") == 9.99)
        #expect(Self.value(ltv, "ltv", on: Self.first, currency: "EUR") == 19.98)
        let paying = Self.points(.conversionToPaying)
        #expect(Self.value(paying, "rate", on: Self.first) == 1)

        // Retention by start month (the first period starts at `from`): the USD subscription's
        // only kept period is its first month (the renewal was refunded); the EUR one, upgraded
        // from basic, is still covered a month after its start.
        let retention = Self.points(.subscriptionRetention, interval: .month)
        #expect(Self.value(retention, "subscriptions", on: Self.first) == 2)
        #expect(Self.value(retention, "month_0", on: Self.first) == 1)
        #expect(Self.value(retention, "month_1", on: Self.first) == 0.5)
        #expect(Self.value(retention, "month_2", on: Self.first) == 0)
    }

    @Test func segmentsSplitAndConvertedMoneySums() {
        let points = chartPoints(
            ChartRequest(chart: .mrr, from: Self.first, to: Self.last, interval: .week, segment: .storefront, today: Self.last,
                         reportingCurrency: "USD", rates: ["USD": 1, "EUR": 1.1]),
            rows: Self.rows)
        let upgradeWeek = ChartInterval.week.start(of: metricDay(T0 + 10 * day))
        let converted = points.filter { $0.converted && $0.date == upgradeWeek }
        #expect(Set(converted.map(\.segment)) == ["DEU", ""])
        #expect(converted.first { $0.segment == "DEU" }?.value == 16.49)  // 14.99 EUR × 1.1
        #expect(converted.first { $0.segment == "" }?.value == 9.99)  // tx() sets no storefront
    }

    /// A new fact re-evaluates only from its day: the chart rows equal those computed from scratch.
    @Test func incrementalChartRowsEqualAFullComputation() {
        for cut in 1..<Self.facts.count {
            let before = metricContribution(facts: Array(Self.facts.prefix(cut)), policy: policy)
            let all = Array(Self.facts.prefix(cut + 1))
            let from = all.suffix(1).map { metricDay($0.date) }.min()!
            let full = metricContribution(facts: all, policy: policy)
            let incremental = metricContribution(facts: all, policy: policy, reusing: (before.deltas, from), reusingCharts: before.charts)
            #expect(incremental.charts == full.charts, "after fact \(cut)")
        }
    }

    @Test func weeksStartOnMondayAndMonthsOnTheFirst() {
        let monday = Time.daysFromCivil(year: 2026, month: 1, day: 12)
        for offset in Int64(0)..<7 { #expect(ChartInterval.week.start(of: monday + offset) == monday) }
        #expect(ChartInterval.month.start(of: Time.daysFromCivil(year: 2026, month: 2, day: 28)) == Time.daysFromCivil(year: 2026, month: 2, day: 1))
    }
}
