import AppStore
import EntitledConfig
import Entitlements
import HTTPServer
import Storage

/// The Charts API (`admin` or `console` scope; docs/openapi.yaml "Charts", docs/charts.md):
/// one chart over a range of days from the rollups, as JSON or CSV.
struct ChartRoutes: Sendable {
    let gate: AccessGate
    let report: ChartReport
    let clock: any EpochClock

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/charts/{chart}") { try await routes.chart($0) }
    }

    /// `GET /v1/charts/{chart}?from=&to=&interval=&segment=&environment=&store=&product=&storefront=&periodType=`,
    /// JSON or (`Accept: text/csv`) CSV.
    func chart(_ request: Request) async throws -> Response {
        try gate.require(request, scope: .console)
        let id = try request.parameter("chart")
        guard let chart = ChartID(rawValue: id) else {
            throw HTTPError(.chartNotFound, "no chart '\(id.prefix(64))'; the charts are \(ChartID.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        // One value each: a repeated parameter is refused rather than one of its values kept unsaid.
        if let repeated = Self.parameters.first(where: request.repeatedQueryNames.contains) {
            throw HTTPError(.invalidRequest, "\(repeated) is given more than once: give it once")
        }
        let from = try ConsoleRoutes.day(request, "from")
        let to = try ConsoleRoutes.day(request, "to")
        guard from <= to else { throw HTTPError(.invalidRequest, "from is after to") }
        guard to - from < ChartReport.maxDays else { throw HTTPError(.invalidRequest, "the range is longer than \(ChartReport.maxDays) days") }
        let intervalText = request.query["interval"] ?? "day"
        guard let interval = ChartInterval(rawValue: intervalText) else { throw HTTPError(.invalidRequest, "interval is day, week or month") }
        var segment: ChartSegmentation?
        if let text = request.query["segment"] {
            guard let parsed = ChartSegmentation(rawValue: text) else {
                throw HTTPError(.invalidRequest, "segment is store, product, storefront, environment or periodType")
            }
            segment = parsed
        }
        var filter = ChartFilter()
        for (segmentation, described) in ChartFilter.dimensions {
            guard let text = request.query[segmentation.rawValue] else { continue }
            guard filter.hold(segmentation, at: text) else { throw HTTPError(.invalidRequest, "\(segmentation.rawValue) is \(described)") }
        }
        let environment = try RequestInput.environment(request)
        if segment == .environment && request.query["environment"] != nil {
            throw HTTPError(.invalidRequest, "segment=environment counts every environment: leave environment out")
        }
        let environments = segment == .environment ? Environment.listingOrder : [environment]
        let chartRequest = ChartRequest(
            chart: chart, from: from, to: to, interval: interval, segment: segment, today: metricDay(clock.nowMilliseconds()))
        let report = self.report
        let points = try await Problems.consoleRead { try await report.points(chartRequest, environments: environments, filter: filter) }
        if Self.wantsCSV(request) {
            return Response(
                headers: ["Content-Type": "text/csv; charset=utf-8", "Content-Disposition": "attachment; filename=\"\(chart.rawValue).csv\""],
                body: report.rendering.csv(points))
        }
        return .json(
            bytes: try report.rendering.json(
                chartRequest, environment: segment == .environment ? nil : environment, filter: filter,
                reportingCurrency: report.console.reportingCurrency, points: points))
    }

    /// The query parameters the chart reads.
    static let parameters = ["from", "to", "interval", "segment", "environment"] + ChartFilter.dimensions.map(\.segmentation.rawValue)

    /// Whether `Accept` prefers CSV: it names `text/csv` and not JSON before it.
    static func wantsCSV(_ request: Request) -> Bool {
        guard let accept = request.headers["Accept"]?.lowercased(), let csv = accept.range(of: "text/csv") else { return false }
        guard let json = accept.range(of: "application/json") else { return true }
        return csv.lowerBound < json.lowerBound
    }
}
