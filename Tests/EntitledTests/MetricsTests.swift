import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Storage
import Testing

/// The registry's text format, checked line by line.
@Suite struct MetricsRegistryTests {
    @Test func countersAndGaugesEscapeLabelValues() {
        let registry = MetricsRegistry()
        let counter = registry.counter("x_total", "Help with \\ and\nnewline.", labels: ["route"])
        counter.add([#"a"b\c"# + "\nd"])
        counter.add(["plain"], 2)
        counter.add(["plain"], -5)  // ignored: counters only go up
        let gauge = registry.gauge("g", "A gauge.")
        gauge.set([], 3)
        gauge.add([], -1.5)
        #expect(
            registry.render() == """
                # HELP x_total Help with \\\\ and\\nnewline.
                # TYPE x_total counter
                x_total{route="a\\"b\\\\c\\nd"} 1
                x_total{route="plain"} 2
                # HELP g A gauge.
                # TYPE g gauge
                g 1.5

                """)
    }

    @Test func histogramBucketsAreCumulativeWithInfSumAndCount() {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("h_seconds", "Latency.", labels: ["kind"], buckets: [0.5, 0.1, 1])
        for value in [0.05, 0.1, 0.3, 0.7, 4] { histogram.observe(["a"], value) }
        #expect(
            registry.render() == """
                # HELP h_seconds Latency.
                # TYPE h_seconds histogram
                h_seconds_bucket{kind="a",le="0.1"} 2
                h_seconds_bucket{kind="a",le="0.5"} 3
                h_seconds_bucket{kind="a",le="1"} 4
                h_seconds_bucket{kind="a",le="+Inf"} 5
                h_seconds_sum{kind="a"} 5.15
                h_seconds_count{kind="a"} 5

                """)
    }

    @Test func aResolvedCellIsTheSeriesOfItsLabels() {
        let registry = MetricsRegistry()
        let counter = registry.counter("c_total", "Cells.", labels: ["id"])
        let histogram = registry.histogram("h_seconds", "Cells.", labels: ["id"], buckets: [1])
        let cell = counter.cell(["a"])
        cell.add()
        counter.add(["a"], 2)
        cell.add(-1)  // ignored, as by add(_:_:)
        histogram.cell(["a"]).observe(0.5)
        histogram.observe(["a"], 2)
        let text = registry.render()
        #expect(text.contains(#"c_total{id="a"} 3"#))
        #expect(text.contains(#"h_seconds_bucket{id="a",le="1"} 1"#))
        #expect(text.contains(#"h_seconds_count{id="a"} 2"#))
    }

    @Test func seriesPastTheCapShareOneOtherSeries() {
        let registry = MetricsRegistry()
        let counter = registry.counter("c_total", "Capped.", labels: ["id"])
        for index in 0..<(MetricsRegistry.maxSeries + 10) { counter.add(["\(index)"]) }
        let lines = registry.render().split(separator: "\n").filter { $0.hasPrefix("c_total{") }
        #expect(lines.count == MetricsRegistry.maxSeries + 1)
        #expect(lines.contains(#"c_total{id="_other"} 10"#))
    }

    @Test func rollupJournalFoldsCountByOutcomeAndRows() {
        let metrics = ServerMetrics()
        metrics.rollupJournalFolded(rows: 3)
        metrics.rollupJournalFolded(rows: 0)
        metrics.rollupJournalFoldFailed()
        let text = metrics.registry.render()
        #expect(MetricsEndpointTests.value(text, #"entitled_rollup_journal_folds_total{outcome="ok"}"#) == 2)
        #expect(MetricsEndpointTests.value(text, #"entitled_rollup_journal_folds_total{outcome="failed"}"#) == 1)
        #expect(MetricsEndpointTests.value(text, "entitled_rollup_journal_rows_folded_total") == 3)
    }
}

/// `GET /metrics` on the real server: scope, values that move with requests, and the projection
/// gauges kept incrementally equal to a recount.
@Suite(.serialized) struct MetricsEndpointTests {
    static let scraper = "Bearer prometheus-secret-0123456789"

    /// The value of one series (`name{labels}` exactly as rendered), nil when absent.
    static func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test(arguments: StoredBackend.all)
    func metricsMoveWithRequestsAndGaugesMatchARecount(backend: StoredBackend) async throws {
        var configuration = try SignedAPITests.configuration(trusting: TestSigning.ca)
        configuration.apiKeys.append(APIKey(name: "prometheus", secret: "prometheus-secret-0123456789", scopes: [.metrics]))
        let metrics = ServerMetrics()
        let store = try await backend.open(observer: metrics)
        let clock = VirtualClock(APIHarness.start)
        let assembled = try await buildApplication(
            configuration: configuration, clock: clock, store: store, fastPaths: testFastPaths, metrics: metrics)
        var settings = assembled.application.serverConfiguration(accessLog: nil)
        settings.port = 0
        settings.errorLog = nil
        let server = HTTPServer(configuration: settings, router: assembled.application.router)
        try server.start()
        defer { Task { [server, store] in await server.shutdown(); await store.close() } }
        let harness = StoredAPITests.Harness(port: server.port, store: store, clock: clock, configuration: configuration)
        func scrape() async throws -> String {
            let reply = try await harness.send("GET", "/metrics", auth: Self.scraper)
            #expect(reply.status == 200)
            #expect(reply.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
            return String(decoding: reply.body, as: UTF8.self)
        }

        // Credentials: none, a key without the scope, the scope.
        #expect(try await harness.send("GET", "/metrics").status == 401)
        #expect(try await harness.send("GET", "/metrics", auth: APIHarness.reader).status == 403)
        let before = try await scrape()
        #expect(Self.value(before, #"entitled_build_info{version="\#(ServerMetrics.version)"}"#) == 1)
        #expect(Self.value(before, #"entitled_customers{state="new"}"#) == 0)

        let token = try #require(try await harness.customer("u1").json["appAccountToken"] as? String)
        let notes = try StoredAPITests().steps(token: token)
        for note in notes { #expect(try await harness.postV2(note).status == 200) }
        #expect(try await harness.postV2(notes[0]).status == 200)  // a duplicate
        #expect(try await harness.postV2("not-a-jws").status == 400)
        _ = try await harness.send("GET", "/no/such/route")

        let after = try await scrape()
        let customerRoute = #"entitled_http_requests_total{method="GET",route="/v1/customers/{appUserId}",status="200"}"#
        #expect(Self.value(after, customerRoute) == 1)
        #expect(Self.value(after, #"entitled_http_requests_total{method="GET",route="unmatched",status="404"}"#) == 1)
        #expect(Self.value(after, #"entitled_http_requests_total{method="GET",route="/metrics",status="401"}"#) == 1)
        #expect(
            Self.value(after, #"entitled_notifications_total{version="2",type="SUBSCRIBED",subtype="INITIAL_BUY",outcome="accepted",code=""}"#)
                == 1)
        #expect(
            Self.value(after, #"entitled_notifications_total{version="2",type="SUBSCRIBED",subtype="INITIAL_BUY",outcome="duplicate",code=""}"#)
                == 1)
        #expect(Self.value(after, #"entitled_notifications_total{version="2",type="",subtype="",outcome="rejected",code="MALFORMED_PAYLOAD"}"#) == 1)
        #expect(Self.value(after, #"entitled_verification_duration_seconds_count{kind="notification"}"#) == 4)
        #expect(Self.value(after, "entitled_ledger_commit_duration_seconds_count") == 4)
        #expect((Self.value(after, "entitled_ledger_group_commit_size_count") ?? 0) >= 4)
        #expect(Self.value(after, "entitled_projection_lag_seconds_count") == 3)
        #expect(Self.value(after, #"entitled_customers{state="active"}"#) == 1)
        #expect(Self.value(after, #"entitled_customers{state="new"}"#) == 0)

        // Kept incrementally, the gauges equal a recount of the stored projections.
        let tally = try await store.projectionTally()
        for (state, count) in tally.customers {
            #expect(Self.value(after, #"entitled_customers{state="\#(state)"}"#) ?? 0 == Double(count), "\(state)")
        }
        #expect(!tally.subscriptions.isEmpty)
        for (status, count) in tally.subscriptions {
            #expect(Self.value(after, #"entitled_subscriptions{status="\#(status)"}"#) == Double(count), "\(status)")
        }
    }

    /// Each request counts in its method's, route's and status's series, whether its route's
    /// series were resolved by an earlier request or not; unknown methods count as `other`.
    @Test func requestsCountByMethodRouteAndStatus() {
        let metrics = ServerMetrics()
        for status in [200, 200, 404, 200] {
            metrics.record(CompletedRequest(method: .get, route: "/v1/customers/{appUserId}", status: status, seconds: 0.002))
        }
        metrics.record(CompletedRequest(method: .head, route: "/v1/customers/{appUserId}", status: 200, seconds: 0.002))
        metrics.record(CompletedRequest(method: HTTPMethod("BREW"), route: nil, status: 404, seconds: 0.001))
        metrics.record(CompletedRequest(method: HTTPMethod("BREW"), route: nil, status: 404, seconds: 0.001))
        let text = metrics.registry.render()
        let customer = #"method="GET",route="/v1/customers/{appUserId}""#
        #expect(Self.value(text, "entitled_http_requests_total{\(customer),status=\"200\"}") == 3)
        #expect(Self.value(text, "entitled_http_requests_total{\(customer),status=\"404\"}") == 1)
        #expect(Self.value(text, "entitled_http_request_duration_seconds_count{\(customer)}") == 4)
        #expect(
            Self.value(text, #"entitled_http_requests_total{method="HEAD",route="/v1/customers/{appUserId}",status="200"}"#) == 1)
        #expect(Self.value(text, #"entitled_http_requests_total{method="other",route="unmatched",status="404"}"#) == 2)
        #expect(!text.contains("BREW"))
    }

    @Test func metricsListenServesWithoutCredentials() async throws {
        let metrics = ServerMetrics()
        metrics.record(CompletedRequest(method: .get, route: "/healthz", status: 200, seconds: 0.001))
        var settings = HTTPServer.Configuration()
        settings.port = 0
        settings.accessLog = nil
        let server = HTTPServer(configuration: settings, router: metricsRouter(metrics))
        try server.start()
        let reply = try await Loopback.send(port: server.port, "GET", "/metrics")
        await server.shutdown()
        #expect(reply.status == 200)
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(Self.value(text, #"entitled_http_requests_total{method="GET",route="/healthz",status="200"}"#) == 1)
    }
}
