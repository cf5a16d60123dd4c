@testable import Entitlements

/// The charts as first written, with a dictionary per period, series and group: the reference the
/// flat-array ``ChartTable`` is held to, point for point.
struct ReferenceChartTable {
    let request: ChartRequest
    /// Each period's first and last day.
    let periods: [(start: Int64, end: Int64)]
    /// Flow sums per period index, kind and group.
    var flows: [Int: [ChartKind: [ChartGroup: Int64]]] = [:]
    /// Stock levels at the end of each period, and at the start of the first.
    var levels: [Int: [ChartKind: [ChartGroup: Int64]]] = [:]
    var opening: [ChartKind: [ChartGroup: Int64]] = [:]
    var out: [ChartPoint] = []

    init(request: ChartRequest, rows: ChartRows) {
        self.request = request
        var periods: [(start: Int64, end: Int64)] = []
        var day = request.from
        while day <= request.to {
            let next = request.interval == .day ? day + 1 : referenceNextStart(after: day, request.interval)
            periods.append((day, min(next - 1, request.to)))
            day = next
        }
        self.periods = periods
        func group(_ row: ChartDelta) -> ChartGroup {
            ChartGroup(segment: request.segment.map { $0.value(row) }, currency: row.currency, offset: row.offset)
        }
        var level: [ChartKind: [ChartGroup: Int64]] = [:]
        for row in rows.opening where row.kind.isStock { level[row.kind, default: [:]][group(row), default: 0] += row.value }
        opening = level
        var byDay: [Int64: [ChartDelta]] = [:]
        for row in rows.days where row.day >= request.from && row.day <= request.to { byDay[row.day, default: []].append(row) }
        for (index, period) in periods.enumerated() {
            for day in period.start...period.end {
                for row in byDay[day] ?? [] {
                    if row.kind.isStock {
                        level[row.kind, default: [:]][group(row), default: 0] += row.value
                    } else {
                        flows[index, default: [:]][row.kind, default: [:]][group(row), default: 0] += row.value
                    }
                }
            }
            levels[index] = level
        }
    }

    /// The stock's level at the start of period `index`.
    func levelAtStart(_ kind: ChartKind, _ index: Int) -> [ChartGroup: Int64] {
        index == 0 ? opening[kind] ?? [:] : levels[index - 1]?[kind] ?? [:]
    }

    func flow(_ kind: ChartKind, _ index: Int) -> [ChartGroup: Int64] { flows[index]?[kind] ?? [:] }

    func level(_ kind: ChartKind, _ index: Int) -> [ChartGroup: Int64] { levels[index]?[kind] ?? [:] }

    mutating func points() -> [ChartPoint] {
        for index in periods.indices { add(index) }
        return out
    }

    /// Counts per group (currency dropped), as a series.
    mutating func count(_ index: Int, _ series: String, _ values: [ChartGroup: Int64], sign: Int64 = 1) {
        for (group, value) in values.sorted(by: { $0.key < $1.key }) where value != 0 {
            out.append(ChartPoint(date: periods[index].start, series: series, segment: group.segment, value: Double(sign * value)))
        }
    }

    /// Money per group and currency (milli-units in, units out), then converted per segment.
    mutating func money(_ index: Int, _ series: String, _ values: [ChartGroup: Double]) {
        var converted: [String?: Double] = [:]
        for (group, value) in values.sorted(by: { $0.key < $1.key }) where value != 0 {
            let units = value / 1000
            out.append(ChartPoint(date: periods[index].start, series: series, segment: group.segment, currency: group.currency, value: units))
            if let rate = request.rates[group.currency] { converted[group.segment, default: 0] += units * rate }
        }
        guard let reporting = request.reportingCurrency else { return }
        for (segment, value) in converted.sorted(by: { ($0.key ?? "") < ($1.key ?? "") }) {
            out.append(ChartPoint(date: periods[index].start, series: series, segment: segment, currency: reporting, converted: true,
                                  value: (value * 100).rounded() / 100))
        }
    }

    /// `numerator / denominator` per segment (currency and offset dropped), where the denominator is not zero.
    mutating func rate(_ index: Int, _ series: String, _ numerator: [ChartGroup: Int64], _ denominator: [ChartGroup: Int64]) {
        let top = bySegment(numerator), bottom = bySegment(denominator)
        for (segment, total) in bottom.sorted(by: { ($0.key ?? "") < ($1.key ?? "") }) where total != 0 {
            out.append(ChartPoint(date: periods[index].start, series: series, segment: segment, value: Double(top[segment] ?? 0) / Double(total)))
        }
    }

    func bySegment(_ values: [ChartGroup: Int64]) -> [String?: Int64] {
        var result: [String?: Int64] = [:]
        for (group, value) in values { result[group.segment, default: 0] += value }
        return result
    }

    func double(_ values: [ChartGroup: Int64], times factor: Double = 1) -> [ChartGroup: Double] {
        values.mapValues { Double($0) * factor }
    }

    /// Money per currency divided by a count per segment.
    func perHead(_ money: [ChartGroup: Int64], _ heads: [ChartGroup: Int64]) -> [ChartGroup: Double] {
        let count = bySegment(heads)
        var result: [ChartGroup: Double] = [:]
        for (group, value) in money {
            guard let n = count[group.segment], n > 0 else { continue }
            result[ChartGroup(segment: group.segment, currency: group.currency, offset: 0), default: 0] += Double(value) / Double(n)
        }
        return result
    }

    func sum(_ parts: [[ChartGroup: Int64]]) -> [ChartGroup: Int64] {
        parts.reduce(into: [:]) { total, part in total.merge(part, uniquingKeysWith: +) }
    }

    mutating func add(_ i: Int) {
        switch request.chart {
        case .revenue:
            let gross = flow(.revenue, i), refunds = flow(.refundAmount, i)
            money(i, "gross", double(gross))
            money(i, "proceeds", double(flow(.proceeds, i)))
            money(i, "refunds", double(refunds))
            money(i, "net", double(sum([gross, refunds.mapValues { -$0 }])))
        case .mrr: money(i, "mrr", double(level(.mrr, i)))
        case .arr: money(i, "arr", double(level(.mrr, i), times: 12))
        case .mrrMovement:
            let parts: [(String, ChartKind)] = [("new", .mrrNew), ("reactivated", .mrrReactivated), ("expansion", .mrrExpansion),
                                                ("contraction", .mrrContraction), ("churned", .mrrChurned)]
            for (name, kind) in parts { money(i, name, double(flow(kind, i))) }
            money(i, "net", double(sum(parts.map { flow($0.1, i) })))
        case .actives: count(i, "actives", level(.actives, i))
        case .activesMovement:
            let new = flow(.activesNew, i), back = flow(.activesReactivated, i), gone = flow(.activesChurned, i)
            count(i, "new", new)
            count(i, "reactivated", back)
            count(i, "churned", gone, sign: -1)
            count(i, "net", sum([new, back, gone.mapValues { -$0 }]))
        case .customersNew: count(i, "customers", flow(.customersNew, i))
        case .trials: count(i, "trials", level(.trials, i))
        case .trialsMovement:
            let new = flow(.trialsNew, i), converted = flow(.trialsConverted, i), expired = flow(.trialsExpired, i)
            count(i, "new", new)
            count(i, "converted", converted, sign: -1)
            count(i, "expired", expired, sign: -1)
            count(i, "net", sum([new, converted.mapValues { -$0 }, expired.mapValues { -$0 }]))
        case .trialConversionRate: cohort(i, "trials", .trialStarts, "converted", .trialConversions)
        case .conversionToPaying: cohort(i, "customers", .customersNew, "paying", .customersPaying)
        case .refundRate: cohort(i, "transactions", .paidTransactions, "refunded", .refundedTransactions)
        case .subscriptionRetention: retention(i)
        case .ltvPerCustomer:
            count(i, "customers", flow(.customersNew, i))
            money(i, "ltv", perHead(flow(.customerRevenue, i), flow(.customersNew, i)))
        case .ltvPerPayingCustomer:
            count(i, "payingCustomers", flow(.customersPaying, i))
            money(i, "ltv", perHead(flow(.customerRevenue, i), flow(.customersPaying, i)))
        case .churn:
            let base = levelAtStart(.actives, i), gone = flow(.activesChurned, i)
            count(i, "activesAtStart", base)
            count(i, "churned", gone)
            rate(i, "rate", gone, base)
        }
    }

    /// A cohort's size, how many of it reached the outcome, and the share.
    mutating func cohort(_ i: Int, _ sizeName: String, _ size: ChartKind, _ outcomeName: String, _ outcome: ChartKind) {
        count(i, sizeName, flow(size, i))
        count(i, outcomeName, flow(outcome, i))
        rate(i, "rate", flow(outcome, i), flow(size, i))
    }

    /// The cohort's size and, for each month k its every subscription has reached by today, the
    /// share still paid k months after its start.
    mutating func retention(_ i: Int) {
        let starts = flow(.subscriptionStarts, i)
        count(i, "subscriptions", starts)
        let retained = flow(.subscriptionRetained, i)
        guard !starts.isEmpty else { return }
        for k in 0...maxRetentionMonths {
            let reached = ISODuration(months: Int(k)).added(to: periods[i].end * Time.day) / Time.day
            guard reached <= request.today else { break }
            rate(i, "month_\(k)", retained.filter { $0.key.offset == k }, starts)
        }
    }
}

/// The first day of the interval after the one `day` falls in.
private func referenceNextStart(after day: Int64, _ interval: ChartInterval) -> Int64 {
    switch interval {
    case .day: day + 1
    case .week: interval.start(of: day) + 7
    case .month: ISODuration(months: 1).added(to: interval.start(of: day) * Time.day) / Time.day
    }
}
