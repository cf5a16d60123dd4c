import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

/// `GET /v1/charts/{chart}`: who may call it, the problems bad parameters get, JSON and CSV.
@Suite struct ChartAPITests {
    static let console = APIHarness.console
    static let range = "from=2027-01-14&to=2027-03-31"

    @Test(arguments: [
        ("/v1/charts/mrr?\(ChartAPITests.range)", APIHarness.reader, 403, "FORBIDDEN"),
        ("/v1/charts/mrr?\(ChartAPITests.range)", nil, 401, "UNAUTHORIZED"),
        ("/v1/charts/nope?\(ChartAPITests.range)", ChartAPITests.console, 404, "CHART_NOT_FOUND"),
        ("/v1/charts/mrr?to=2027-03-31", ChartAPITests.console, 400, "MISSING_PARAMETER"),
        ("/v1/charts/mrr?from=2027-02-30&to=2027-03-31", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?from=2027-03-31&to=2027-01-01", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?from=2000-01-01&to=2199-12-31", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&interval=year", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&segment=colour", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&environment=Nope", ChartAPITests.console, 400, "INVALID_ENVIRONMENT"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&segment=environment&environment=Sandbox", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&store=itunes", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&product=", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&storefront=fra", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&storefront=FR", ChartAPITests.console, 400, "INVALID_REQUEST"),
        ("/v1/charts/mrr?\(ChartAPITests.range)&periodType=free", ChartAPITests.console, 400, "INVALID_REQUEST"),
    ] as [(String, String?, Int, String)])
    func accessAndBadParameters(_ path: String, _ auth: String?, _ status: Int, _ code: String) async throws {
        try await APIHarness.run(configuration: ConsoleAPITests.configuration()) { api in
            let reply = try await api.send("GET", path, auth: auth)
            #expect(reply.status == status)
            #expect(reply.code == code)
        }
    }

    /// A parameter given twice is refused by name, whatever its values (the same value twice too,
    /// or a name spelled with percent-escapes), rather than one value kept unsaid.
    @Test func aRepeatedParameterIsRefusedByName() async throws {
        try await APIHarness.run(configuration: ConsoleAPITests.configuration()) { api in
            for (name, query) in [
                ("from", "from=2027-01-01&\(Self.range)"), ("to", "\(Self.range)&to=2027-02-01"), ("interval", "\(Self.range)&interval=day&interval=month"),
                ("segment", "\(Self.range)&segment=store&segment=product"), ("environment", "\(Self.range)&environment=Sandbox&environment=Production"),
                ("store", "\(Self.range)&store=appStore&store=appStore"), ("product", "\(Self.range)&product=a&product=b"),
                ("storefront", "\(Self.range)&storefront=USA&storefront=FRA"), ("periodType", "\(Self.range)&periodType=trial&%70eriodType=normal"),
            ] {
                let reply = try await api.send("GET", "/v1/charts/actives?\(query)", auth: Self.console)
                #expect(reply.status == 400 && reply.code == "INVALID_REQUEST", "\(name): \(reply.text)")
                #expect(reply.json["detail"] as? String == "\(name) is given more than once: give it once", "\(name)")
            }
            // A parameter the chart does not read may repeat; one given once each answers.
            #expect(try await api.send("GET", "/v1/charts/actives?\(Self.range)&x=1&x=2", auth: Self.console).status == 200)
        }
    }

    /// Every chart id answers, with its definition, over an empty ledger.
    @Test func everyChartAnswers() async throws {
        try await APIHarness.run(configuration: ConsoleAPITests.configuration()) { api in
            for chart in ["revenue", "mrr", "arr", "mrr_movement", "actives", "actives_movement", "customers_new", "trials",
                          "trials_movement", "trial_conversion_rate", "conversion_to_paying", "subscription_retention",
                          "ltv_per_customer", "ltv_per_paying_customer", "churn", "refund_rate"] {
                let reply = try await api.send("GET", "/v1/charts/\(chart)?\(Self.range)&segment=environment", auth: Self.console)
                #expect(reply.status == 200, "\(chart)")
                #expect(reply.json["chart"] as? String == chart)
                #expect((reply.json["definition"] as? String)?.isEmpty == false)
                #expect(reply.json["environment"] == nil)
            }
        }
    }

    @Test func pointsAsJSONAndCSVWithConvertedMoney() async throws {
        var configuration = ConsoleAPITests.configuration()
        configuration.console = ConsoleSettings(reportingCurrency: "USD", rates: ["EUR": 1.08])
        try await APIHarness.run(configuration: configuration) { api in
            let start = APIHarness.start
            let day: Int64 = 86_400_000
            for (index, (user, currency, price)) in [("alice", "USD", Int64(9990)), ("bob", "EUR", 8990)].enumerated() {
                let token = try #require(try await api.customer(user).json["appAccountToken"] as? String)
                var bought = Apple.transaction(otid: "o\(index)", tid: "t\(index)", purchase: start, expires: start + 30 * day, token: token)
                bought.currency = currency
                bought.price = price
                #expect(try await api.postV2(Apple.notification(.subscribed, .initialBuy, signed: start, transaction: bought)).status == 200)
            }
            let json = try await api.send("GET", "/v1/charts/mrr?\(Self.range)&interval=month", auth: Self.console)
            #expect(json.status == 200)
            #expect(json.json["environment"] as? String == "Production")
            let points = try #require(json.json["points"] as? [[String: Any]])
            func mrr(_ date: String, _ currency: String, converted: Bool = false) -> Double? {
                points.first {
                    $0["date"] as? String == date && $0["currency"] as? String == currency && ($0["converted"] as? Bool ?? false) == converted
                }?["value"] as? Double
            }
            #expect(mrr("2027-01-14", "USD") == 9.99 && mrr("2027-01-14", "EUR") == 8.99)
            #expect(mrr("2027-01-14", "USD", converted: true) == 19.7)  // 9.99 + 8.99 × 1.08, to the cent
            #expect(mrr("2027-03-01", "USD") == nil, "expired on February 14: no MRR left in March")

            let csv = try await Loopback.send(
                port: api.port, "GET", "/v1/charts/actives?\(Self.range)&interval=month",
                headers: ["Authorization": Self.console, "Accept": "text/csv"])
            #expect(csv.status == 200)
            #expect(csv.headers["content-type"] == "text/csv; charset=utf-8")
            #expect(csv.text == "date,series,segment,currency,converted,value\r\n2027-01-14,actives,,,false,2\r\n")
        }
    }

    /// `store`, `product`, `storefront` and `periodType` hold the chart to one value, alone, together
    /// and with a split, in JSON and CSV.
    @Test func filteredPoints() async throws {
        try await APIHarness.run(configuration: ConsoleAPITests.configuration()) { api in
            let start = APIHarness.start
            let day: Int64 = 86_400_000
            for (index, (user, storefront)) in [("alice", "USA"), ("bob", "FRA")].enumerated() {
                let token = try #require(try await api.customer(user).json["appAccountToken"] as? String)
                var bought = Apple.transaction(otid: "o\(index)", tid: "t\(index)", purchase: start, expires: start + 30 * day, token: token)
                bought.storefront = storefront
                #expect(try await api.postV2(Apple.notification(.subscribed, .initialBuy, signed: start, transaction: bought)).status == 200)
            }
            func actives(_ query: String) async throws -> [String] {
                let reply = try await api.send("GET", "/v1/charts/actives?\(Self.range)&interval=month&\(query)", auth: Self.console)
                #expect(reply.status == 200, "\(query)")
                let points = try #require(reply.json["points"] as? [[String: Any]])
                return points.map { "\($0["segment"] as? String ?? "-") \($0["value"] as? Double ?? -1)" }
            }
            #expect(try await actives("store=appStore") == ["- 2.0"])
            #expect(try await actives("storefront=FRA") == ["- 1.0"])
            #expect(try await actives("storefront=FRA&segment=storefront") == ["FRA 1.0"])
            #expect(try await actives("storefront=USA&segment=product&periodType=normal&product=pro.monthly") == ["pro.monthly 1.0"])
            #expect(try await actives("storefront=DEU").allSatisfy { $0.hasSuffix(" 0.0") })
            #expect(try await actives("store=playStore").allSatisfy { $0.hasSuffix(" 0.0") })
            // The answer says what it is held to: exactly the filters given, none when none was.
            func filters(_ query: String) async throws -> [String: String]? {
                let reply = try await api.send("GET", "/v1/charts/actives?\(Self.range)&interval=month\(query)", auth: Self.console)
                #expect(reply.status == 200, "\(query)")
                return reply.json["filters"] as? [String: String]
            }
            #expect(try await filters("") == nil)
            #expect(try await filters("&segment=storefront&environment=Production") == nil)
            #expect(try await filters("&storefront=FRA&segment=storefront") == ["storefront": "FRA"])
            #expect(
                try await filters("&store=appStore&product=pro.monthly&storefront=USA&periodType=normal")
                    == ["store": "appStore", "product": "pro.monthly", "storefront": "USA", "periodType": "normal"])

            let csv = try await Loopback.send(
                port: api.port, "GET", "/v1/charts/actives?\(Self.range)&interval=month&storefront=USA",
                headers: ["Authorization": Self.console, "Accept": "text/csv"])
            #expect(csv.status == 200)
            #expect(csv.text == "date,series,segment,currency,converted,value\r\n2027-01-14,actives,,,false,1\r\n")
        }
    }
}
