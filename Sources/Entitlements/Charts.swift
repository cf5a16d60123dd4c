// The charts (docs/charts.md): each a pure function of the segmented daily rollups
// (``ChartDelta``) over a range of days, grouped by day, week or month, optionally by segment.

/// A chart, by the id the Charts API names it with.
public enum ChartID: String, CaseIterable, Sendable {
    case revenue, mrr, arr
    case mrrMovement = "mrr_movement"
    case actives
    case activesMovement = "actives_movement"
    case customersNew = "customers_new"
    case trials
    case trialsMovement = "trials_movement"
    case trialConversionRate = "trial_conversion_rate"
    case conversionToPaying = "conversion_to_paying"
    case subscriptionRetention = "subscription_retention"
    case ltvPerCustomer = "ltv_per_customer"
    case ltvPerPayingCustomer = "ltv_per_paying_customer"
    case churn
    case refundRate = "refund_rate"

    /// The rollup series the chart is computed from (the only ones a read needs).
    public var kinds: [ChartKind] {
        switch self {
        case .revenue: [.revenue, .proceeds, .refundAmount]
        case .mrr, .arr: [.mrr]
        case .mrrMovement: [.mrrNew, .mrrReactivated, .mrrExpansion, .mrrContraction, .mrrChurned]
        case .actives: [.actives]
        case .activesMovement: [.activesNew, .activesReactivated, .activesChurned]
        case .customersNew: [.customersNew]
        case .trials: [.trials]
        case .trialsMovement: [.trialsNew, .trialsConverted, .trialsExpired]
        case .trialConversionRate: [.trialStarts, .trialConversions]
        case .conversionToPaying: [.customersNew, .customersPaying]
        case .subscriptionRetention: [.subscriptionStarts, .subscriptionRetained]
        case .ltvPerCustomer: [.customersNew, .customerRevenue]
        case .ltvPerPayingCustomer: [.customersPaying, .customerRevenue]
        case .churn: [.actives, .activesChurned]
        case .refundRate: [.paidTransactions, .refundedTransactions]
        }
    }

    /// Whether a row of the chart is a cohort (the period things started in) rather than the
    /// period things happened in.
    public var isCohort: Bool {
        switch self {
        case .trialConversionRate, .conversionToPaying, .subscriptionRetention, .ltvPerCustomer, .ltvPerPayingCustomer, .refundRate: true
        default: false
        }
    }
}

/// How a chart's points are grouped in time: weeks run Monday to Sunday, months are calendar
/// months, both UTC and cut at the range's ends.
public enum ChartInterval: String, CaseIterable, Sendable {
    case day, week, month

    /// The first day of the interval `day` falls in.
    public func start(of day: Int64) -> Int64 {
        switch self {
        case .day: day
        // 1970-01-05 (day 4) was a Monday.
        case .week: 4 + Time.floorDiv(day - 4, 7) * 7
        case .month: day - Time.civilFromDays(day).day + 1
        }
    }
}

/// What a chart's values can be split by.
public enum ChartSegmentation: String, CaseIterable, Sendable {
    case store, product, storefront, environment, periodType

    /// The row's value of this segmentation.
    public func value(_ row: ChartDelta) -> String {
        switch self {
        case .store: row.segment.store
        case .product: row.segment.product
        case .storefront: row.segment.storefront
        case .environment: row.environment.rawValue
        case .periodType: row.segment.periodType
        }
    }
}

/// What a chart is asked for.
public struct ChartRequest: Sendable {
    public var chart: ChartID
    /// First and last day (since the epoch, UTC), inclusive.
    public var from: Int64
    public var to: Int64
    public var interval: ChartInterval
    public var segment: ChartSegmentation?
    /// Today (for retention: a month not yet reached by every subscription of a cohort is left out).
    public var today: Int64
    /// The currency money is also converted to, and the rates (units of it per unit of a currency).
    public var reportingCurrency: String?
    public var rates: [String: Double]

    public init(
        chart: ChartID, from: Int64, to: Int64, interval: ChartInterval, segment: ChartSegmentation? = nil, today: Int64,
        reportingCurrency: String? = nil, rates: [String: Double] = [:]
    ) {
        self.chart = chart
        self.from = from
        self.to = to
        self.interval = interval
        self.segment = segment
        self.today = today
        self.reportingCurrency = reportingCurrency
        self.rates = rates
    }
}

/// One value of a chart.
public struct ChartPoint: Sendable, Hashable {
    /// The first day of the point's period (or cohort), since the epoch.
    public var date: Int64
    /// Which of the chart's series (`mrr`, `new`, `rate`, `month_3`, …).
    public var series: String
    /// The segment's value when the chart is segmented.
    public var segment: String?
    /// The currency of a money value.
    public var currency: String?
    /// Whether the money value is the sum of every currency with a rate, in the reporting currency.
    public var converted: Bool
    /// Counts as counts, money in the currency's units, rates as fractions (0.25).
    public var value: Double

    public init(date: Int64, series: String, segment: String? = nil, currency: String? = nil, converted: Bool = false, value: Double) {
        self.date = date
        self.series = series
        self.segment = segment
        self.currency = currency
        self.converted = converted
        self.value = value
    }
}

/// The rollup rows a chart is computed from.
public struct ChartRows: Sendable, Hashable {
    /// Each stock's level at the start of the first day, per segment and currency.
    public var opening: [ChartDelta]
    /// The rows of the range's days.
    public var days: [ChartDelta]

    public init(opening: [ChartDelta] = [], days: [ChartDelta] = []) {
        self.opening = opening
        self.days = days
    }
}

/// The chart's points, by period, series, segment and currency.
public func chartPoints(_ request: ChartRequest, rows: ChartRows) -> [ChartPoint] {
    var table = ChartTable(request: request, rows: rows)
    return table.points()
}

/// Which segment values a chart counts: each dimension set holds the chart to that one value,
/// one left nil counts every value (the environment is held by the environments a read covers).
public struct ChartFilter: Hashable, Sendable {
    /// A ``PurchaseStore`` raw value.
    public var store: String?
    public var product: String?
    /// An ISO 3166-1 alpha-3 country code.
    public var storefront: String?
    /// A ``PeriodType`` raw value.
    public var periodType: String?

    public init(store: String? = nil, product: String? = nil, storefront: String? = nil, periodType: String? = nil) {
        self.store = store
        self.product = product
        self.storefront = storefront
        self.periodType = periodType
    }

    /// The segmentations a filter can hold, with what a value of each is.
    public static let dimensions: [(segmentation: ChartSegmentation, described: String)] = [
        (.store, PurchaseStore.allCases.map(\.rawValue).joined(separator: " or ")),
        (.product, "a product id of 1 to 200 characters"),
        (.storefront, "an ISO 3166-1 alpha-3 country code (three capital letters)"),
        (.periodType, PeriodType.allCases.map(\.rawValue).joined(separator: ", ")),
    ]

    /// Whether every segment counts.
    public var isEmpty: Bool { store == nil && product == nil && storefront == nil && periodType == nil }

    /// The value `segmentation` is held at; nil: every value (always for the environment).
    public func value(_ segmentation: ChartSegmentation) -> String? {
        switch segmentation {
        case .store: store
        case .product: product
        case .storefront: storefront
        case .periodType: periodType
        case .environment: nil
        }
    }

    /// Holds `segmentation` at `value` when it is one of the values that segmentation's rows
    /// carry (``ChartSegment``); false (and nothing held) otherwise.
    public mutating func hold(_ segmentation: ChartSegmentation, at value: String) -> Bool {
        switch segmentation {
        case .store:
            guard PurchaseStore(rawValue: value) != nil else { return false }
            store = value
        case .product:
            guard (1...200).contains(value.count), !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else { return false }
            product = value
        case .storefront:
            guard value.utf8.count == 3, value.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else { return false }
            storefront = value
        case .periodType:
            guard PeriodType(rawValue: value) != nil else { return false }
            periodType = value
        case .environment:
            return false
        }
        return true
    }
}
