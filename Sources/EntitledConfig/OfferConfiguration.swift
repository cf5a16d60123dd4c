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
