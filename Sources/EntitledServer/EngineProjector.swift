import AppStore
import Entitlements
import Foundation
import Storage
import Synchronization

/// Storage's `Projector` on the entitlement engine: decodes a customer's stored facts (the engine's
/// own `Fact` JSON), evaluates them, and returns the indexed rows plus the state document.
///
/// The state document is the customer's API answer, rendered (``RenderedCustomer``) from the
/// engine's `CustomerState` for their primary environment (Production when they have any
/// Production facts, else the first environment they have facts in). It holds no instant but the
/// next status change, so it depends on the facts and on which statuses hold at `now`, not on the
/// instant itself — a rebuild then finds no difference unless a status changed. Rows cover every
/// environment the customer has facts in.
public struct EngineProjector: Projector {
    public let policy: Policy
    /// Facts just turned into ledger rows, so that the projection that follows their ingest doesn't
    /// decode their JSON again (on the writer thread, where it was the largest single cost).
    let recent = RecentFacts(capacity: 4096)

    public init(policy: Policy) { self.policy = policy }

    public func project(customer: Storage.CustomerRecord, facts: [StoredFact], now: Int64) throws -> CustomerProjection {
        let decoded = try Self.decode(facts, recent: recent)
        let environments = Self.environments(of: decoded)
        var entitlementRows: [EntitlementRow] = []
        var subscriptionRows: [SubscriptionRow] = []
        var primary: CustomerState?
        for environment in environments {
            var state = evaluate(facts: decoded, policy: policy, now: now, environment: environment)
            state.evaluatedAt = 0
            if primary == nil { primary = state }
            for entitlement in state.entitlements {
                entitlementRows.append(
                    EntitlementRow(
                        entitlement: entitlement.id, status: entitlement.status.rawValue, active: entitlement.active,
                        productId: entitlement.productId, originalTransactionId: entitlement.originalTransactionId,
                        expiresAt: entitlement.expiresAt, graceUntil: entitlement.gracePeriodExpiresAt,
                        willRenew: entitlement.willRenew ?? false, environment: environment.rawValue))
            }
            for group in state.subscriptionGroups {
                guard let current = group.current else { continue }
                subscriptionRows.append(
                    SubscriptionRow(
                        originalTransactionId: current.originalTransactionId, productId: current.productId,
                        group: group.id, status: current.status.rawValue, expiresAt: current.expiresAt,
                        graceUntil: current.gracePeriodExpiresAt, autoRenew: current.willRenew ?? false,
                        environment: environment.rawValue))
            }
        }
        var state = primary ?? evaluate(facts: [], policy: policy, now: now, environment: .production)
        state.evaluatedAt = 0
        // One row per subscription: keep the first environment's (the primary one comes first).
        var seen = Set<String>()
        subscriptionRows = subscriptionRows.filter { seen.insert($0.originalTransactionId).inserted }
        let body = CustomerBody(customer: customer, state: state, now: 0)
        // Not renderable (it always is): an empty document sends reads to the slow path.
        let document = RenderedCustomer(body: body)?.document ?? []
        return CustomerProjection(entitlements: entitlementRows, subscriptions: subscriptionRows, state: document)
    }

    /// The engine facts of stored facts; those in `recent` are taken from there instead of
    /// decoded. Every row the server stores is an engine fact, so one that no longer decodes (a
    /// damaged row, a format this binary does not know) makes the customer unprojectable: an
    /// answer computed without it could grant or deny wrongly.
    static func decode(_ facts: [StoredFact], recent: RecentFacts? = nil) throws(UndecodableFact) -> [Fact] {
        var decoded: [Fact] = []
        decoded.reserveCapacity(facts.count)
        for stored in facts {
            guard let fact = recent?.take(stored.fact.payload) ?? fact(stored.fact.payload) else {
                throw UndecodableFact(id: stored.id, kind: stored.fact.kind)
            }
            decoded.append(fact)
        }
        return decoded
    }

    /// A stored fact whose payload is not an engine fact.
    struct UndecodableFact: Error, CustomStringConvertible {
        var id: Int64
        var kind: FactKind
        var description: String { "fact \(id) (\(kind)) does not decode as an engine fact" }
    }

    /// The engine fact a ledger payload holds, or nil when the payload is not one.
    static func fact(_ payload: String) -> Fact? {
        try? TapeJSONDecoder.decode(Fact.self, from: Array(payload.utf8), fallback: decoder)
    }

    // Never mutated after creation, so one instance serves every thread.
    private static let decoder = JSONDecoder()

    /// Environments present, primary first: Production, then the others in a fixed order.
    static func environments(of facts: [Fact]) -> [Entitlements.Environment] {
        let present = Set(facts.map(\.environment))
        let order: [Entitlements.Environment] = [.production, .sandbox, .xcode, .localTesting]
        let known = order.filter(present.contains)
        let others = present.subtracting(order).sorted { $0.rawValue < $1.rawValue }
        return known + others
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
}

/// A small first-in-first-out map from a fact's stored JSON to the fact it was encoded from.
///
/// The API encodes each verified fact to the JSON the ledger stores, and the ingest's projection
/// decodes that JSON again moments later. The facts are remembered here on the way in and taken
/// out by the projection; an entry that is never taken (no customer to project) is dropped once
/// `capacity` newer ones came in. Only exact JSON text matches, and the JSON is the fact's own
/// encoding, so a hit is the fact that decoding would give.
final class RecentFacts: Sendable {
    private struct State {
        var facts: [String: Fact] = [:]
        var order: [String?]
        var next = 0
    }

    private let state: Mutex<State>

    init(capacity: Int) {
        state = Mutex(State(order: Array(repeating: nil, count: max(1, capacity))))
    }

    func remember(_ fact: Fact, as payload: String) {
        state.withLock { state in
            if let evicted = state.order[state.next] { state.facts[evicted] = nil }
            state.order[state.next] = payload
            state.next = (state.next + 1) % state.order.count
            state.facts[payload] = fact
        }
    }

    /// The fact stored as `payload`, removed from the map; nil when it is not there.
    func take(_ payload: String) -> Fact? {
        state.withLock { $0.facts.removeValue(forKey: payload) }
    }
}
