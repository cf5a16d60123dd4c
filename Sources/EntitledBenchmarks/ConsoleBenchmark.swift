import AppStore
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPClient
import HTTPServer
import Storage

/// `entitled bench console`: `GET /v1/metrics/overview` and every `GET /v1/charts/{chart}` (each
/// segmentation, each interval) over HTTP against a SQLite ledger of bulk-seeded customers with their rollups (targets at
/// 1,000,000: the overview under 200 ms, each chart under 100 ms, so that the console stays
/// interactive at scale).
public enum ConsoleBenchmark {
    public struct Options: Sendable {
        public var customers = 1_000_000
        public var requests = 200
        /// Requests per chart, segmentation and interval (every chart is timed unsegmented and
        /// split by each segmentation, by day, week and month: 288 combinations).
        public var chartRequests = 20
        public init() {}
    }

    static let secret = "console-bench-secret-0123456789"

    public static func run(_ options: Options) async throws -> Bool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-bench-console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await openStore(url: "sqlite:" + directory.appendingPathComponent("console.sqlite").path)
        let now = SystemClock().nowMilliseconds()
        let chunk = 100_000
        var seeded = 0
        let started = ContinuousClock.now
        while seeded < options.customers {
            let range = seeded..<min(options.customers, seeded + chunk)
            try await _StorageBenchmark.bulkLoad(store, customers: range, now: now)
            seeded = range.upperBound
        }
        let loaded = ContinuousClock.now
        try await _StorageBenchmark.bulkLoadMetrics(store, customers: 0..<options.customers, now: now)
        let metricsDone = ContinuousClock.now
        try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<options.customers, now: now)
        let done = ContinuousClock.now
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        print("seeded \(options.customers) customers in \(format(seconds(loaded - started))) s "
              + "(\(Int(Double(options.customers) / max(0.001, seconds(loaded - started))))/s), "
              + "their metric rollups in \(format(seconds(metricsDone - loaded))) s, "
              + "their chart rollups in \(format(seconds(done - metricsDone))) s")

        var configuration = Configuration()
        configuration.apiKeys = [APIKey(name: "console", secret: secret, scopes: [.console])]
        let ledger = FactLedger(store: store, configuration: configuration, cache: FastPaths().projectionCache())
        let application = Application(
            configuration: configuration, verifier: try AppStoreVerifier(apps: [], clock: SystemClock()), ledger: ledger,
            clock: SystemClock())
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let server = HTTPServer(
            configuration: application.serverConfiguration(accessLog: LogWriter(fileDescriptor: devNull)), router: application.router)
        try server.start()
        defer { Task { await server.shutdown() } }
        let to = metricDay(now), from = to - 364
        func day(_ d: Int64) -> String {
            let (y, m, dd) = Time.civilFromDays(d)
            return String(format: "%04d-%02d-%02d", Int(y), Int(m), Int(dd))
        }
        let client = CurlHTTP()
        let base = "http://127.0.0.1:\(server.port)"
        let range = "from=\(day(from))&to=\(day(to))"
        let overview = try await time(client, base + "/v1/metrics/overview?\(range)&interval=day", requests: options.requests, list: "series")
        print("overview, 365 daily points (\(overview.count)), \(options.customers) customers: p50 \(format(overview.p50)) ms, "
              + "p99 \(format(overview.p99)) ms over \(options.requests) requests (target: under 200 ms)")
        var misses: [String] = []
        let segmentations: [ChartSegmentation?] = [nil] + ChartSegmentation.allCases
        let columns = ["chart"] + segmentations.map { $0?.rawValue ?? "unsegmented" }
        for interval in ChartInterval.allCases {
            print("charts, 365 days by \(interval.rawValue), \(options.customers) customers, \(options.chartRequests) requests each: "
                  + "p99 ms over HTTP / p99 ms of the process's CPU (target: p99 under 100 ms)")
            print(columns.enumerated().map { $0.offset == 0 ? $0.element.padding(toLength: 24, withPad: " ", startingAt: 0) : $0.element.leftPadded(16) }
                .joined())
            for chart in ChartID.allCases {
                var line = chart.rawValue.padding(toLength: 24, withPad: " ", startingAt: 0)
                for segment in segmentations {
                    let query = "\(range)&interval=\(interval.rawValue)" + (segment.map { "&segment=\($0.rawValue)" } ?? "")
                    let timing = try await time(client, base + "/v1/charts/\(chart.rawValue)?\(query)", requests: options.chartRequests, list: "points", warmUp: 2)
                    if timing.p99 >= 100 {
                        misses.append("\(chart.rawValue) \(segment.map { "by \($0.rawValue) " } ?? "")per \(interval.rawValue): "
                                      + "p99 \(format(timing.p99)) ms, CPU p99 \(format(timing.cpu99)) ms, \(timing.count) points")
                    }
                    line += "\(format(timing.p99)) / \(format(timing.cpu99))".leftPadded(16)
                }
                print(line)
            }
        }
        print(misses.isEmpty ? "every chart met the target" : "missed the target:\n  " + misses.joined(separator: "\n  "))
        await server.shutdown()
        await store.close()
        return overview.p99 < 200 && misses.isEmpty
    }

    /// GETs `url` `requests` times (after `warmUp` that warm the connection and the page cache) and
    /// returns p50 and p99 in milliseconds, the p99 of the CPU time the process (server and
    /// client) spent per request, which other processes sharing the cores do not inflate as they
    /// do the wall-clock time, and the length of the first answer's array `list`.
    static func time(_ client: CurlHTTP, _ url: String, requests: Int, list: String, warmUp: Int = 10) async throws
        -> (p50: Double, p99: Double, cpu99: Double, count: Int)
    {
        guard let target = URL(string: url) else { throw BenchmarkError("bad URL \(url)") }
        let request = OutboundRequest(method: "GET", url: target, headers: ["Authorization": "Bearer \(secret)"])
        var samples: [Double] = [], cpu: [Double] = []
        var count = 0
        for index in 0..<(requests + warmUp) {
            let begin = ContinuousClock.now, beginCPU = processCPUMilliseconds()
            let response = try await client.send(request)
            let elapsed = (ContinuousClock.now - begin).components
            let spent = processCPUMilliseconds() - beginCPU
            guard response.status == 200 else { throw BenchmarkError("\(target.path) answered \(response.status)") }
            if index == 0 {
                let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
                count = (body?[list] as? [Any])?.count ?? 0
            }
            if index >= warmUp {
                samples.append(Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15)
                cpu.append(spent)
            }
        }
        func p99(_ values: [Double]) -> Double { values.sorted()[min(values.count - 1, values.count * 99 / 100)] }
        return (samples.sorted()[samples.count / 2], p99(samples), p99(cpu), count)
    }

    /// User and system CPU time of this process so far, in milliseconds.
    static func processCPUMilliseconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func ms(_ t: timeval) -> Double { Double(t.tv_sec) * 1000 + Double(t.tv_usec) / 1000 }
        return ms(usage.ru_utime) + ms(usage.ru_stime)
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
