import Entitlements
import Foundation
import Storage

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

    public init(policy: Policy) { self.policy = policy }

    public func project(customer: Storage.CustomerRecord, facts: [StoredFact], now: Int64) -> CustomerProjection {
        let decoded = Self.decode(facts)
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
        let body = CustomerBody(customer: StorageLedger.record(customer), state: state, now: 0)
        // Not renderable (it always is): an empty document sends reads to the slow path.
        let document = RenderedCustomer(body: body)?.document ?? []
        return CustomerProjection(entitlements: entitlementRows, subscriptions: subscriptionRows, state: document)
    }

    /// The engine facts among stored facts (rows that are not engine facts are skipped).
    static func decode(_ facts: [StoredFact]) -> [Fact] {
        let decoder = JSONDecoder()
        return facts.compactMap { try? decoder.decode(Fact.self, from: Data($0.fact.payload.utf8)) }
    }

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
