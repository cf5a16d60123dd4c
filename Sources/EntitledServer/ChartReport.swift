import EntitledConfig
import Entitlements
import Storage

/// A chart from the rollups (docs/charts.md): reads the series the chart needs for the range,
/// converts money at the configured rates, and lays the points out as JSON or CSV.
struct ChartReport: Sendable {
    /// Longest range, in days (as the overview's).
    static let maxDays: Int64 = 3_700

    let store: any ConsoleStore
    let console: ConsoleSettings

    /// The chart's points over `environments`.
    func points(_ request: ChartRequest, environments: [Environment]) async throws -> [ChartPoint] {
        let rows = try await store.chartRows(
            environments: environments.map(\.rawValue), kinds: request.chart.kinds, fromDay: request.from, toDay: request.to,
            segments: Set([request.segment].compactMap { $0 }))
        var request = request
        request.reportingCurrency = console.reportingCurrency
        for currency in Set((rows.opening + rows.days).map(\.currency)) where !currency.isEmpty {
            if let rate = console.rate(currency) { request.rates[currency] = rate }
        }
        return chartPoints(request, rows: rows)
    }

    /// `date,series,segment,currency,converted,value`, one line a point.
    static func csv(_ points: [ChartPoint]) -> String {
        var lines = ["date,series,segment,currency,converted,value"]
        for point in points {
            lines.append(
                [OverviewBody.format(point.date), point.series, point.segment ?? "", point.currency ?? "", point.converted ? "true" : "false",
                 number(point.value)].map(field).joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Whole numbers without a fraction (counts), others as Swift prints them (shortest round trip).
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }

    /// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
    private static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// `GET /v1/charts/{chart}` as JSON.
struct ChartBody: Encodable {
    struct Point: Encodable {
        var date: String
        var series: String
        var segment: String?
        var currency: String?
        var converted: Bool?
        var value: Double
    }

    var chart: String
    var family: String
    var definition: String
    var from: String
    var to: String
    var interval: String
    var segment: String?
    /// The environment counted; null when segmented by environment (every one counted).
    var environment: String?
    var reportingCurrency: String?
    var points: [Point]

    init(request: ChartRequest, environment: Environment?, reportingCurrency: String?, points: [ChartPoint]) {
        chart = request.chart.rawValue
        family = request.chart.family
        definition = request.chart.definition
        from = OverviewBody.format(request.from)
        to = OverviewBody.format(request.to)
        interval = request.interval.rawValue
        segment = request.segment?.rawValue
        self.environment = environment?.rawValue
        self.reportingCurrency = reportingCurrency
        self.points = points.map {
            Point(date: OverviewBody.format($0.date), series: $0.series, segment: $0.segment, currency: $0.currency,
                  converted: $0.converted ? true : nil, value: $0.value)
        }
    }
}
