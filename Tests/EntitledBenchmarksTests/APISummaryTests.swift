import Foundation
import Testing

@testable import EntitledBenchmarks

/// `bench api`'s arithmetic: the ratios, the verdicts against its targets and the lines it prints,
/// from tables of figures (nothing here is timed).
@Suite struct APISummaryTests {
    /// The figures of the sitting the targets were set against (one value of each measured range).
    static let measured = APIFigures(
        verifyPerCore: 6768, verifyRatio: 0.89, noLedgerRate: 6369, noLedgerCPU: 233, durableRate: 1447, durableCPU: 690,
        readRate: 43_994, readP99: 3.98, nginxRate: 119_534, nginxP99: 0.49, postgresOneRate: 1043, postgresTwoRate: 803,
        sqliteBytes: 2612, postgresBytes: 3202)

    /// Figures that meet every target, some exactly at the bound.
    static let met = APIFigures(
        verifyPerCore: 7000, verifyRatio: 0.8, noLedgerRate: 7000, noLedgerCPU: 230, durableRate: 3500, durableCPU: 480, readRate: 60_000,
        readP99: 1.99, nginxRate: 120_000, nginxP99: 0.5, postgresOneRate: 1500, postgresTwoRate: 1500, sqliteBytes: 1500,
        postgresBytes: 1499)

    @Test(arguments: [
        ("512.00us", 0.512), ("3.98ms", 3.98), ("12.86ms", 12.86), ("1.20s", 1200), ("2.00m", 120_000),
    ] as [(String, Double)])
    func wrkLatencyInMilliseconds(text: String, milliseconds: Double) throws {
        let value = try #require(WrkReport.milliseconds(text))
        #expect(abs(value - milliseconds) < 1e-9)
    }

    /// Alternated rounds are reported by their medians, each figure on its own (the middle two
    /// averaged for an even count), with every round's errors.
    @Test func roundsAreReportedByTheirMedians() throws {
        func round(_ rate: Double, _ p50: String, _ p99: String, errors: String = "none") throws -> WrkReport {
            let output = """
                  Latency Distribution
                     50%   \(p50)
                     90%   \(p50)
                     99%   \(p99)
                \(errors == "none" ? "" : errors)
                Requests/sec:  \(rate)
                """
            return try #require(WrkReport(parsing: output))
        }
        let odd = WrkReport(median: [try round(300, "1.00ms", "9.00ms"), try round(100, "900.00us", "2.00ms"), try round(200, "3.00ms", "4.00ms")])
        #expect(odd.requestsPerSecond == 200)
        #expect((odd.p50, odd.p90, odd.p99, odd.errors) == ("1.00ms", "1.00ms", "4.00ms", "none"))
        let even = WrkReport(median: [
            try round(100, "1.00ms", "2.00ms"), try round(400, "2.00ms", "4.00ms", errors: "Non-2xx or 3xx responses: 3"),
            try round(200, "4.00ms", "8.00ms"), try round(300, "3.00ms", "6.00ms"),
        ])
        #expect(even.requestsPerSecond == 250)
        #expect((even.p50, even.p99) == ("2.50ms", "5.00ms"))
        #expect(even.errors == "Non-2xx or 3xx responses: 3")
    }

    @Test(arguments: ["", "ms", "fast", "-1.00ms", "3.98", "nanms"])
    func unreadableLatency(text: String) {
        #expect(WrkReport.milliseconds(text) == nil)
    }

    @Test(arguments: [
        (FigureUnit.ratio, 0.374, "0.37"), (.ratio, 1, "1.00"), (.microseconds, 444.4, "444 µs"), (.milliseconds, 0.49, "0.49 ms"),
        (.perSecond, 119_534.4, "119,534/s"), (.perSecond, 803, "803/s"), (.perSecond, 1_000_000, "1,000,000/s"),
        (.bytes, 1500, "1,500 bytes"), (.bytes, 999.6, "1,000 bytes"),
    ] as [(FigureUnit, Double, String)])
    func unitText(unit: FigureUnit, value: Double, text: String) {
        #expect(unit.text(value) == text)
    }

    @Test(arguments: [
        (nil, 2, nil), (1, nil, nil), (1, 0, nil), (1, -1, nil), (1, 2, 0.5), (803, 1043, 803.0 / 1043),
    ] as [(Double?, Double?, Double?)])
    func ratio(numerator: Double?, denominator: Double?, expected: Double?) {
        #expect(APISummary.ratio(numerator, denominator) == expected)
    }

    @Test func measuredFiguresFailAllButVerification() {
        let judgements = APISummary.judgements(Self.measured)
        #expect(
            judgements.map { "\($0.target) | \($0.measured) | \($0.verdict.rawValue)" } == [
                "verification, 1 core ÷ raw ES256 limit ≥ 0.80 | 0.89 | pass",
                "durable SQLite: process CPU over the no-ledger path ≤ 250 µs | 457 µs | FAIL",
                "durable SQLite rate ÷ no-ledger rate ≥ 0.50 | 0.23 | FAIL",
                "reads ÷ nginx static ≥ 0.50 | 0.37 | FAIL",
                "reads p99 < 2.00 ms | 3.98 ms | FAIL",
                "stored bytes per notification, SQLite ≤ 1,500 bytes | 2,612 bytes | FAIL",
                "stored bytes per notification, PostgreSQL ≤ 1,500 bytes | 3,202 bytes | FAIL",
                "PostgreSQL ingest, one entitled serve ≥ 1,500/s | 1,043/s | FAIL",
                "PostgreSQL ingest, two ÷ one entitled serve ≥ 1.00 | 0.77 | FAIL",
            ])
    }

    @Test func boundsMetExactlyPass() {
        let verdicts = APISummary.judgements(Self.met).map(\.verdict)
        #expect(verdicts == Array(repeating: .pass, count: 9))
    }

    /// A figure missing from the run (a backend skipped, nginx not installed, a zero reference)
    /// is reported as not measured, never as a pass or a fail.
    @Test func missingFiguresAreNotMeasured() {
        #expect(APISummary.judgements(APIFigures()).allSatisfy { $0.verdict == .notMeasured && $0.measured == "—" })
        var figures = Self.met
        figures.nginxRate = 0
        figures.postgresOneRate = nil
        figures.noLedgerCPU = nil
        let verdicts = APISummary.judgements(figures).map(\.verdict)
        #expect(verdicts == [.pass, .notMeasured, .pass, .notMeasured, .pass, .pass, .pass, .notMeasured, .notMeasured])
    }

    @Test(arguments: [
        (FigureBound.below(2), 1.999, true), (.below(2), 2, false), (.atMost(250), 250, true), (.atMost(250), 250.5, false),
        (.atLeast(0.5), 0.5, true), (.atLeast(0.5), 0.4999, false),
    ] as [(FigureBound, Double, Bool)])
    func boundHolds(bound: FigureBound, value: Double, holds: Bool) {
        #expect(bound.holds(for: value) == holds)
    }

    @Test func tableAlignsColumns() {
        let table = APISummary.table([
            Judgement(target: "reads p99 < 2.00 ms", measured: "3.98 ms", verdict: .fail),
            Judgement(target: "reads ÷ nginx static ≥ 0.50", measured: "—", verdict: .notMeasured),
        ])
        #expect(
            table == """
                  target                       measured  verdict
                  reads p99 < 2.00 ms           3.98 ms  FAIL
                  reads ÷ nginx static ≥ 0.50         —  not measured
                """)
    }

    @Test func ledgerAndNginxLines() {
        #expect(
            APISummary.ledgerLine(Self.measured)
                == "  the ledger's cost: +457 µs of process CPU per notification over the path without it (target ≤ 250), rate 0.23 of it (target ≥ 0.5)"
        )
        #expect(
            APISummary.nginxComparisonLine(Self.measured)
                == "  reads ÷ nginx static: 0.37 (target ≥ 0.5); reads p99 3.98 ms against nginx's 0.49 ms (target < 2 ms)")
        var withoutNginx = Self.measured
        withoutNginx.nginxRate = nil
        withoutNginx.nginxP99 = nil
        #expect(APISummary.nginxComparisonLine(withoutNginx) == nil)
        var withoutLedgerRun = Self.measured
        withoutLedgerRun.noLedgerCPU = nil
        #expect(APISummary.ledgerLine(withoutLedgerRun) == nil)
    }

    /// Everything nginx writes (pid, logs, temporary bodies) stays in the benchmark's folder: the
    /// defaults are system paths a user cannot write.
    @Test func nginxConfigurationStaysInItsFolder() {
        let text = APIBenchmark.nginxConfiguration(prefix: "/tmp/bench/nginx", port: 8123)
        #expect(text.contains("listen 127.0.0.1:8123;"))
        #expect(text.contains("daemon off;"))
        let directives = ["pid ", "error_log ", "client_body_temp_path ", "proxy_temp_path ", "fastcgi_temp_path ", "uwsgi_temp_path ", "scgi_temp_path "]
        let writes = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { line in directives.contains { line.hasPrefix($0) } }
        #expect(writes.count == 7)
        #expect(writes.allSatisfy { $0.split(separator: " ")[1].hasPrefix("/tmp/bench/nginx/") })
        #expect(text.contains("access_log off;"))
    }
}

/// The run's wrk scripts are written before any part of it: the PostgreSQL scale-out reads run
/// before the in-process reads, and without the read script wrk reports its script errors as reads.
@Suite struct APIBenchmarkScriptTests {
    @Test func bothScriptsAreWrittenUpFront() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bench-scripts-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (ingest, read) = try APIBenchmark.writeScripts(in: folder)
        #expect(try String(contentsOf: ingest, encoding: .utf8) == APIBenchmark.ingestLua)
        #expect(try String(contentsOf: read, encoding: .utf8) == APIBenchmark.readLua)
        // Where the scale-out run and the in-process reads look for them.
        #expect(read.path == folder.appendingPathComponent("read.lua").path)
        #expect(ingest.path == folder.appendingPathComponent("ingest.lua").path)
    }
}
