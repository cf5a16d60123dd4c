import AppStore
import Entitlements
import Foundation
import HTTPServer
import Storage
import Synchronization

/// The rules an experiment obeys, checked before anything is stored. Stored as the engine's
/// ``Experiment`` in JSON (sorted keys).
enum ExperimentRules {
    static let maxBodyBytes = 16 * 1024
    static let variantCounts = 2...10
    static let weights = 1...1_000_000
    /// Experiments running or paused at once: each one is checked on every customer's offering read.
    static let maxLive = 20
    /// Experiments stored in all (ended ones included: their results stay readable).
    static let maxStored = 500

    /// The experiment a `PUT /v1/experiments/{experimentId}` body describes, checked: its id, 2…10
    /// variants of existing offerings (each once) with integer weights 1…1,000,000, an audience of
    /// known conditions within bounds, a status.
    static func experiment(id: String, body: [UInt8], offerings: Set<String>) throws -> Experiment {
        guard body.count <= maxBodyBytes else { throw HTTPError.payloadTooLarge(limit: maxBodyBytes) }
        try RequestInput.checkDepth(body)
        func fail(_ detail: String) -> HTTPError { HTTPError(.invalidExperiment, detail) }
        guard OfferingRules.isValidId(id) else { throw fail("an experiment id is [A-Za-z0-9_.-]{1,64}") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw fail(#"the body must be {"variants": [{"offeringId", "weight"}], "audience": {…}, "status": "running"}"#)
        }
        for key in object.keys where !["variants", "audience", "status"].contains(key) {
            throw fail("\(key.prefix(64)) is not a member of an experiment (audience, status, variants)")
        }
        for case let variant as [String: Any] in object["variants"] as? [Any] ?? [] {
            for key in variant.keys where !["offeringId", "weight"].contains(key) {
                throw fail("\(key.prefix(64)) is not a member of a variant (offeringId, weight)")
            }
        }
        for key in (object["audience"] as? [String: Any] ?? [:]).keys where !OfferingRules.conditionNames.contains(key) {
            throw fail("\(key.prefix(64)) is not a condition (\(OfferingRules.conditionNames.sorted().joined(separator: ", ")))")
        }
        struct Body: Decodable {
            var variants: [ExperimentVariant]
            var audience: TargetingConditions?
            var status: ExperimentStatus
        }
        guard let parsed = try? JSONDecoder().decode(Body.self, from: Data(body)) else {
            throw fail(
                "variants are [{\"offeringId\": \"…\", \"weight\": 1…}] (integer weights), status one of "
                    + ExperimentStatus.allCases.map(\.rawValue).joined(separator: ", "))
        }
        guard variantCounts.contains(parsed.variants.count) else {
            throw fail("an experiment has \(variantCounts.lowerBound)…\(variantCounts.upperBound) variants")
        }
        var seen: Set<String> = []
        for variant in parsed.variants {
            guard weights.contains(variant.weight) else {
                throw fail("variant \(variant.offeringId.prefix(64)): a weight is an integer \(weights.lowerBound)…\(weights.upperBound)")
            }
            guard offerings.contains(variant.offeringId) else { throw fail("no offering \(variant.offeringId.prefix(64))") }
            guard seen.insert(variant.offeringId).inserted else { throw fail("offering \(variant.offeringId) is in two variants") }
        }
        let audience = parsed.audience ?? TargetingConditions()
        try OfferingRules.check(audience, in: "audience", code: .invalidExperiment)
        return Experiment(id: id, variants: parsed.variants, audience: audience, status: parsed.status)
    }
}

/// Experiments' changes, each a new version of the offerings (``OfferingChanges``), checked
/// against what is stored in the same transaction. Knows no request.
struct ExperimentChanges: Sendable {
    let changes: OfferingChanges

    /// Creates or replaces `experiment`; whether it was created. Refused: an offering gone
    /// meanwhile, an ended experiment changed, a variant's offering changed (results compare the
    /// variants as they were), more experiments than allowed.
    func put(_ experiment: Experiment, actor: String, now: Int64) async throws -> (paywall: Paywall, created: Bool) {
        let text = String(decoding: try OfferingRules.sortedEncoder.encode(experiment), as: UTF8.self)
        let created = Mutex(false)
        let paywall = try await changes.change(actor: actor, now: now) { before in
            if let missing = experiment.variants.first(where: { before.offering($0.offeringId) == nil }) {
                throw OfferingChanges.Refusal.invalidExperiment("no offering \(missing.offeringId)")
            }
            let stored = Paywall(before).experiments
            let previous = stored.first { $0.id == experiment.id }
            created.withLock { $0 = previous == nil && !before.experiments.contains { $0.id == experiment.id } }
            if let previous {
                if previous == experiment { return [] }
                if previous.status == .ended { throw OfferingChanges.Refusal.experimentLocked("\(experiment.id) has ended: it cannot change") }
                if previous.variants.map(\.offeringId) != experiment.variants.map(\.offeringId) {
                    throw OfferingChanges.Refusal.experimentLocked(
                        "\(experiment.id)'s variants show \(previous.variants.map(\.offeringId).joined(separator: ", ")): only their weights can change")
                }
            } else if before.experiments.count >= ExperimentRules.maxStored {
                throw OfferingChanges.Refusal.invalidExperiment("at most \(ExperimentRules.maxStored) experiments are stored")
            }
            let live = stored.filter { $0.status != .ended && $0.id != experiment.id }.count
            if experiment.status != .ended && live >= ExperimentRules.maxLive {
                throw OfferingChanges.Refusal.invalidExperiment("at most \(ExperimentRules.maxLive) experiments run or pause at once: end one first")
            }
            return [.putExperiment(id: experiment.id, document: text)]
        }
        return (paywall, created.withLock { $0 })
    }
}

/// One experiment as the admin API answers it.
struct ExperimentBody: Encodable {
    var entry: Paywall.ExperimentEntry
    var paywallVersion: Int64?

    enum Key: String, CodingKey { case id, variants, audience, status, version, updatedAt, paywallVersion }

    func encode(to encoder: any Encoder) throws {
        var c = NullEncoding(container: encoder.container(keyedBy: Key.self))
        let experiment = entry.experiment
        try c.put(experiment.id, .id)
        try c.put(experiment.variants, .variants)
        try c.put(experiment.audience, .audience)
        try c.put(experiment.status, .status)
        try c.put(entry.version, .version)
        try c.date(entry.updatedAt, .updatedAt)
        if let paywallVersion { try c.put(paywallVersion, .paywallVersion) }
    }
}
