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
    let rendering: ChartRendering

    /// The chart's points over `environments`, of the segments `filter` holds only.
    func points(_ request: ChartRequest, environments: [Environment], filter: ChartFilter) async throws -> [ChartPoint] {
        let rows = try await store.chartRows(
            environments: environments.map(\.rawValue), kinds: request.chart.kinds, fromDay: request.from, toDay: request.to,
            segments: Set([request.segment].compactMap { $0 }), filter: filter)
        var request = request
        request.reportingCurrency = console.reportingCurrency
        // Every configured rate (the table looks up only the currencies its rows hold): what
        // `console.rate` answers for each of them.
        if let reporting = console.reportingCurrency {
            request.rates = console.rates
            request.rates[reporting] = 1
        }
        return chartPoints(request, rows: rows)
    }
}
