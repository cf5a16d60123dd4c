import Entitlements
import Foundation

extension ConfigurationLoader {
    /// At most this many rules per app (each request walks them in order).
    static let maxRetentionRules = 100
    /// The longest rule id, storefront list, locale list or product list accepted.
    static let maxRetentionRuleIdBytes = 64
    static let maxRetentionListCount = 200
    static let paidMonthsRange = 0...1200

    /// Parses `apps[].retention`: `{"rules": [{"id", "when": {…}, "respond": {…}}], "default": {…}}`
    /// against the app already parsed (its products, offers, signing key, appAppleId).
    func retention(_ node: Node, app: App, _ problems: Problems) throws(ConfigurationError) -> RetentionRuleSet {
        var object = try node.object()
        if app.appAppleId == nil {
            problems.record(ConfigurationError(path: node.path, message: "needs appAppleId: requests are matched to the app by it"))
        }
        let renewables = app.products.filter { $0.type == .autoRenewable }
        var set = RetentionRuleSet()
        object.read("rules", problems) { value throws(ConfigurationError) in
            let nodes = try value.array()
            guard nodes.count <= Self.maxRetentionRules else {
                throw ConfigurationError(path: value.path, message: "at most \(Self.maxRetentionRules) rules")
            }
            var ids = Set<String>()
            set.rules = nodes.compactMap { element in
                problems.check { () throws(ConfigurationError) -> RetentionRule in
                    var rule = try element.object()
                    let idNode = try rule.require("id")
                    let id = try idNode.string()
                    guard (1...Self.maxRetentionRuleIdBytes).contains(id.utf8.count),
                        id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-_".contains($0)) }),
                        id != RetentionRuleSet.defaultRuleId
                    else {
                        throw ConfigurationError(
                            path: idNode.path, message: "a rule id is 1–64 ASCII letters, digits, '.', '_' or '-', and not 'default'")
                    }
                    guard ids.insert(id).inserted else { throw ConfigurationError(path: idNode.path, message: "duplicate rule id '\(id)'") }
                    var when = RetentionCondition()
                    if let whenNode = rule.take("when") { when = try condition(whenNode, renewables: renewables, problems) }
                    let scope = when.productIds.map { ids in renewables.filter { ids.contains($0.productId) } } ?? renewables
                    let respond = try answer(try rule.require("respond"), app: app, scope: scope, problems)
                    rule.finish(problems)
                    return RetentionRule(id: id, when: when, respond: respond)
                }
            }
        }
        object.read("default", problems) { value throws(ConfigurationError) in
            set.defaultAnswer = try answer(value, app: app, scope: renewables, problems)
        }
        object.finish(problems)
        return set
    }

    /// A rule's `when`; every key optional.
    private func condition(_ node: Node, renewables: [Product], _ problems: Problems) throws(ConfigurationError) -> RetentionCondition {
        var object = try node.object()
        var when = RetentionCondition()
        object.read("productIds", problems) { value throws(ConfigurationError) in
            when.productIds = Set(
                try strings(value) { element, id throws(ConfigurationError) in
                    guard renewables.contains(where: { $0.productId == id }) else {
                        throw ConfigurationError(path: element.path, message: "'\(id)' is not an auto-renewable product of this app")
                    }
                })
        }
        for (key, path) in [("minPaidMonths", \RetentionCondition.minPaidMonths), ("maxPaidMonths", \.maxPaidMonths)] {
            object.read(key, problems) { value throws(ConfigurationError) in when[keyPath: path] = try Self.bounded(value, Self.paidMonthsRange) }
        }
        if let minimum = when.minPaidMonths, let maximum = when.maxPaidMonths, minimum > maximum {
            problems.record(ConfigurationError(path: node.path + ".maxPaidMonths", message: "must not be less than minPaidMonths"))
        }
        object.read("periodTypes", problems) { value throws(ConfigurationError) in
            let names = PeriodType.allCases.map(\.rawValue).joined(separator: ", ")
            when.periodTypes = Set(
                try strings(value) { element, raw throws(ConfigurationError) in
                    guard PeriodType(rawValue: raw) != nil else {
                        throw ConfigurationError(path: element.path, message: "unknown period type '\(raw)' (\(names))")
                    }
                }.compactMap(PeriodType.init(rawValue:)))
        }
        for (key, path) in [
            ("offerRedeemed", \RetentionCondition.offerRedeemed), ("billingIssue", \.billingIssue), ("refunded", \.refunded),
        ] {
            object.read(key, problems) { value throws(ConfigurationError) in when[keyPath: path] = try value.bool() }
        }
        object.read("storefronts", problems) { value throws(ConfigurationError) in
            when.storefronts = Set(
                try strings(value) { element, code throws(ConfigurationError) in
                    guard code.count == 3, code.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
                        throw ConfigurationError(path: element.path, message: "a storefront is Apple's three-letter code, e.g. USA")
                    }
                })
        }
        object.read("locales", problems) { value throws(ConfigurationError) in
            when.locales = Set(
                try strings(value) { element, locale throws(ConfigurationError) in
                    guard (2...35).contains(locale.utf8.count),
                        locale.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
                    else {
                        throw ConfigurationError(path: element.path, message: "a locale is a language tag such as en-US or en")
                    }
                })
        }
        object.finish(problems)
        return when
    }

    /// A non-empty, bounded list of strings, each checked by `check`.
    private func strings(_ node: Node, _ check: (Node, String) throws(ConfigurationError) -> Void) throws(ConfigurationError) -> [String] {
        let elements = try node.array()
        guard (1...Self.maxRetentionListCount).contains(elements.count) else {
            throw ConfigurationError(path: node.path, message: "list 1–\(Self.maxRetentionListCount) values")
        }
        var values: [String] = []
        for element in elements {
            let value = try element.string()
            try check(element, value)
            values.append(value)
        }
        return values
    }

    /// A `respond` (or `default`): exactly one of `message`, `alternateProduct`, `promotionalOffer`,
    /// valid for every product in `scope` (the products the rule can answer for).
    private func answer(_ node: Node, app: App, scope: [Product], _ problems: Problems) throws(ConfigurationError) -> RetentionAnswer {
        var object = try node.object()
        let kinds = ["message", "alternateProduct", "promotionalOffer"]
        let given = kinds.compactMap { kind in object.take(kind).map { (kind, $0) } }
        object.finish(problems)
        guard given.count == 1, let (kind, body) = given.first else {
            throw ConfigurationError(path: node.path, message: "give exactly one of message, alternateProduct, promotionalOffer")
        }
        var fields = try body.object()
        let messageIdentifier = try self.messageIdentifier(try fields.require("messageIdentifier"))
        defer { fields.finish(problems) }
        switch kind {
        case "message":
            return .message(messageIdentifier: messageIdentifier)
        case "alternateProduct":
            let productNode = try fields.require("productId")
            let productId = try productNode.string()
            guard let alternate = app.products.first(where: { $0.productId == productId && $0.type == .autoRenewable }) else {
                throw ConfigurationError(path: productNode.path, message: "'\(productId)' is not an auto-renewable product of this app")
            }
            for product in scope where product.productId == productId || product.subscriptionGroup != alternate.subscriptionGroup {
                throw ConfigurationError(
                    path: productNode.path,
                    message: product.productId == productId
                        ? "the rule can answer for '\(productId)' itself: limit it with when.productIds"
                        : "'\(product.productId)' is not in the subscription group of '\(productId)': limit the rule with when.productIds")
            }
            return .alternateProduct(messageIdentifier: messageIdentifier, productId: productId)
        default:
            let offerNode = try fields.require("offerId")
            let offerId = try offerNode.string()
            if app.signingKey == nil {
                throw ConfigurationError(path: offerNode.path, message: "needs the app's signingKey: the offer is signed with it")
            }
            for product in scope where !product.promotionalOffers.contains(offerId) {
                throw ConfigurationError(
                    path: offerNode.path,
                    message: "'\(offerId)' is not in products[\(product.productId)].offers.promotional (limit the rule with when.productIds)")
            }
            return .promotionalOffer(messageIdentifier: messageIdentifier, offerId: offerId)
        }
    }

    /// Apple's message identifiers are UUIDs.
    private func messageIdentifier(_ node: Node) throws(ConfigurationError) -> String {
        let raw = try node.string()
        guard UUID(uuidString: raw) != nil else {
            throw ConfigurationError(path: node.path, message: "a messageIdentifier is the UUID the message was uploaded with")
        }
        return raw
    }
}
