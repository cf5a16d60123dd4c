import AppStore
import Entitlements
import Foundation
import HTTPServer

/// An offering: what one paywall sells, in order, with free `metadata` for its copy and layout.
/// Stored as this JSON (sorted keys) and answered as it is.
struct OfferingDocument: Codable, Hashable, Sendable {
    struct Products: Codable, Hashable, Sendable {
        var appStore: String?
        var playStore: String?
    }

    struct Package: Codable, Hashable, Sendable {
        var id: String
        var products: Products
    }

    var id: String
    var description: String?
    var metadata: RawJSON?
    var packages: [Package]
}

/// The rules an offering and the targeting rules obey, checked before anything is stored.
enum OfferingRules {
    /// The largest offering or targeting body.
    static let maxBodyBytes = 64 * 1024
    /// The largest `metadata`, as stored JSON.
    static let maxMetadataBytes = 16 * 1024
    static let maxPackages = 20
    static let maxDescriptionCharacters = 500
    static let maxRules = 100
    /// The most entries of one condition's list or attribute map.
    static let maxConditionEntries = 50
    /// Package ids with a meaning to apps (the others are the app's own).
    static let standardPackages: Set<String> = [
        "$weekly", "$monthly", "$two_month", "$three_month", "$six_month", "$annual", "$lifetime",
    ]

    /// `[A-Za-z0-9_.-]{1,64}`: offering, package and rule ids.
    static func isValidId(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        return (1...64).contains(bytes.count)
            && bytes.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || [UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-")].contains($0)
            }
    }

    /// The offering a `PUT /v1/offerings/{offeringId}` body describes, checked: its id (the
    /// path's; a body `id` must be the same), description, metadata size, packages (unique ids,
    /// a product for at least one store, App Store products among `products`, the configured ones).
    static func offering(id: String, body: [UInt8], products: Set<String>) throws -> OfferingDocument {
        guard body.count <= maxBodyBytes else { throw HTTPError.payloadTooLarge(limit: maxBodyBytes) }
        try RequestInput.checkDepth(body)
        guard isValidId(id), id != "current" else {
            throw HTTPError(.invalidOffering, "an offering id is [A-Za-z0-9_.-]{1,64} and not 'current'")
        }
        try knownMembers(body, allowed: ["id", "description", "metadata", "packages"], what: "an offering")
        struct Body: Decodable {
            var id: String?
            var description: String?
            var metadata: RawJSON?
            var packages: [OfferingDocument.Package]?
        }
        guard let parsed = try? JSONDecoder().decode(Body.self, from: Data(body)) else {
            throw HTTPError(
                .invalidOffering,
                #"the body must be {"description": "…", "metadata": {…}, "packages": [{"id": "…", "products": {"appStore": "…"}}]}"#)
        }
        if let bodyId = parsed.id, bodyId != id { throw HTTPError(.invalidOffering, "the body's id is not the path's") }
        if let description = parsed.description, description.count > maxDescriptionCharacters {
            throw HTTPError(.invalidOffering, "description is longer than \(maxDescriptionCharacters) characters")
        }
        if let metadata = parsed.metadata {
            guard case .object = metadata else { throw HTTPError(.invalidOffering, "metadata must be a JSON object") }
            guard let encoded = try? sortedEncoder.encode(metadata), encoded.count <= maxMetadataBytes else {
                throw HTTPError(.invalidOffering, "metadata is larger than \(maxMetadataBytes) bytes")
            }
        }
        guard let packages = parsed.packages, (1...maxPackages).contains(packages.count) else {
            throw HTTPError(.invalidOffering, "packages must list 1…\(maxPackages) packages")
        }
        var seen: Set<String> = []
        for package in packages {
            let standard = standardPackages.contains(package.id)
            guard standard || (isValidId(package.id) && !package.id.hasPrefix("$")) else {
                throw HTTPError(
                    .invalidOffering,
                    "\(package.id.prefix(64)): a package id is one of \(standardPackages.sorted().joined(separator: ", ")) or [A-Za-z0-9_.-]{1,64}")
            }
            guard seen.insert(package.id).inserted else { throw HTTPError(.invalidOffering, "package \(package.id) is listed twice") }
            let (appStore, playStore) = (package.products.appStore, package.products.playStore)
            guard appStore != nil || playStore != nil else {
                throw HTTPError(.invalidOffering, "package \(package.id) names no product (products.appStore or products.playStore)")
            }
            if let appStore, !products.contains(appStore) {
                throw HTTPError(.invalidOffering, "package \(package.id): \(appStore.prefix(150)) is not a configured product")
            }
            if let playStore, !(1...150).contains(playStore.utf8.count) {
                throw HTTPError(.invalidOffering, "package \(package.id): products.playStore must be 1…150 bytes")
            }
        }
        return OfferingDocument(id: id, description: parsed.description, metadata: parsed.metadata, packages: packages)
    }

    /// The rules a `PUT /v1/targeting` body gives, checked: unique ids, offerings that exist,
    /// conditions within bounds and of known names.
    static func targeting(body: [UInt8], offerings: Set<String>) throws -> [TargetingRule] {
        guard body.count <= maxBodyBytes else { throw HTTPError.payloadTooLarge(limit: maxBodyBytes) }
        try RequestInput.checkDepth(body)
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any], let raw = object["rules"] as? [Any]
        else { throw HTTPError(.invalidTargeting, #"the body must be {"rules": [{"id", "when": {…}, "offeringId"}]}"#) }
        guard raw.count <= maxRules else { throw HTTPError(.invalidTargeting, "at most \(maxRules) rules") }
        for case let rule as [String: Any] in raw {
            for key in rule.keys where !["id", "when", "offeringId"].contains(key) {
                throw HTTPError(.invalidTargeting, "\(key.prefix(64)) is not a member of a rule (id, when, offeringId)")
            }
            for key in (rule["when"] as? [String: Any] ?? [:]).keys where !conditionNames.contains(key) {
                throw HTTPError(.invalidTargeting, "\(key.prefix(64)) is not a condition (\(conditionNames.sorted().joined(separator: ", ")))")
            }
        }
        guard let rules = try? JSONDecoder().decode(TargetingBody.self, from: Data(body)).rules else {
            throw HTTPError(
                .invalidTargeting,
                "a rule is {\"id\": \"…\", \"when\": {…}, \"offeringId\": \"…\"}; states are \(AudienceState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var seen: Set<String> = []
        for rule in rules {
            guard isValidId(rule.id) else { throw HTTPError(.invalidTargeting, "a rule id is [A-Za-z0-9_.-]{1,64}") }
            guard seen.insert(rule.id).inserted else { throw HTTPError(.invalidTargeting, "rule \(rule.id) is listed twice") }
            guard offerings.contains(rule.offeringId) else {
                throw HTTPError(.invalidTargeting, "rule \(rule.id): no offering \(rule.offeringId.prefix(64))")
            }
            try check(rule.conditions, in: "rule \(rule.id)", code: .invalidTargeting)
        }
        return rules
    }

    static let conditionNames: Set<String> = [
        "storefronts", "attributes", "states", "minAppVersion", "maxAppVersion", "locales", "platforms",
    ]

    /// Checks conditions within bounds (`subject` names them in the problem's detail: `rule a`,
    /// `audience`), refused under `code`.
    static func check(_ c: TargetingConditions, in subject: String, code: ProblemCode) throws {
        func fail(_ detail: String) -> HTTPError { HTTPError(code, "\(subject): \(detail)") }
        for list in [c.storefronts, c.locales, c.platforms, c.states?.map(\.rawValue)] {
            if let list, !(1...maxConditionEntries).contains(list.count) {
                throw fail("a condition's list holds 1…\(maxConditionEntries) entries")
            }
        }
        if let storefronts = c.storefronts, !storefronts.allSatisfy({ $0.count == 3 && $0.allSatisfy { $0.isASCII && $0.isLetter } }) {
            throw fail("storefronts are ISO 3166-1 alpha-3 codes")
        }
        if let platforms = c.platforms, !platforms.allSatisfy({ (1...16).contains($0.count) && $0.allSatisfy { $0.isASCII && $0.isLetter } }) {
            throw fail("platforms are 1…16 letters (ios, macos, android, …)")
        }
        if let locales = c.locales,
            !locales.allSatisfy({ (2...35).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") } })
        {
            throw fail("locales are identifiers such as en or pt_BR")
        }
        for version in [c.minAppVersion, c.maxAppVersion].compactMap({ $0 }) where SemanticVersion(version) == nil {
            throw fail("\(version.prefix(64)) is not a version (1.2.3, 2.0-beta)")
        }
        if let attributes = c.attributes {
            guard (1...maxConditionEntries).contains(attributes.count) else { throw fail("attributes holds 1…\(maxConditionEntries) entries") }
            for (name, value) in attributes where !CustomerAttributes.isValidName(name) || value.utf8.count > CustomerAttributes.maxValueBytes {
                throw fail("\(name.prefix(64)) is not an attribute name, or its value is too long")
            }
        }
    }

    /// The encoder of stored documents: sorted keys, so equal documents are equal text.
    static var sortedEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// Refuses a top-level member not in `allowed` (a misspelt one would otherwise be dropped).
    static func knownMembers(_ body: [UInt8], allowed: Set<String>, what: String) throws {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw HTTPError(.invalidOffering, "the body must be a JSON object")
        }
        for key in object.keys where !allowed.contains(key) {
            throw HTTPError(.invalidOffering, "\(key.prefix(64)) is not a member of \(what) (\(allowed.sorted().joined(separator: ", ")))")
        }
    }
}

/// The targeting rules as sent, answered and stored: `{"rules": [{"id", "when", "offeringId"}]}`.
struct TargetingBody: Codable, Sendable {
    struct Rule: Codable, Sendable {
        var id: String
        var when: TargetingConditions?
        var offeringId: String
    }

    var rules: [TargetingRule]

    init(rules: [TargetingRule]) { self.rules = rules }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        rules = try c.decode([Rule].self, forKey: .rules).map {
            TargetingRule(id: $0.id, conditions: $0.when ?? TargetingConditions(), offeringId: $0.offeringId)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rules.map { Rule(id: $0.id, when: $0.conditions, offeringId: $0.offeringId) }, forKey: .rules)
    }

    enum CodingKeys: String, CodingKey { case rules }
}
