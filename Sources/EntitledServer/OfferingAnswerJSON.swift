import AppStore
import Entitlements
import Foundation
import HTTPServer
import JSONCoding
import Synchronization

/// `GET /v1/customers/{appUserId}/offerings`' JSON written directly, byte for byte what
/// `JSONEncoder.entitledDefault` writes for a ``CustomerOfferingBody`` (whose `encode(to:)` stays
/// the definition; a test holds this writer to the same bytes). Each offering's `metadata` — free
/// JSON, the largest part — is encoded once per offering version and reused, so a read writes only
/// the customer's parts.
final class EncodedOfferings: Sendable {
    /// At most this many offerings' metadata are held; the admin API bounds their number only by
    /// the database.
    static let limit = 1000

    private let metadata = Mutex<[String: (version: Int64, bytes: [UInt8])]>([:])

    /// The answer's JSON.
    func bytes(_ body: CustomerOfferingBody) -> [UInt8] {
        let offering = body.offering
        let d = offering.document
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1024)
        JSONWriter.write(
            .object([
                ("appUserId", .string(body.appUserId)),
                ("version", .int(body.paywallVersion)),
                ("offeringVersion", .int(offering.version)),
                ("offeringId", .string(d.id)),
                ("description", d.description.map(AnswerJSON.Value.string) ?? .null),
                ("metadata", .raw(metadataBytes(offering))),
                ("packages", .array(body.packages.map(Self.value))),
                ("ruleId", body.ruleId.map(AnswerJSON.Value.string) ?? .null),
                ("experiment", Self.value(body.experiment)),
                ("states", .array(body.stateNames.map(AnswerJSON.Value.string))),
            ]), to: &bytes)
        return bytes
    }

    private static func value(_ experiment: ExperimentAssignment?) -> AnswerJSON.Value {
        guard let experiment else { return .null }
        return .object([("id", .string(experiment.experimentId)), ("variant", .int(Int64(experiment.variant)))])
    }

    private static func value(_ package: CustomerOfferingBody.PackageBody) -> AnswerJSON.Value {
        var products: [(String, AnswerJSON.Value)] = []
        if let appStore = package.products.appStore { products.append(("appStore", .string(appStore))) }
        if let playStore = package.products.playStore { products.append(("playStore", .string(playStore))) }
        return .object([
            ("id", .string(package.id)),
            ("products", .object(products)),
            (
                "eligibility",
                .object([
                    ("introductoryOffer", .bool(package.eligibility.introductoryOffer)),
                    ("winBackOfferIds", .array(package.eligibility.winBackOfferIds.map(AnswerJSON.Value.string))),
                ])
            ),
        ])
    }

    /// The offering's metadata as `JSONEncoder.entitledDefault` writes it, from the last read of
    /// the same offering version when held.
    private func metadataBytes(_ offering: Paywall.Offering) -> [UInt8] {
        let id = offering.document.id
        if let held = metadata.withLock({ $0[id] }), held.version == offering.version { return held.bytes }
        let value = offering.document.metadata ?? .object([:])
        let bytes = (try? JSONEncoder.entitledDefault.encode(value)).map(Array.init) ?? Array("{}".utf8)
        metadata.withLock { held in
            // Full (offerings created and deleted over time): start again.
            if held.count >= Self.limit { held.removeAll() }
            held[id] = (offering.version, bytes)
        }
        return bytes
    }
}

extension Paywall {
    /// Whether choosing among the rules reads the customer's attributes, given what the app said:
    /// a rule names attributes, or has a storefront, app version or locale condition the query
    /// leaves open (those fall back to the `$storefront`, `$appVersion`, `$locale` attributes).
    /// Every condition that chooses an offering must be counted here, or the poll-thread read would
    /// choose without attributes it needs.
    func readsAttributes(_ asked: CustomerOfferings.Asked) -> Bool {
        rules.contains { rule in
            let when = rule.conditions
            return when.attributes != nil || (when.storefronts != nil && asked.storefront == nil)
                || ((when.minAppVersion != nil || when.maxAppVersion != nil) && asked.appVersion == nil)
                || (when.locales != nil && asked.locale == nil)
        }
    }
}
