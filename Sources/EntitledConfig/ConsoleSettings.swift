import Foundation

/// The console's settings (the `console` section): the currency MRR is also reported in, and the
/// rates that convert other currencies into it.
public struct ConsoleSettings: Sendable, Equatable {
    /// ISO 4217 code MRR is also summed in (`mrrReported`); nil: per currency only.
    public var reportingCurrency: String?
    /// Units of the reporting currency per one unit of each other currency.
    public var rates: [String: Double] = [:]

    /// The most rates a file may list (there are fewer than 200 ISO 4217 currencies).
    public static let maxRates = 300

    public init(reportingCurrency: String? = nil, rates: [String: Double] = [:]) {
        self.reportingCurrency = reportingCurrency
        self.rates = rates
    }

    /// The rate converting `currency` into the reporting currency (1 for itself); nil when none is
    /// configured, so the amount is listed as unconverted rather than guessed.
    public func rate(_ currency: String) -> Double? {
        guard let reportingCurrency else { return nil }
        return currency == reportingCurrency ? 1 : rates[currency]
    }

    /// Whether `code` looks like an ISO 4217 code: three upper-case ASCII letters.
    public static func isCurrencyCode(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (65...90).contains($0) }
    }
}

extension ConfigurationLoader {
    /// The `console` section; each bad rate is recorded and the good ones kept.
    func console(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> ConsoleSettings {
        var object = try node.object()
        var settings = ConsoleSettings()
        object.read("reportingCurrency", problems) { node throws(ConfigurationError) in
            let code = try node.string()
            guard ConsoleSettings.isCurrencyCode(code) else {
                throw ConfigurationError(path: node.path, message: "expected an ISO 4217 code of three upper-case letters (USD)")
            }
            settings.reportingCurrency = code
        }
        let hasReportingCurrency = object.had("reportingCurrency")
        object.read("rates", problems) { node throws(ConfigurationError) in
            guard let values = node.value as? [String: Any] else { throw ConfigurationError(path: node.path, message: "expected an object") }
            guard values.count <= ConsoleSettings.maxRates else {
                throw ConfigurationError(path: node.path, message: "at most \(ConsoleSettings.maxRates) rates")
            }
            guard hasReportingCurrency else {
                throw ConfigurationError(path: node.path, message: "rates need console.reportingCurrency")
            }
            for code in values.keys.sorted() {
                let rateNode = Node(values[code] as Any, path: "\(node.path).\(code)")
                problems.check { () throws(ConfigurationError) in
                    guard ConsoleSettings.isCurrencyCode(code) else {
                        throw ConfigurationError(path: rateNode.path, message: "expected an ISO 4217 code of three upper-case letters (EUR)")
                    }
                    guard code != settings.reportingCurrency else {
                        throw ConfigurationError(path: rateNode.path, message: "the reporting currency's rate is 1; leave it out")
                    }
                    let rate = try rateNode.number()
                    guard rate > 0, rate.isFinite, rate <= 1e9 else {
                        throw ConfigurationError(path: rateNode.path, message: "expected a rate above 0 and at most 1e9")
                    }
                    settings.rates[code] = rate
                }
            }
        }
        object.finish(problems)
        return settings
    }
}
