import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Exports
import Foundation
import HTTPServer
import Storage
import Testing

/// The console's page and JSON endpoints: who may call them, what bad queries get, and what a
/// purchase and a renewal look like in the overview, the search and the timeline.
@Suite struct ConsoleAPITests {
    static func configuration() -> Configuration {
        var configuration = APIHarness.configuration()
        configuration.apiKeys.append(APIKey(name: "console", secret: "console-secret-0123456789", scopes: [.console]))
        return configuration
    }

    @Test func thePageIsEmbeddedUnderAStrictPolicy() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let page = try await api.send("GET", "/console")
            #expect(page.status == 200)
            let csp = try #require(page.headers["content-security-policy"])
            #expect(csp.contains("script-src 'self'") && csp.contains("default-src 'none'") && !csp.contains("unsafe"))
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(html.contains(#"<script src="/console/console.js""#))
            #expect(html.components(separatedBy: "<script").count == 2, "one script element, and it has a src")
            #expect(!html.contains("http://") && !html.contains("https://"), "no third-party request")
            let script = try await api.send("GET", "/console/console.js")
            #expect(script.headers["content-type"]?.hasPrefix("text/javascript") == true)
            #expect(!String(decoding: script.body, as: UTF8.self).contains("https://"))
            #expect(try await api.send("GET", "/console/console.css").status == 200)
        }
    }

    @Test(arguments: [
        ("/v1/metrics/overview?from=2027-01-01&to=2027-01-31", APIHarness.reader, 403),
        ("/v1/metrics/overview?from=2027-01-01&to=2027-01-31", nil, 401),
        ("/v1/console/customers", APIHarness.reader, 403),
        ("/v1/console/health", APIHarness.writer, 403),
        ("/v1/metrics/overview?from=2027-01-01&to=2027-01-31", APIHarness.console, 200),
        ("/v1/metrics/overview?from=2027-01-01&to=2027-01-31", APIHarness.admin, 200),
        ("/v1/console/health", APIHarness.console, 200),
        ("/v1/metrics/overview?to=2027-01-31", APIHarness.console, 400),
        ("/v1/metrics/overview?from=2027-02-30&to=2027-03-01", APIHarness.console, 400),
        ("/v1/metrics/overview?from=2027-01-31&to=2027-01-01", APIHarness.console, 400),
        ("/v1/metrics/overview?from=2000-01-01&to=2199-12-31", APIHarness.console, 400),
        ("/v1/metrics/overview?from=2027-01-01&to=2027-01-31&interval=year", APIHarness.console, 400),
        ("/v1/metrics/overview?from=2027-01-01&to=2027-01-31&environment=Nope", APIHarness.console, 400),
        ("/v1/metrics/overview?from=%FF&to=2027-01-31", APIHarness.console, 400),
        ("/v1/console/customers?limit=0", APIHarness.console, 400),
        ("/v1/console/customers/nobody/timeline", APIHarness.console, 404),
    ] as [(String, String?, Int)])
    func accessAndBadQueries(_ path: String, _ auth: String?, _ status: Int) async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let reply = try await api.send("GET", path, auth: auth)
            #expect(reply.status == status)
        }
    }

    @Test func aPurchaseAndARenewalShowInTheOverviewSearchAndTimeline() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let day: Int64 = 86_400_000
            let start = APIHarness.start
            let token = try #require(try await api.customer("alice").json["appAccountToken"] as? String)
            let bought = Apple.transaction(tid: "t1", purchase: start, expires: start + 30 * day, token: token)
            #expect(try await api.postV2(Apple.notification(.subscribed, .initialBuy, signed: start, transaction: bought)).status == 200)
            var renewed = Apple.transaction(tid: "t2", purchase: start + 30 * day, expires: start + 60 * day, token: token)
            renewed.transactionReason = .renewal
            #expect(try await api.postV2(Apple.notification(.didRenew, signed: start + 30 * day, transaction: renewed)).status == 200)

            let overview = try await api.send(
                "GET", "/v1/metrics/overview?from=2027-01-14&to=2027-03-31&interval=month", auth: APIHarness.console)
            let series = try #require(overview.json["series"] as? [[String: Any]])
            #expect(series.map { $0["date"] as? String } == ["2027-01-14", "2027-02-01", "2027-03-01"])
            // Each point's level at the end of its last day: expired on March 16.
            #expect(series.map { $0["activeSubscriptions"] as? Int } == [1, 1, 0])
            #expect(series.map { $0["newSubscriptions"] as? Int } == [1, 0, 0])
            #expect(series.map { $0["renewals"] as? Int } == [0, 1, 0])
            #expect((series[0]["mrr"] as? [String: Double])?["USD"] == 9.99)
            #expect((series[1]["revenue"] as? [String: Double])?["USD"] == 9.99)
            #expect(series[0]["mrrReported"] == nil, "no reporting currency configured")
            let end = try await api.send("GET", "/v1/metrics/overview?from=2027-03-20&to=2027-03-20", auth: APIHarness.console)
            #expect((end.json["series"] as? [[String: Any]])?.first?["activeSubscriptions"] as? Int == 0)

            for query in ["alice", "ali", token, "o1", "t2"] {
                let found = try await api.send("GET", "/v1/console/customers?q=\(query)", auth: APIHarness.console)
                #expect((found.json["customers"] as? [[String: Any]])?.map { $0["appUserId"] as? String } == ["alice"], "\(query)")
            }
            let none = try await api.send("GET", "/v1/console/customers?q=zed", auth: APIHarness.console)
            #expect((none.json["customers"] as? [Any])?.isEmpty == true)

            let timeline = try await api.send("GET", "/v1/console/customers/alice/timeline", auth: APIHarness.console)
            let events = try #require(timeline.json["events"] as? [[String: Any]])
            #expect(events.map { $0["text"] as? String } == ["Renewed pro.monthly, $9.99", "Subscribed to pro.monthly, $9.99"])
            #expect((events.first?["raw"] as? [String])?.count == 2, "the notification and its transaction, one event")
            // The console key reads the customer's answer, as the page does, but cannot write.
            #expect(try await api.customer("alice", auth: APIHarness.console).status == 200)
            #expect(try await api.send("POST", "/v1/customers/alice/transactions", auth: APIHarness.console, json: "{}").status == 403)
        }
    }

    /// MRR in the reporting currency is the hand-computed sum of the converted currencies; a
    /// currency without a rate is listed, not converted.
    @Test func mrrIsSummedInTheReportingCurrency() async throws {
        var configuration = Self.configuration()
        configuration.console = ConsoleSettings(reportingCurrency: "USD", rates: ["EUR": 1.08, "GBP": 1.27])
        try await APIHarness.run(configuration: configuration) { api in
            let start = APIHarness.start
            let day: Int64 = 86_400_000
            for (index, (user, currency, price)) in [("alice", "USD", Int64(9990)), ("bob", "EUR", 8990), ("carol", "JPY", 1_200_000)].enumerated() {
                let token = try #require(try await api.customer(user).json["appAccountToken"] as? String)
                var bought = Apple.transaction(otid: "o\(index)", tid: "t\(index)", purchase: start, expires: start + 30 * day, token: token)
                bought.currency = currency
                bought.price = price
                #expect(try await api.postV2(Apple.notification(.subscribed, .initialBuy, signed: start, transaction: bought)).status == 200)
            }
            let overview = try await api.send("GET", "/v1/metrics/overview?from=2027-01-15&to=2027-01-15", auth: APIHarness.console)
            let point = try #require((overview.json["series"] as? [[String: Any]])?.first)
            #expect(point["mrr"] as? [String: Double] == ["USD": 9.99, "EUR": 8.99, "JPY": 1200])
            let reported = try #require(point["mrrReported"] as? [String: Any])
            #expect(reported["currency"] as? String == "USD")
            // 9.99 + 8.99 × 1.08 = 19.6992, to the cent; JPY has no rate and GBP no MRR.
            #expect(reported["amount"] as? Double == 19.70)
            #expect(reported["unconverted"] as? [String] == ["JPY"])
        }
    }

    /// Health comes from the counters the ingest keeps: per hour of the last 24, rejections by
    /// code, and each app's newest message even when it is older than the window (a scan of the
    /// window's messages could not say when a quiet app last spoke).
    @Test func healthComesFromTheIngestCounters() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let start = APIHarness.start
            let hour: Int64 = 3_600_000
            let token = try #require(try await api.customer("alice").json["appAccountToken"] as? String)
            let bought = Apple.transaction(tid: "t1", purchase: start, expires: start + 720 * hour, token: token)
            #expect(try await api.postV2(Apple.notification(.subscribed, .initialBuy, signed: start, transaction: bought)).status == 200)
            #expect(try await api.postV2("not-a-jws").code == "MALFORMED_PAYLOAD")
            api.clock.advance(by: 2 * hour)
            var renewed = Apple.transaction(tid: "t2", purchase: start + 2 * hour, expires: start + 1440 * hour, token: token)
            renewed.transactionReason = .renewal
            #expect(try await api.postV2(Apple.notification(.didRenew, signed: start + 2 * hour, transaction: renewed)).status == 200)

            let early = try await api.send("GET", "/v1/console/health", auth: APIHarness.console).json
            let hours = try #require(early["hours"] as? [[String: Any]])
            #expect(hours.map { [$0["accepted"] as? Int, $0["rejected"] as? Int] } == [[1, 1], [1, 0]])
            #expect(hours.first?["hour"] as? String == ISO8601.format(milliseconds: start / hour * hour))
            #expect((early["rejections"] as? [[String: Any]])?.map { "\($0["code"] ?? "")=\($0["count"] ?? "")" } == ["MALFORMED_PAYLOAD=1"])

            api.clock.advance(by: 48 * hour)
            #expect(try await api.postV2("not-a-jws").code == "MALFORMED_PAYLOAD")
            let late = try await api.send("GET", "/v1/console/health", auth: APIHarness.console).json
            #expect((late["hours"] as? [[String: Any]])?.map { [$0["accepted"] as? Int, $0["rejected"] as? Int] } == [[0, 1]])
            let last = try #require(late["lastNotifications"] as? [[String: Any]])
            #expect(last.map { $0["receivedAt"] as? String } == [ISO8601.format(milliseconds: start + 2 * hour)], "\(late)")
            #expect(last.first?["environment"] as? String == "Production")
        }
    }

    /// Each configured export on the health card: never run, then up to its committed watermark,
    /// with the last failure.
    @Test func healthListsEachExport() async throws {
        var configuration = Self.configuration()
        configuration.exports = [
            ExportSettings(destination: .file(directory: "/srv/first")), ExportSettings(destination: .file(directory: "/srv/second")),
        ]
        try await APIHarness.run(configuration: configuration) { api in
            let start = APIHarness.start
            let store = api.ledger.store
            #expect(try await store.claimExport("file:///srv/first", owner: "a", now: start, leaseUntil: start + 60_000, through: start - 300_000) != nil)
            #expect(try await store.finishExport("file:///srv/first", owner: "a", outcome: .committed(nextRunAt: start + 86_400_000), now: start))
            _ = try await store.claimExport("file:///srv/second", owner: "a", now: start, leaseUntil: start + 60_000, through: start - 300_000)
            _ = try await store.finishExport(
                "file:///srv/second", owner: "a", outcome: .failed(retryAt: start + 300_000, error: "EXPORT_FILE_SYSTEM: disk full"), now: start)
            let health = try await api.send("GET", "/v1/console/health", auth: APIHarness.console).json
            let exports = try #require(health["exports"] as? [[String: Any]])
            #expect(exports.map { $0["destination"] as? String } == ["file:///srv/first", "file:///srv/second"])
            #expect(exports[0]["watermark"] as? String == ISO8601.format(milliseconds: start - 300_000))
            #expect(exports[0]["nextRunAt"] as? String == ISO8601.format(milliseconds: start + 86_400_000))
            #expect(exports[1]["watermark"] == nil && exports[1]["failures"] as? Int == 1)
            #expect(exports[1]["lastError"] as? String == "EXPORT_FILE_SYSTEM: disk full")
        }
        // Without exports the list is empty.
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let health = try await api.send("GET", "/v1/console/health", auth: APIHarness.console).json
            #expect((health["exports"] as? [Any])?.isEmpty == true)
        }
    }
}
