// Each chart's series from the rollup rows (the definitions are in docs/charts.md).
//
// A daily chart by storefront is tens of thousands of rows and points, so the rows are summed
// into flat arrays rather than dictionaries: each group (segment, currency, month offset) is
// numbered once, the rows are bucketed by period, and a period's points are written from the
// arrays in the groups' order (computed once), so nothing is hashed or sorted per period.

/// A group of rows: a segment's value (nil unsegmented), a currency ("" for counts), an offset.
struct ChartGroup: Hashable, Comparable {
    var segment: String?
    var currency: String
    var offset: Int64

    static func < (a: Self, b: Self) -> Bool { (a.segment ?? "", a.currency, a.offset) < (b.segment ?? "", b.currency, b.offset) }
}

/// The rows of one request, summed period by period into the chart's points.
struct ChartTable {
    /// Where a series' values come from: the period's flows, the stocks' levels at its end, or
    /// their levels at its start.
    enum Source { case flow, level, levelAtStart }

    /// A series of one period: per group, the sum of each kind's value times its sign.
    struct Terms {
        var source: Source
        var parts: [(kind: Int, sign: Int64)]
    }

    let request: ChartRequest
    /// Each period's first and last day.
    let periods: [(start: Int64, end: Int64)]
    /// The chart's series; a row's series is its position here.
    let kinds: [ChartKind]
    /// The groups by number, each one's segment's number, and the segments' values.
    private var groups: [ChartGroup] = []
    private var segmentOf: [Int] = []
    private var segments: [String?] = []
    /// Groups holding a stock row, in order.
    private var stockGroups: [Int] = []
    /// Each group's position in the groups' order.
    private var rank: [Int] = []
    /// The range's rows as (series, group, value), bucketed by period: `bucket[p]..<bucket[p + 1]`.
    private var rows: [(kind: Int, group: Int, value: Int64)] = []
    private var bucket: [Int] = []
    /// Stock levels (series × groups): the running level, and the level at the period's start.
    private var level: [Int64] = []
    private var startLevel: [Int64] = []
    /// The period's flows (series × groups), the groups any of its rows touched, in order, and
    /// which series had a row.
    private var flow: [Int64] = []
    private var touched: [Int] = []
    private var isTouched: [Bool] = []
    private var hasRows: [Bool] = []
    /// Per-segment sums of a rate's numerator and denominator (or a per-head count), and of
    /// converted money; each reset after use.
    private var numerators: [Int64] = []
    private var denominators: [Int64] = []
    private var segmentMoney: [Double] = []
    var out: [ChartPoint] = []

    init(request: ChartRequest, rows input: ChartRows) {
        self.request = request
        var periods: [(start: Int64, end: Int64)] = []
        var day = request.from
        while day <= request.to {
            let next = request.interval == .day ? day + 1 : nextStart(after: day, request.interval)
            periods.append((day, min(next - 1, request.to)))
            day = next
        }
        self.periods = periods
        kinds = request.chart.kinds

        var periodOfDay = [Int](repeating: 0, count: Int(max(0, request.to - request.from + 1)))
        for (index, period) in periods.enumerated() {
            for day in period.start...period.end { periodOfDay[Int(day - request.from)] = index }
        }
        var numbers: [ChartGroup: Int] = [:]
        var segmentNumbers: [String?: Int] = [:]
        var groups: [ChartGroup] = [], segmentOf: [Int] = [], segments: [String?] = [], isStockGroup: [Bool] = []
        func number(_ row: ChartDelta, stock: Bool) -> Int {
            let group = ChartGroup(segment: request.segment.map { $0.value(row) }, currency: row.currency, offset: row.offset)
            let found: Int
            if let known = numbers[group] {
                found = known
            } else {
                found = groups.count
                numbers[group] = found
                groups.append(group)
                isStockGroup.append(false)
                if let segment = segmentNumbers[group.segment] {
                    segmentOf.append(segment)
                } else {
                    segmentNumbers[group.segment] = segments.count
                    segmentOf.append(segments.count)
                    segments.append(group.segment)
                }
            }
            if stock { isStockGroup[found] = true }
            return found
        }

        var opening: [(kind: Int, group: Int, value: Int64)] = []
        for row in input.opening where row.kind.isStock {
            guard let kind = kinds.firstIndex(of: row.kind) else { continue }
            opening.append((kind, number(row, stock: true), row.value))
        }
        var dated: [(period: Int, kind: Int, group: Int, value: Int64)] = []
        dated.reserveCapacity(input.days.count)
        for row in input.days where row.day >= request.from && row.day <= request.to {
            guard let kind = kinds.firstIndex(of: row.kind) else { continue }
            dated.append((periodOfDay[Int(row.day - request.from)], kind, number(row, stock: row.kind.isStock), row.value))
        }
        // Bucketed by period (a counting sort: the order within a period does not matter to sums).
        var bucket = [Int](repeating: 0, count: periods.count + 1)
        for row in dated { bucket[row.period + 1] += 1 }
        for index in periods.indices { bucket[index + 1] += bucket[index] }
        var next = bucket
        rows = Array(repeating: (0, 0, 0), count: dated.count)
        for row in dated {
            rows[next[row.period]] = (row.kind, row.group, row.value)
            next[row.period] += 1
        }
        self.bucket = bucket
        self.groups = groups
        self.segmentOf = segmentOf
        self.segments = segments

        let order = groups.indices.sorted { groups[$0] < groups[$1] }
        rank = [Int](repeating: 0, count: groups.count)
        for (position, group) in order.enumerated() { rank[group] = position }
        stockGroups = order.filter { isStockGroup[$0] }
        let cells = kinds.count * groups.count
        level = [Int64](repeating: 0, count: cells)
        for row in opening { level[row.kind * groups.count + row.group] += row.value }
        flow = [Int64](repeating: 0, count: cells)
        isTouched = [Bool](repeating: false, count: groups.count)
        hasRows = [Bool](repeating: false, count: kinds.count)
        denominators = [Int64](repeating: 0, count: segments.count)
        numerators = denominators
        segmentMoney = [Double](repeating: 0, count: segments.count)
    }

    mutating func points() -> [ChartPoint] {
        let keepsStart = request.chart == .churn
        for index in periods.indices {
            if keepsStart { startLevel = level }
            for row in rows[bucket[index]..<bucket[index + 1]] {
                let cell = row.kind * groups.count + row.group
                if kinds[row.kind].isStock {
                    level[cell] += row.value
                } else {
                    flow[cell] += row.value
                    hasRows[row.kind] = true
                    if !isTouched[row.group] {
                        isTouched[row.group] = true
                        touched.append(row.group)
                    }
                }
            }
            let rank = self.rank
            touched.sort { rank[$0] < rank[$1] }
            add(index)
            for group in touched {
                isTouched[group] = false
                for kind in kinds.indices { flow[kind * groups.count + group] = 0 }
            }
            touched.removeAll(keepingCapacity: true)
            for kind in kinds.indices { hasRows[kind] = false }
        }
        return out
    }

    // MARK: Series

    func terms(_ source: Source, _ parts: (ChartKind, Int64)...) -> Terms {
        Terms(source: source, parts: parts.map { (kinds.firstIndex(of: $0.0)!, $0.1) })
    }

    func flows(_ kind: ChartKind) -> Terms { terms(.flow, (kind, 1)) }

    func levels(_ kind: ChartKind) -> Terms { terms(.level, (kind, 1)) }

    /// The groups a series' values can be non-zero for, in order.
    func groupsOf(_ terms: Terms) -> [Int] { terms.source == .flow ? touched : stockGroups }

    func value(_ terms: Terms, _ group: Int) -> Int64 {
        var total: Int64 = 0
        for part in terms.parts {
            let cell = part.kind * groups.count + group
            let value = switch terms.source {
            case .flow: flow[cell]
            case .level: level[cell]
            case .levelAtStart: startLevel[cell]
            }
            total += part.sign * value
        }
        return total
    }

    func point(_ index: Int, _ series: String, _ group: Int, currency: String? = nil, converted: Bool = false, _ value: Double) -> ChartPoint {
        ChartPoint(date: periods[index].start, series: series, segment: segments[segmentOf[group]], currency: currency, converted: converted,
                   value: value)
    }

    /// Counts per group (currency dropped), as a series.
    mutating func count(_ index: Int, _ series: String, _ terms: Terms, sign: Int64 = 1) {
        for group in groupsOf(terms) {
            let value = value(terms, group)
            if value != 0 { out.append(point(index, series, group, Double(sign * value))) }
        }
    }

    /// Money per group and currency (milli-units in, units out), then converted per segment; with
    /// `perHead`, each segment's money divided by its count of `perHead` (groups differing only by
    /// offset summed), and left out where that count is not above zero.
    mutating func money(_ index: Int, _ series: String, _ terms: Terms, times factor: Double = 1, perHead heads: Terms? = nil) {
        if let heads { addBySegment(heads, numerator: false) }
        var convertedSegments: [Int] = []
        let list = groupsOf(terms)
        var position = 0
        while position < list.count {
            let group = list[position], segment = segmentOf[group]
            var amount: Double
            if heads != nil {
                let count = denominators[segment]
                // Groups of one segment and currency are adjacent in order: one value for them all.
                amount = 0
                while position < list.count, segmentOf[list[position]] == segment, groups[list[position]].currency == groups[group].currency {
                    if count > 0 { amount += Double(value(terms, list[position])) / Double(count) }
                    position += 1
                }
                if count <= 0 { continue }
            } else {
                amount = Double(value(terms, group)) * factor
                position += 1
            }
            guard amount != 0 else { continue }
            let units = amount / 1000
            let currency = groups[group].currency
            out.append(point(index, series, group, currency: currency, units))
            if let rate = request.rates[currency] {
                if convertedSegments.last != segment {
                    convertedSegments.append(segment)
                    segmentMoney[segment] = 0
                }
                segmentMoney[segment] += units * rate
            }
        }
        if let heads { clear(heads, numerator: false) }
        guard let reporting = request.reportingCurrency else { return }
        for segment in convertedSegments {
            out.append(ChartPoint(date: periods[index].start, series: series, segment: segments[segment], currency: reporting, converted: true,
                                  value: (segmentMoney[segment] * 100).rounded() / 100))
        }
    }

    /// `numerator / denominator` per segment (currency and offset dropped), where the denominator is not zero.
    mutating func rate(_ index: Int, _ series: String, _ numerator: Terms, _ denominator: Terms) {
        addBySegment(numerator, numerator: true)
        addBySegment(denominator, numerator: false)
        emitRates(index, series, denominator)
        clear(numerator, numerator: true)
        clear(denominator, numerator: false)
    }

    /// The rates of `numerators / denominators` for the segments of `denominator`'s groups, in order.
    private mutating func emitRates(_ index: Int, _ series: String, _ denominator: Terms) {
        var last = -1
        for group in groupsOf(denominator) where segmentOf[group] != last {
            let segment = segmentOf[group]
            last = segment
            let total = denominators[segment]
            if total != 0 {
                out.append(ChartPoint(date: periods[index].start, series: series, segment: segments[segment],
                                      value: Double(numerators[segment]) / Double(total)))
            }
        }
    }

    /// Adds the series' values to their segments' sums: the numerators' or the denominators'.
    private mutating func addBySegment(_ terms: Terms, numerator: Bool) {
        for group in groupsOf(terms) {
            let value = value(terms, group)
            if numerator { numerators[segmentOf[group]] += value } else { denominators[segmentOf[group]] += value }
        }
    }

    private mutating func clear(_ terms: Terms, numerator: Bool) {
        for group in groupsOf(terms) {
            if numerator { numerators[segmentOf[group]] = 0 } else { denominators[segmentOf[group]] = 0 }
        }
    }

    mutating func add(_ i: Int) {
        switch request.chart {
        case .revenue:
            money(i, "gross", flows(.revenue))
            money(i, "proceeds", flows(.proceeds))
            money(i, "refunds", flows(.refundAmount))
            money(i, "net", terms(.flow, (.revenue, 1), (.refundAmount, -1)))
        case .mrr: money(i, "mrr", levels(.mrr))
        case .arr: money(i, "arr", levels(.mrr), times: 12)
        case .mrrMovement:
            let parts: [(String, ChartKind)] = [("new", .mrrNew), ("reactivated", .mrrReactivated), ("expansion", .mrrExpansion),
                                                ("contraction", .mrrContraction), ("churned", .mrrChurned)]
            for (name, kind) in parts { money(i, name, flows(kind)) }
            money(i, "net", Terms(source: .flow, parts: parts.map { (kinds.firstIndex(of: $0.1)!, 1) }))
        case .actives: count(i, "actives", levels(.actives))
        case .activesMovement:
            count(i, "new", flows(.activesNew))
            count(i, "reactivated", flows(.activesReactivated))
            count(i, "churned", flows(.activesChurned), sign: -1)
            count(i, "net", terms(.flow, (.activesNew, 1), (.activesReactivated, 1), (.activesChurned, -1)))
        case .customersNew: count(i, "customers", flows(.customersNew))
        case .trials: count(i, "trials", levels(.trials))
        case .trialsMovement:
            count(i, "new", flows(.trialsNew))
            count(i, "converted", flows(.trialsConverted), sign: -1)
            count(i, "expired", flows(.trialsExpired), sign: -1)
            count(i, "net", terms(.flow, (.trialsNew, 1), (.trialsConverted, -1), (.trialsExpired, -1)))
        case .trialConversionRate: cohort(i, "trials", .trialStarts, "converted", .trialConversions)
        case .conversionToPaying: cohort(i, "customers", .customersNew, "paying", .customersPaying)
        case .refundRate: cohort(i, "transactions", .paidTransactions, "refunded", .refundedTransactions)
        case .subscriptionRetention: retention(i)
        case .ltvPerCustomer:
            count(i, "customers", flows(.customersNew))
            money(i, "ltv", flows(.customerRevenue), perHead: flows(.customersNew))
        case .ltvPerPayingCustomer:
            count(i, "payingCustomers", flows(.customersPaying))
            money(i, "ltv", flows(.customerRevenue), perHead: flows(.customersPaying))
        case .churn:
            let base = terms(.levelAtStart, (.actives, 1)), gone = flows(.activesChurned)
            count(i, "activesAtStart", base)
            count(i, "churned", gone)
            rate(i, "rate", gone, base)
        }
    }

    /// A cohort's size, how many of it reached the outcome, and the share.
    mutating func cohort(_ i: Int, _ sizeName: String, _ size: ChartKind, _ outcomeName: String, _ outcome: ChartKind) {
        count(i, sizeName, flows(size))
        count(i, outcomeName, flows(outcome))
        rate(i, "rate", flows(outcome), flows(size))
    }

    /// The names of the retention series, made once.
    static let monthNames = (0...maxRetentionMonths).map { "month_\($0)" }

    /// The cohort's size and, for each month k its every subscription has reached by today, the
    /// share still paid k months after its start.
    mutating func retention(_ i: Int) {
        let starts = flows(.subscriptionStarts), retained = flows(.subscriptionRetained)
        count(i, "subscriptions", starts)
        guard hasRows[starts.parts[0].kind] else { return }
        addBySegment(starts, numerator: false)
        // The retained groups by offset: each month reads only its own.
        let byOffset = touched.filter { value(retained, $0) != 0 }.sorted { groups[$0].offset < groups[$1].offset }
        var first = 0
        for k in 0...maxRetentionMonths {
            let reached = ISODuration(months: Int(k)).added(to: periods[i].end * Time.day) / Time.day
            guard reached <= request.today else { break }
            while first < byOffset.count, groups[byOffset[first]].offset < k { first += 1 }
            var end = first
            while end < byOffset.count, groups[byOffset[end]].offset == k {
                numerators[segmentOf[byOffset[end]]] += value(retained, byOffset[end])
                end += 1
            }
            emitRates(i, Self.monthNames[Int(k)], starts)
            for group in byOffset[first..<end] { numerators[segmentOf[group]] = 0 }
            first = end
        }
        clear(starts, numerator: false)
    }
}

/// The first day of the interval after the one `day` falls in.
private func nextStart(after day: Int64, _ interval: ChartInterval) -> Int64 {
    switch interval {
    case .day: day + 1
    case .week: interval.start(of: day) + 7
    case .month: ISODuration(months: 1).added(to: interval.start(of: day) * Time.day) / Time.day
    }
}
