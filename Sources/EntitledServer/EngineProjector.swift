import AppStore
import EntitledConfig
import Entitlements
import Foundation
import Storage

/// Storage's `Projector` on the entitlement engine: decodes a customer's stored facts (the engine's
/// own `Fact` JSON), evaluates them, and returns the indexed rows plus the state document.
///
/// The state document is the customer's API answer, rendered (``RenderedCustomer``, by the
/// ``ProjectionCache``; empty with the cache off) over the ``grantEnvironments`` merged
/// (``evaluate(facts:policy:now:environments:)``). It holds no instant but the next status
/// change, so it depends on the facts and on which statuses hold at `now`, not on the instant
/// itself — a rebuild then finds no difference unless a status changed. Rows cover every
/// environment the customer has facts in, each row saying its own.
public struct EngineProjector: Projector {
    public let policy: Policy
    /// Decodes the facts (taking those the ingest just encoded without decoding them again: on the
    /// writer thread that was the largest single cost) and renders the answer.
    public let cache: ProjectionCache
    /// The environments whose purchases the stored answer merges, primary first.
    public let grantEnvironments: [Entitlements.Environment]

    /// `apps[].grantEnvironments`' default.
    public static let defaultGrantEnvironments: [Entitlements.Environment] = [.production, .sandbox]

    public init(
        policy: Policy, cache: ProjectionCache = ProjectionCache(), grantEnvironments: [Entitlements.Environment] = Self.defaultGrantEnvironments
    ) {
        self.policy = policy
        self.cache = cache
        self.grantEnvironments = grantEnvironments
    }

    /// The projector for a configuration: its merged policy and grant environments.
    public init(configuration: Configuration, cache: ProjectionCache = ProjectionCache()) {
        self.init(
            policy: FactMapper.policy(for: configuration), cache: cache,
            grantEnvironments: FactMapper.grantEnvironments(for: configuration))
    }

    public func project(customer: Storage.CustomerRecord, facts: [StoredFact], now: Int64) throws -> CustomerProjection {
        let decoded = try decode(facts)
        var entitlementRows: [EntitlementRow] = []
        var subscriptionRows: [SubscriptionRow] = []
        for environment in Self.environments(of: decoded) {
            var state = evaluate(facts: decoded, policy: policy, now: now, environment: environment)
            state.evaluatedAt = 0
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
        var state = evaluate(facts: decoded, policy: policy, now: now, environments: grantEnvironments)
        state.evaluatedAt = 0
        // One row per subscription: keep the first environment's (the primary one comes first).
        var seen = Set<String>()
        subscriptionRows = subscriptionRows.filter { seen.insert($0.originalTransactionId).inserted }
        let body = CustomerBody(customer: customer, state: state, now: 0)
        let document = cache.document(for: body, scope: EvaluationContext.scope(grantEnvironments))
        return CustomerProjection(entitlements: entitlementRows, subscriptions: subscriptionRows, state: document)
    }

    /// False for a stored document the server replaces by itself when it reads it: an answer of an
    /// older ``RenderedCustomer/formatVersion``, or none (written with the cache off). Anything
    /// else — this format, or no rendered answer at all — is compared byte for byte. With the cache
    /// off, only empty documents are (it renders nothing to compare with).
    public func isComparable(stateDocument: [UInt8]) -> Bool {
        guard cache.enabled else { return stateDocument.isEmpty }
        guard !stateDocument.isEmpty else { return false }
        guard let version = RenderedCustomer.formatVersion(of: stateDocument) else { return true }
        return version >= RenderedCustomer.formatVersion
    }

    /// The engine facts of stored facts. Every row the server stores is an engine fact, so one that
    /// no longer decodes (a damaged row, a format this binary does not know) makes the customer
    /// unprojectable: an answer computed without it could grant or deny wrongly.
    func decode(_ facts: [StoredFact]) throws(UndecodableFact) -> [Fact] {
        var decoded: [Fact] = []
        decoded.reserveCapacity(facts.count)
        for stored in facts {
            guard let fact = cache.fact(stored.fact.payload) else {
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

    /// The App Store's environments in the order answers and rows list them.
    public static let environmentOrder: [Entitlements.Environment] = [.production, .sandbox, .xcode, .localTesting]

    /// Environments present, primary first: Production, then the others in a fixed order.
    static func environments(of facts: [Fact]) -> [Entitlements.Environment] {
        let present = Set(facts.map(\.environment))
        let known = environmentOrder.filter(present.contains)
        let others = present.subtracting(environmentOrder).sorted { $0.rawValue < $1.rawValue }
        return known + others
    }
}
