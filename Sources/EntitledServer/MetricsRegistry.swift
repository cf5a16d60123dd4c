import Foundation
import Synchronization

/// Counters, gauges and histograms with fixed buckets, rendered in the Prometheus text exposition
/// format (version 0.0.4). Families are registered once, at start; series (one per label-value
/// combination) appear on first use. Each family has its own lock, held to find or add a series;
/// each series has its own, held to change its numbers. A caller that records into the same
/// series over and over resolves it once (``Counter/cell(_:)``, ``Histogram/cell(_:)``) and then
/// takes only that series' lock.
///
/// A family keeps at most ``maxSeries`` series: label values come from requests (routes, codes,
/// notification types), and a bug or an attacker must not grow memory or the scrape without bound.
/// Past the cap, new combinations are counted in one series whose labels are all `_other`.
public final class MetricsRegistry: Sendable {
    /// Most series per family.
    public static let maxSeries = 1000

    private let families = Mutex<[MetricFamily]>([])

    public init() {}

    /// A counter (only goes up): `name` should end in `_total`.
    public func counter(_ name: String, _ help: String, labels: [String] = []) -> Counter {
        Counter(register(MetricFamily(name: name, help: help, kind: .counter, labels: labels, buckets: [])))
    }

    /// A gauge (set, or moved up and down).
    public func gauge(_ name: String, _ help: String, labels: [String] = []) -> Gauge {
        Gauge(register(MetricFamily(name: name, help: help, kind: .gauge, labels: labels, buckets: [])))
    }

    /// A histogram with these upper bounds (ascending; `+Inf` is added).
    public func histogram(_ name: String, _ help: String, labels: [String] = [], buckets: [Double]) -> Histogram {
        Histogram(register(MetricFamily(name: name, help: help, kind: .histogram, labels: labels, buckets: buckets.sorted())))
    }

    private func register(_ family: MetricFamily) -> MetricFamily {
        families.withLock { families in
            precondition(!families.contains { $0.name == family.name }, "metric \(family.name) registered twice")
            families.append(family)
        }
        return family
    }

    /// Every family in registration order, series sorted by label values.
    public func render() -> String {
        var out = ""
        for family in families.withLock({ $0 }) { family.render(into: &out) }
        return out
    }

    /// The media type of ``render()``'s output.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}

/// Adds to one series of a counter family.
public struct Counter: Sendable {
    fileprivate let family: MetricFamily
    fileprivate init(_ family: MetricFamily) { self.family = family }

    /// Adds `amount` (not negative) to the series with these label values (in the family's label order).
    public func add(_ labels: [String] = [], _ amount: Double = 1) {
        cell(labels).add(amount)
    }

    /// The series with these label values, resolved once.
    public func cell(_ labels: [String] = []) -> Cell { Cell(series: family.cell(labels)) }

    /// One series of a counter.
    public struct Cell: Sendable {
        fileprivate let series: SeriesCell

        /// Adds `amount` (not negative).
        public func add(_ amount: Double = 1) {
            guard amount >= 0 else { return }
            series.numbers.withLock { $0.value += amount }
        }
    }
}

/// Sets or moves one series of a gauge family.
public struct Gauge: Sendable {
    fileprivate let family: MetricFamily
    fileprivate init(_ family: MetricFamily) { self.family = family }

    public func set(_ labels: [String] = [], _ value: Double) { family.update(labels) { $0.value = value } }
    public func add(_ labels: [String] = [], _ amount: Double) { family.update(labels) { $0.value += amount } }
}

/// Observes values into one series of a histogram family.
public struct Histogram: Sendable {
    fileprivate let family: MetricFamily
    fileprivate init(_ family: MetricFamily) { self.family = family }

    public func observe(_ labels: [String] = [], _ value: Double) {
        cell(labels).observe(value)
    }

    /// The series with these label values, resolved once.
    public func cell(_ labels: [String] = []) -> Cell { Cell(bounds: family.buckets, series: family.cell(labels)) }

    /// One series of a histogram.
    public struct Cell: Sendable {
        fileprivate let bounds: [Double]
        fileprivate let series: SeriesCell

        public func observe(_ value: Double) {
            guard !value.isNaN else { return }
            let bucket = bounds.firstIndex { value <= $0 } ?? bounds.count
            series.numbers.withLock { series in
                if series.buckets.isEmpty { series.buckets = Array(repeating: 0, count: bounds.count + 1) }
                series.buckets[bucket] += 1
                series.value += value
                series.count += 1
            }
        }
    }
}

/// One value (counter, gauge) or one histogram's counts per bucket (not cumulative; `+Inf` last).
struct Series: Sendable {
    var value: Double = 0
    var buckets: [UInt64] = []
    var count: UInt64 = 0
}

/// One series' numbers under a lock of their own, so that updating a resolved series never takes
/// its family's lock.
final class SeriesCell: Sendable {
    let numbers = Mutex(Series())
}

final class MetricFamily: Sendable {
    enum Kind: String, Sendable { case counter, gauge, histogram }

    let name: String
    let help: String
    let kind: Kind
    let labels: [String]
    let buckets: [Double]
    private let series = Mutex<[[String]: SeriesCell]>([:])

    init(name: String, help: String, kind: Kind, labels: [String], buckets: [Double]) {
        self.name = name
        self.help = help
        self.kind = kind
        self.labels = labels
        self.buckets = buckets
    }

    /// The series of these label values, added on first use (past ``MetricsRegistry/maxSeries``,
    /// the one whose labels are all `_other`).
    func cell(_ values: [String]) -> SeriesCell {
        precondition(values.count == labels.count, "metric \(name) takes labels \(labels)")
        return series.withLock { series in
            if let cell = series[values] { return cell }
            let key = series.count >= MetricsRegistry.maxSeries ? Array(repeating: "_other", count: labels.count) : values
            if let cell = series[key] { return cell }
            let cell = SeriesCell()
            series[key] = cell
            return cell
        }
    }

    func update(_ values: [String], _ change: (inout Series) -> Void) {
        cell(values).numbers.withLock { change(&$0) }
    }

    func render(into out: inout String) {
        out += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
        let snapshot = series.withLock { $0 }.map { ($0.key, $0.value.numbers.withLock { $0 }) }
            .sorted { $0.0.lexicographicallyPrecedes($1.0) }
        for (values, series) in snapshot {
            let pairs = zip(labels, values).map { "\($0)=\"\(Self.escapeLabel($1))\"" }
            switch kind {
            case .counter, .gauge:
                out += name + Self.braces(pairs) + " " + Self.format(series.value) + "\n"
            case .histogram:
                var cumulative: UInt64 = 0
                for (index, count) in series.buckets.enumerated() {
                    cumulative += count
                    let bound = index < buckets.count ? Self.format(buckets[index]) : "+Inf"
                    out += name + "_bucket" + Self.braces(pairs + ["le=\"\(bound)\""]) + " \(cumulative)\n"
                }
                out += name + "_sum" + Self.braces(pairs) + " " + Self.format(series.value) + "\n"
                out += name + "_count" + Self.braces(pairs) + " \(series.count)\n"
            }
        }
    }

    private static func braces(_ pairs: [String]) -> String { pairs.isEmpty ? "" : "{" + pairs.joined(separator: ",") + "}" }

    /// Label values escape `\`, `"` and line feeds (the format's only escapes).
    static func escapeLabel(_ value: String) -> String {
        var out = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// HELP text escapes `\` and line feeds.
    static func escapeHelp(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Whole numbers without a fraction; `+Inf`, `-Inf`, `NaN` as the format spells them.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
