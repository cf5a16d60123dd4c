import EntitledConfig
import Foundation
import Testing

/// The `console` section: the reporting currency and its rates.
@Suite struct ConsoleConfigurationTests {
    let loader = ConfigurationLoader(environment: [:])

    func parse(_ json: String) throws -> Configuration { try loader.parse(Data(json.utf8)) }

    @Test(arguments: [
        (#"{}"#, ConsoleSettings()),
        (#"{"console": {}}"#, ConsoleSettings()),
        (#"{"console": {"reportingCurrency": "USD"}}"#, ConsoleSettings(reportingCurrency: "USD")),
        (#"{"console": {"reportingCurrency": "EUR", "rates": {"USD": 0.93, "JPY": 0.0061}}}"#,
         ConsoleSettings(reportingCurrency: "EUR", rates: ["USD": 0.93, "JPY": 0.0061])),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"GBP": 2}}}"#, ConsoleSettings(reportingCurrency: "USD", rates: ["GBP": 2])),
    ])
    func validSections(_ json: String, _ expected: ConsoleSettings) throws {
        #expect(try parse(json).console == expected)
    }

    /// Each broken section and the key path its error must name.
    @Test(arguments: [
        (#"{"console": []}"#, "console", "expected an object"),
        (#"{"console": {"currency": "USD"}}"#, "console.currency", "unknown key"),
        (#"{"console": {"reportingCurrency": "usd"}}"#, "console.reportingCurrency", "ISO 4217"),
        (#"{"console": {"reportingCurrency": "US"}}"#, "console.reportingCurrency", "ISO 4217"),
        (#"{"console": {"reportingCurrency": 840}}"#, "console.reportingCurrency", "expected a string"),
        (#"{"console": {"rates": {"EUR": 1.08}}}"#, "console.rates", "need console.reportingCurrency"),
        (#"{"console": {"reportingCurrency": "USD", "rates": []}}"#, "console.rates", "expected an object"),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"eur": 1.08}}}"#, "console.rates.eur", "ISO 4217"),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"EURO": 1.08}}}"#, "console.rates.EURO", "ISO 4217"),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"USD": 1}}}"#, "console.rates.USD", "rate is 1"),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"EUR": 0}}}"#, "console.rates.EUR", "above 0"),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"EUR": -1.08}}}"#, "console.rates.EUR", "above 0"),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"EUR": 1e300}}}"#, "console.rates.EUR", "at most 1e9"),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"EUR": "1.08"}}}"#, "console.rates.EUR", "expected a number"),
        (#"{"console": {"reportingCurrency": "USD", "rates": {"EUR": true}}}"#, "console.rates.EUR", "expected a number"),
    ])
    func invalidSections(_ json: String, _ path: String, _ fragment: String) {
        #expect {
            _ = try parse(json)
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.path == path && error.message.contains(fragment)
        }
    }

    @Test func tooManyRatesAreRefused() {
        var codes: [String] = []
        for a in UInt8(65)...90 { for b in UInt8(65)...90 { codes.append(String(decoding: [a, b, 65], as: UTF8.self)) } }
        let rates = codes.prefix(ConsoleSettings.maxRates + 1).map { "\"\($0)\": 1.5" }.joined(separator: ", ")
        #expect {
            _ = try parse(#"{"console": {"reportingCurrency": "XXX", "rates": {"# + rates + "}}}")
        } throws: { error in
            (error as? ConfigurationError)?.path == "console.rates"
        }
    }

    @Test func everyBadRateIsReportedAndOnlyGoodOnesKept() {
        #expect {
            _ = try parse(#"{"console": {"reportingCurrency": "USD", "rates": {"EUR": 1.08, "GBP": -1, "jpy": 1}}}"#)
        } throws: { error in
            (error as? ConfigurationError)?.all.map(\.path) == ["console.rates.GBP", "console.rates.jpy"]
        }
    }
}
