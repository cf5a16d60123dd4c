import AppStore
import Entitlements
import Foundation
import HTTPServer
import Storage
import Synchronization

/// The offerings, the current one, the targeting rules and the experiments at one version, decoded.
struct Paywall: Sendable {
    struct Offering: Sendable {
        var document: OfferingDocument
        /// The version of the offering's last change.
        var version: Int64
        var updatedAt: Int64
    }

    /// An experiment and its last change.
    struct ExperimentEntry: Sendable {
        var experiment: Experiment
        var version: Int64
        var updatedAt: Int64
    }

    var version: Int64
    var offerings: [String: Offering]
    var current: String?
    var rules: [TargetingRule]
    /// Every experiment, by id (a stored one that no longer decodes is left out: it shows nothing).
    var experimentEntries: [ExperimentEntry]
    var experiments: [Experiment] { experimentEntries.map(\.experiment) }

    /// `snapshot` decoded; a stored document that no longer decodes is left out (and a rule
    /// naming it matches no one: ``choose(for:)`` skips it).
    init(_ snapshot: PaywallSnapshot) {
        version = snapshot.version
        var offerings: [String: Offering] = [:]
        for stored in snapshot.offerings {
            guard let document = try? JSONDecoder().decode(OfferingDocument.self, from: Data(stored.document.utf8)) else { continue }
            offerings[stored.id] = Offering(document: document, version: stored.version, updatedAt: stored.updatedAt)
        }
        self.offerings = offerings
        current = snapshot.current
        rules = snapshot.targeting.flatMap { try? JSONDecoder().decode(TargetingBody.self, from: Data($0.utf8)).rules } ?? []
        experimentEntries = snapshot.experiments.compactMap { stored in
            (try? JSONDecoder().decode(Experiment.self, from: Data(stored.document.utf8)))
                .map { ExperimentEntry(experiment: $0, version: stored.version, updatedAt: stored.updatedAt) }
        }
    }

    /// The offering `audience` sees (the engine's ``chooseOffering(rules:current:audience:)``).
    func choose(for audience: Audience) -> (offering: Offering, ruleId: String?)? {
        let usable = rules.filter { offerings[$0.offeringId] != nil }
        guard let choice = chooseOffering(rules: usable, current: current, audience: audience),
            let offering = offerings[choice.offeringId]
        else { return nil }
        return (offering, choice.ruleId)
    }
}

/// The paywall held in memory for the hot path, kept current: replaced at once by this server's
/// changes, and re-read when the stored version differs, checked at most every
/// ``recheckMilliseconds`` (so another server's change is seen within that).
final class PaywallCache: Sendable {
    /// How long a copy is served before the stored version is checked again.
    static let recheckMilliseconds: Int64 = 1000

    let ledger: FactLedger
    let clock: any EpochClock
    private let held = Mutex<(paywall: Paywall, checkedAt: Int64)?>(nil)

    init(ledger: FactLedger, clock: any EpochClock) {
        self.ledger = ledger
        self.clock = clock
    }

    /// The paywall now: from memory while its check is recent, else after one version read (and a
    /// full read only when the version moved).
    func current() async throws -> Paywall {
        if let paywall = currentNow() { return paywall }
        let now = clock.nowMilliseconds()
        let copy = held.withLock { $0 }
        let version = try await Problems.store { () async throws(StorageError) in try await ledger.paywallVersion() }
        if let copy, copy.paywall.version == version {
            remember(copy.paywall, at: now)
            return copy.paywall
        }
        let paywall = Paywall(try await Problems.store { () async throws(StorageError) in try await ledger.paywall() })
        remember(paywall, at: now)
        return paywall
    }

    /// The paywall from memory while its check is recent; nil when ``current()`` must check the
    /// stored version first.
    func currentNow() -> Paywall? {
        let now = clock.nowMilliseconds()
        guard let copy = held.withLock({ $0 }), now - copy.checkedAt < Self.recheckMilliseconds, now >= copy.checkedAt else { return nil }
        return copy.paywall
    }

    /// Holds what a change of this server left.
    func replace(with snapshot: PaywallSnapshot) -> Paywall {
        let paywall = Paywall(snapshot)
        remember(paywall, at: clock.nowMilliseconds())
        return paywall
    }

    private func remember(_ paywall: Paywall, at now: Int64) {
        held.withLock { held in
            // A slower reader never puts back an older version than one already held.
            if let existing = held, existing.paywall.version > paywall.version { return }
            held = (paywall, now)
        }
    }
}

/// The offerings' changes, each checked against what is stored in the same transaction. Knows
/// no request.
struct OfferingChanges: Sendable {
    let ledger: FactLedger
    let cache: PaywallCache

    /// Why a change is refused, decided inside the transaction.
    enum Refusal: Error {
        case notFound(String)
        case inUse(String)
        case invalidTargeting(String)
        case invalidExperiment(String)
        case experimentLocked(String)
    }

    /// Applies what `decide` returns for the stored snapshot; the paywall after it.
    func change(actor: String?, now: Int64, _ decide: @escaping @Sendable (PaywallSnapshot) throws -> [PaywallChange]) async throws
        -> Paywall
    {
        let snapshot: PaywallSnapshot
        do {
            snapshot = try await ledger.store.changePaywall(actor: actor, now: now, decide)
        } catch let refusal as Refusal {
            switch refusal {
            case .notFound(let detail): throw HTTPError(.offeringNotFound, detail)
            case .inUse(let detail): throw HTTPError(.offeringInUse, detail)
            case .invalidTargeting(let detail): throw HTTPError(.invalidTargeting, detail)
            case .invalidExperiment(let detail): throw HTTPError(.invalidExperiment, detail)
            case .experimentLocked(let detail): throw HTTPError(.experimentLocked, detail)
            }
        } catch let error as StorageError {
            throw Problems.storage(error, invalidRequest: Problems.invalidRequest)
        } catch {
            throw Problems.storage(
                StorageError(.unavailable, "storage is unavailable", detail: String(describing: error)), invalidRequest: Problems.invalidRequest)
        }
        return cache.replace(with: snapshot)
    }

    /// Creates or replaces `document`; whether it was created (decided in the transaction).
    func put(_ document: OfferingDocument, actor: String, now: Int64) async throws -> (paywall: Paywall, created: Bool) {
        let text = String(decoding: try OfferingRules.sortedEncoder.encode(document), as: UTF8.self)
        let created = Mutex(false)
        let paywall = try await change(actor: actor, now: now) { before in
            created.withLock { $0 = before.offering(document.id) == nil }
            return [.putOffering(id: document.id, document: text)]
        }
        return (paywall, created.withLock { $0 })
    }

    /// Deletes the offering `id` unless it is current, a rule's or an experiment's not ended.
    func delete(_ id: String, actor: String, now: Int64) async throws -> Paywall {
        try await change(actor: actor, now: now) { before in
            guard before.offering(id) != nil else { throw Refusal.notFound("no offering \(id)") }
            if before.current == id { throw Refusal.inUse("\(id) is the current offering: make another one current first") }
            let rules = Paywall(before).rules.filter { $0.offeringId == id }.map(\.id)
            if !rules.isEmpty { throw Refusal.inUse("targeting rules \(rules.joined(separator: ", ")) show \(id): change them first") }
            let experiments = Paywall(before).experiments.filter { $0.status != .ended && $0.variants.contains { $0.offeringId == id } }
            if !experiments.isEmpty {
                throw Refusal.inUse("experiments \(experiments.map(\.id).joined(separator: ", ")) show \(id): end them first")
            }
            return [.deleteOffering(id: id)]
        }
    }

    /// Makes `id` the current offering.
    func setCurrent(_ id: String, actor: String, now: Int64) async throws -> Paywall {
        try await change(actor: actor, now: now) { before in
            guard before.offering(id) != nil else { throw Refusal.notFound("no offering \(id)") }
            return before.current == id ? [] : [.setCurrent(offeringId: id)]
        }
    }

    /// Replaces the targeting rules (their offerings checked again inside the transaction).
    func setTargeting(_ rules: [TargetingRule], actor: String, now: Int64) async throws -> Paywall {
        let text = String(decoding: try OfferingRules.sortedEncoder.encode(TargetingBody(rules: rules)), as: UTF8.self)
        return try await change(actor: actor, now: now) { before in
            if let missing = rules.first(where: { before.offering($0.offeringId) == nil }) {
                throw Refusal.invalidTargeting("rule \(missing.id): no offering \(missing.offeringId)")
            }
            return [.setTargeting(document: text)]
        }
    }
}
