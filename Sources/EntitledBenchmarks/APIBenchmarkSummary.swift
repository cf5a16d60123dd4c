import Foundation

/// The figures one `bench api` run measured that its targets judge; nil: not measured in this run
/// (a backend skipped, nginx not installed).
struct APIFigures: Sendable, Equatable {
    /// V2 notifications fully verified per CPU-second of one thread, and that rate over the raw
    /// ES256 limit on the same thread (raw verifications ÷ 3).
    var verifyPerCore: Double?
    var verifyRatio: Double?
    /// Ingest without the ledger's commit: notifications/s and µs of process CPU per notification.
    var noLedgerRate: Double?
    var noLedgerCPU: Double?
    /// Durable SQLite ingest: notifications/s and µs of process CPU per notification.
    var durableRate: Double?
    var durableCPU: Double?
    /// Customer reads and nginx serving a static file under the same load: requests/s, p99 in ms.
    var readRate: Double?
    var readP99: Double?
    var nginxRate: Double?
    var nginxP99: Double?
    /// PostgreSQL durable ingest through one and through two `entitled serve` processes.
    var postgresOneRate: Double?
    var postgresTwoRate: Double?
    /// The ledger's bytes on disk per notification (`bench store`'s worst case).
    var sqliteBytes: Double?
    var postgresBytes: Double?
}

/// How a figure is written: the measured value and its target in the same unit.
enum FigureUnit: Sendable {
    case ratio, microseconds, milliseconds, perSecond, bytes

    func text(_ value: Double) -> String {
        switch self {
        case .ratio: String(format: "%.2f", value)
        case .microseconds: String(format: "%.0f µs", value)
        case .milliseconds: String(format: "%.2f ms", value)
        case .perSecond: grouped(value) + "/s"
        case .bytes: grouped(value) + " bytes"
        }
    }

    /// A whole number with thousands separators, independent of the locale: 1500 → "1,500".
    private func grouped(_ value: Double) -> String {
        let digits = String(Int(value.rounded()).magnitude)
        var text = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { text += "," }
            text.append(digit)
        }
        return (value.rounded() < 0 ? "-" : "") + text
    }
}

/// A target: a bound on one figure.
struct FigureBound: Sendable, Equatable {
    enum Kind: Sendable { case atLeast, atMost, below }
    var kind: Kind
    var limit: Double

    static func atLeast(_ limit: Double) -> FigureBound { FigureBound(kind: .atLeast, limit: limit) }
    static func atMost(_ limit: Double) -> FigureBound { FigureBound(kind: .atMost, limit: limit) }
    static func below(_ limit: Double) -> FigureBound { FigureBound(kind: .below, limit: limit) }

    func holds(for value: Double) -> Bool {
        switch kind {
        case .atLeast: value >= limit
        case .atMost: value <= limit
        case .below: value < limit
        }
    }

    func text(_ unit: FigureUnit) -> String {
        switch kind {
        case .atLeast: "≥ " + unit.text(limit)
        case .atMost: "≤ " + unit.text(limit)
        case .below: "< " + unit.text(limit)
        }
    }
}

/// One line of the summary: a target, what this run measured, and whether it holds.
struct Judgement: Sendable, Equatable {
    enum Verdict: String, Sendable { case pass, fail = "FAIL", notMeasured = "not measured" }
    var target: String
    var measured: String
    var verdict: Verdict
}

/// The arithmetic behind `bench api`'s ratios and its closing summary: pure, so each verdict can
/// be checked against a table of figures.
enum APISummary {
    /// `numerator ÷ denominator`, or nil when either is missing or the denominator is not positive.
    static func ratio(_ numerator: Double?, _ denominator: Double?) -> Double? {
        guard let numerator, let denominator, denominator > 0 else { return nil }
        return numerator / denominator
    }

    /// What the ledger adds to a notification's process CPU: durable minus no-ledger, in µs.
    static func ledgerCPU(_ figures: APIFigures) -> Double? {
        guard let durable = figures.durableCPU, let without = figures.noLedgerCPU else { return nil }
        return durable - without
    }

    static func judge(_ name: String, _ value: Double?, _ bound: FigureBound, _ unit: FigureUnit) -> Judgement {
        let target = name + " " + bound.text(unit)
        guard let value, value.isFinite else { return Judgement(target: target, measured: "—", verdict: .notMeasured) }
        return Judgement(target: target, measured: unit.text(value), verdict: bound.holds(for: value) ? .pass : .fail)
    }

    /// Every target of the run, in the order the run prints its figures.
    static func judgements(_ figures: APIFigures) -> [Judgement] {
        [
            judge("verification, 1 core ÷ raw ES256 limit", figures.verifyRatio, .atLeast(0.8), .ratio),
            judge("durable SQLite: process CPU over the no-ledger path", ledgerCPU(figures), .atMost(250), .microseconds),
            judge("durable SQLite rate ÷ no-ledger rate", ratio(figures.durableRate, figures.noLedgerRate), .atLeast(0.5), .ratio),
            judge("reads ÷ nginx static", ratio(figures.readRate, figures.nginxRate), .atLeast(0.5), .ratio),
            judge("reads p99", figures.readP99, .below(2), .milliseconds),
            judge("stored bytes per notification, SQLite", figures.sqliteBytes, .atMost(1500), .bytes),
            judge("stored bytes per notification, PostgreSQL", figures.postgresBytes, .atMost(1500), .bytes),
            judge("PostgreSQL ingest, one entitled serve", figures.postgresOneRate, .atLeast(1500), .perSecond),
            judge("PostgreSQL ingest, two ÷ one entitled serve", ratio(figures.postgresTwoRate, figures.postgresOneRate), .atLeast(1), .ratio),
        ]
    }

    /// The judgements as a table of three aligned columns under a header.
    static func table(_ judgements: [Judgement]) -> String {
        let rows = [("target", "measured", "verdict")] + judgements.map { ($0.target, $0.measured, $0.verdict.rawValue) }
        let targetWidth = rows.map(\.0.count).max() ?? 0
        let measuredWidth = rows.map(\.1.count).max() ?? 0
        return rows.map { row in
            "  " + row.0.padding(toLength: targetWidth, withPad: " ", startingAt: 0) + "  "
                + String(repeating: " ", count: measuredWidth - row.1.count) + row.1 + "  " + row.2
        }.joined(separator: "\n")
    }

    /// The line after the durable SQLite ingest: what the ledger adds, against its targets.
    static func ledgerLine(_ figures: APIFigures) -> String? {
        guard let cpu = ledgerCPU(figures), let share = ratio(figures.durableRate, figures.noLedgerRate) else { return nil }
        return String(
            format: "  the ledger's cost: +%.0f µs of process CPU per notification over the path without it (target ≤ 250), rate %.2f of it (target ≥ 0.5)",
            cpu, share)
    }

    /// The line after nginx's: the customer reads against it.
    static func nginxComparisonLine(_ figures: APIFigures) -> String? {
        guard let share = ratio(figures.readRate, figures.nginxRate), let p99 = figures.readP99, let nginxP99 = figures.nginxP99 else {
            return nil
        }
        return String(
            format: "  reads ÷ nginx static: %.2f (target ≥ 0.5); reads p99 %.2f ms against nginx's %.2f ms (target < 2 ms)", share, p99,
            nginxP99)
    }
}

extension WrkReport {
    /// A latency as wrk prints it ("512.00us", "3.98ms", "1.20s", "2.00m") in milliseconds.
    static func milliseconds(_ text: String) -> Double? {
        let units: [(suffix: String, scale: Double)] = [("us", 0.001), ("ms", 1), ("s", 1000), ("m", 60_000)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            guard let value = Double(text.dropLast(suffix.count)), value.isFinite, value >= 0 else { return nil }
            return value * scale
        }
        return nil
    }
}
