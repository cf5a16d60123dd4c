import struct Entitlements.WinBackOfferRule

extension ConfigurationLoader {
    /// The longest offer identifier accepted (App Store Connect's reference names are shorter).
    static let maxOfferIdBytes = 64
    /// Bounds of a win-back offer's lapse window, in days.
    static let lapsedDaysRange = 0...3650

    /// Parses `products[].offers`: `{"promotional": ["id", …], "winBack": [{"offerId", "minimumLapsedDays",
    /// "maximumLapsedDays"}]}`. Identifiers are unique per product.
    func offers(_ node: Node, into product: inout Product, _ problems: Problems) throws(ConfigurationError) {
        var object = try node.object()
        var seen = Set<String>()
        if let value = object.take("promotional") {
            product.promotionalOffers = try value.array().map { element throws(ConfigurationError) in
                try offerId(element, seen: &seen)
            }
        }
        if let value = object.take("winBack") {
            product.winBackOffers = try value.array().map { element throws(ConfigurationError) in
                var rule = try element.object()
                let id = try offerId(try rule.require("offerId"), seen: &seen)
                let minimum = try lapsedDays(try rule.require("minimumLapsedDays"))
                var maximum: Int?
                if let node = rule.take("maximumLapsedDays") {
                    maximum = try lapsedDays(node)
                    guard maximum! > minimum else {
                        throw ConfigurationError(path: node.path, message: "must be greater than minimumLapsedDays")
                    }
                }
                rule.finish(problems)
                return WinBackOfferRule(offerId: id, minimumLapsedDays: minimum, maximumLapsedDays: maximum)
            }
        }
        object.finish(problems)
    }

    /// An offer identifier: 1–64 ASCII letters, digits, `.`, `_` or `-`, not seen before on this product.
    private func offerId(_ node: Node, seen: inout Set<String>) throws(ConfigurationError) -> String {
        let id = try node.string()
        guard (1...Self.maxOfferIdBytes).contains(id.utf8.count),
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-_".contains($0)) })
        else {
            throw ConfigurationError(path: node.path, message: "an offer identifier is 1–64 ASCII letters, digits, '.', '_' or '-'")
        }
        guard seen.insert(id).inserted else { throw ConfigurationError(path: node.path, message: "duplicate offer '\(id)'") }
        return id
    }

    private func lapsedDays(_ node: Node) throws(ConfigurationError) -> Int {
        let days = try node.int()
        guard Self.lapsedDaysRange.contains(days) else {
            throw ConfigurationError(
                path: node.path, message: "must be between \(Self.lapsedDaysRange.lowerBound) and \(Self.lapsedDaysRange.upperBound)")
        }
        return days
    }
}

/// The `offerSigning` section: how fast offer signatures are handed out (token buckets per
/// customer and per signing key) and how long their log (`offer_signatures`) is kept.
public struct OfferSigningSettings: Sendable, Equatable {
    /// Signatures one customer may get at once…
    public var customerBurst = 10
    /// …and regains per minute.
    public var customerPerMinute = 10
    /// Signatures one signing key (an app's `signingKey`) may make at once, all customers together…
    public var keyBurst = 200
    /// …and regains per second.
    public var keyPerSecond = 50
    /// A logged signature is deleted this many days after it was made (by the hourly purge).
    public var retentionDays = 180

    public static let customerBurstRange = 1...1000
    public static let customerPerMinuteRange = 1...6000
    public static let keyBurstRange = 1...100_000
    public static let keyPerSecondRange = 1...100_000
    public static let retentionDaysRange = 1...3650

    public init() {}
}

extension ConfigurationLoader {
    /// Parses `offerSigning`; every key is optional and bounded.
    func offerSigningSettings(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> OfferSigningSettings {
        var object = try node.object()
        var settings = OfferSigningSettings()
        let keys: [(String, WritableKeyPath<OfferSigningSettings, Int>, ClosedRange<Int>)] = [
            ("customerBurst", \.customerBurst, OfferSigningSettings.customerBurstRange),
            ("customerPerMinute", \.customerPerMinute, OfferSigningSettings.customerPerMinuteRange),
            ("keyBurst", \.keyBurst, OfferSigningSettings.keyBurstRange),
            ("keyPerSecond", \.keyPerSecond, OfferSigningSettings.keyPerSecondRange),
            ("retentionDays", \.retentionDays, OfferSigningSettings.retentionDaysRange),
        ]
        for (name, path, range) in keys {
            object.read(name, problems) { value throws(ConfigurationError) in settings[keyPath: path] = try Self.bounded(value, range) }
        }
        object.finish(problems)
        return settings
    }
}
