import Entitlements
import Exports
import Foundation
import HTTPServer
import JSONCoding

/// How a chart's points are written: JSON (``ChartBody``) and CSV.
///
/// A daily chart by storefront is tens of thousands of points, and Foundation's encoder was the
/// largest cost of answering it. With ``fastPaths`` (the server's switch, `ENTITLED_FAST_PATHS`)
/// the JSON is written directly, point by point, through ``JSONWriter``; off, `ChartBody`'s
/// `Encodable` conformance is encoded by `JSONEncoder.entitledDefault`, the reference the fast
/// writer is held to, byte for byte, by the tests.
struct ChartRendering: Sendable {
    var fastPaths: Bool

    /// The chart as JSON, with the filters it was read with.
    func json(
        _ request: ChartRequest, environment: Environment?, filter: ChartFilter, reportingCurrency: String?, points: [ChartPoint]
    ) throws -> [UInt8] {
        if fastPaths,
           let bytes = Self.fastJSON(request, environment: environment, filter: filter, reportingCurrency: reportingCurrency, points: points)
        {
            return bytes
        }
        let body = ChartBody(request: request, environment: environment, filter: filter, reportingCurrency: reportingCurrency, points: points)
        return Array(try JSONEncoder.entitledDefault.encode(body))
    }

    /// What `JSONEncoder.entitledDefault` writes for ``ChartBody``: its members in key order, a
    /// nil optional left out; nil when a value is not finite (which Foundation refuses: the
    /// reference then throws its error).
    static func fastJSON(
        _ request: ChartRequest, environment: Environment?, filter: ChartFilter, reportingCurrency: String?, points: [ChartPoint]
    ) -> [UInt8]? {
        guard points.allSatisfy({ $0.value.isFinite }) else { return nil }
        var bytes: [UInt8] = []
        // A point is about 80 bytes.
        bytes.reserveCapacity(512 + points.count * 88)
        func member(_ key: String, _ value: String?, first: Bool = false) {
            guard let value else { return }
            if !first { bytes.append(UInt8(ascii: ",")) }
            JSONWriter.appendQuoted(key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            JSONWriter.appendQuoted(value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "{"))
        member("chart", request.chart.rawValue, first: true)
        member("definition", request.chart.definition)
        member("environment", environment?.rawValue)
        member("family", request.chart.family)
        if !filter.isEmpty {
            bytes += #","filters":{"#.utf8
            var first = true
            for segmentation in ChartBody.filterKeys {
                guard let value = filter.value(segmentation) else { continue }
                member(segmentation.rawValue, value, first: first)
                first = false
            }
            bytes.append(UInt8(ascii: "}"))
        }
        member("from", OverviewBody.format(request.from))
        member("interval", request.interval.rawValue)
        bytes += #","points":["#.utf8
        // Points come period by period: a date is formatted once for the run of its points.
        var lastDay: Int64?, date: [UInt8] = []
        for (index, point) in points.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            if point.converted { bytes += #""converted":true,"#.utf8 }
            if let currency = point.currency {
                bytes += #""currency":"#.utf8
                JSONWriter.appendQuoted(currency, to: &bytes)
                bytes.append(UInt8(ascii: ","))
            }
            if point.date != lastDay {
                lastDay = point.date
                date = []
                JSONWriter.appendQuoted(OverviewBody.format(point.date), to: &date)
            }
            bytes += #""date":"#.utf8
            bytes += date
            if let segment = point.segment {
                bytes += #","segment":"#.utf8
                JSONWriter.appendQuoted(segment, to: &bytes)
            }
            bytes += #","series":"#.utf8
            JSONWriter.appendQuoted(point.series, to: &bytes)
            bytes += #","value":"#.utf8
            JSONWriter.appendNumber(point.value, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
        member("reportingCurrency", reportingCurrency)
        member("segment", request.segment?.rawValue)
        member("to", OverviewBody.format(request.to))
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// `date,series,segment,currency,converted,value`, one line a point (RFC 4180, CRLF).
    func csv(_ points: [ChartPoint]) -> [UInt8] {
        var bytes = Array("date,series,segment,currency,converted,value\r\n".utf8)
        bytes.reserveCapacity(64 + points.count * 48)
        var lastDay: Int64?, date: [UInt8] = []
        for point in points {
            if point.date != lastDay {
                lastDay = point.date
                date = Array(OverviewBody.format(point.date).utf8)
            }
            bytes += date
            bytes.append(UInt8(ascii: ","))
            CSV.appendField(point.series, to: &bytes)
            bytes.append(UInt8(ascii: ","))
            CSV.appendField(point.segment ?? "", to: &bytes)
            bytes.append(UInt8(ascii: ","))
            CSV.appendField(point.currency ?? "", to: &bytes)
            bytes += (point.converted ? ",true," : ",false,").utf8
            Self.number(point.value, to: &bytes)
            bytes += "\r\n".utf8
        }
        return bytes
    }

    /// Whole numbers without a fraction (counts), others as Swift prints them (shortest round trip).
    private static func number(_ value: Double, to bytes: inout [UInt8]) {
        if value == value.rounded() && abs(value) < 1e15 { bytes += String(Int64(value)).utf8 } else { bytes += value.description.utf8 }
    }
}

/// `GET /v1/charts/{chart}` as JSON: the definition of its shape (the fast writer in
/// ``ChartRendering`` writes the same bytes).
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
    /// The segment values the chart is held to, by segmentation (`store`, `product`, `storefront`,
    /// `periodType`): exactly the filters given; left out when none was.
    var filters: [String: String]?
    /// The environment counted; left out when segmented by environment (every one counted).
    var environment: String?
    var reportingCurrency: String?
    var points: [Point]

    /// The filters' keys in the order `JSONEncoder.entitledDefault` sorts them.
    static let filterKeys = ChartFilter.dimensions.map(\.segmentation).sorted { $0.rawValue < $1.rawValue }

    init(request: ChartRequest, environment: Environment?, filter: ChartFilter, reportingCurrency: String?, points: [ChartPoint]) {
        chart = request.chart.rawValue
        family = request.chart.family
        definition = request.chart.definition
        from = OverviewBody.format(request.from)
        to = OverviewBody.format(request.to)
        interval = request.interval.rawValue
        segment = request.segment?.rawValue
        let held = ChartFilter.dimensions.compactMap { dimension in filter.value(dimension.segmentation).map { (dimension.segmentation.rawValue, $0) } }
        filters = held.isEmpty ? nil : Dictionary(uniqueKeysWithValues: held)
        self.environment = environment?.rawValue
        self.reportingCurrency = reportingCurrency
        self.points = points.map {
            Point(date: OverviewBody.format($0.date), series: $0.series, segment: $0.segment, currency: $0.currency,
                  converted: $0.converted ? true : nil, value: $0.value)
        }
    }
}
