import Entitlements
import Foundation

/// How the ledger writes, reads and presents the engine's facts; storage evaluates them itself.
///
/// Storage keeps the engine's own `Fact`s (as the text ``encode(_:)`` writes, once) and, inside the
/// write transaction, projects every affected customer with the engine under ``policy``: one
/// `CustomerState` per environment the customer has facts in, indexed as entitlement and
/// subscription rows, and one stored as the state document reads serve
/// (``document(customer:state:)``): the ``grantEnvironments`` merged, or the primary environment's.
///
/// Must be pure and deterministic: the same facts and `now` give the same projection, which is what
/// makes ``LedgerStore/rebuild(projector:now:)`` meaningful. It is called on storage threads inside
/// transactions, so it must be fast and must not block.
public protocol Projector: Sendable {
    /// The policy every customer is evaluated with.
    var policy: Policy { get }
    /// The JSON text the ledger stores for a fact. A stored text is never written again, so the
    /// encoding may only change in ways ``decode(_:)`` still reads.
    func encode(_ fact: Fact) -> String
    /// The fact a stored text holds; nil when it is none this binary knows. The customer is then
    /// not projected (an answer computed without the fact could grant or deny wrongly).
    func decode(_ text: String) -> Fact?
    /// The state document stored for a customer: their primary environment's state (evaluated at
    /// `now`, its `evaluatedAt` left at 0) as reads serve it.
    /// - Throws: when this customer cannot be presented. The ledger contains the failure to this
    ///   customer: the facts still commit, the customer's stored projection is marked failed
    ///   (``StoredProjection/failure``) and every other customer is projected as usual; a later
    ///   successful projection clears the mark.
    func document(customer: CustomerRecord, state: CustomerState) throws -> [UInt8]
    /// The environments the state document merges, primary first
    /// (``evaluate(facts:policy:now:environments:)``); nil (the default): the customer's primary
    /// environment alone (Production when they have any Production facts, else the first they
    /// have facts in).
    var grantEnvironments: [Environment]? { get }
    /// Whether ``LedgerStore/compareProjections(projector:)`` may compare a stored state document
    /// byte for byte with a fresh one; false for one the projector's reader replaces by itself (an
    /// older format), compared by its rows alone. Default: true.
    func isComparable(stateDocument: [UInt8]) -> Bool
    /// Whether each projection also maintains the metric rollups (``ConsoleStore``) in its
    /// transaction. Default: false (the rollups stay empty).
    var maintainsMetrics: Bool { get }
    /// How a committed change's answer-change events are written: at the commit, or held back
    /// (``EventHold``) and released once the customer's history settles. Default: at the commit.
    var eventHold: EventHold? { get }
}

extension Projector {
    /// Foundation's JSON with sorted keys.
    public func encode(_ fact: Fact) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(fact)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Foundation's JSON decoder.
    public func decode(_ text: String) -> Fact? {
        try? JSONDecoder().decode(Fact.self, from: Data(text.utf8))
    }

    /// The primary environment alone.
    public var grantEnvironments: [Environment]? { nil }

    /// Projectors whose documents never change format: always comparable.
    public func isComparable(stateDocument: [UInt8]) -> Bool { true }

    /// No rollups.
    public var maintainsMetrics: Bool { false }

    /// Events derived at the commit.
    public var eventHold: EventHold? { nil }

    /// A customer's projection from all of their facts (ordered by `signedDate`, then ledger id).
    ///
    /// Rows cover every environment the customer has facts in, each row saying its own; the
    /// document is the ``grantEnvironments`` merged, or without them the primary environment's
    /// state (Production when they have any Production facts, else the first environment they
    /// have facts in). Nothing in it depends on the instant itself, only on which
    /// statuses hold at `now`, so a rebuild at another instant finds no difference unless a status
    /// changed.
    package func projection(customer: CustomerRecord, facts: [Fact], now: Int64) throws -> CustomerProjection {
        let (rows, primary) = rows(facts: facts, now: now)
        var state: CustomerState
        if let grantEnvironments {
            state = evaluate(facts: facts, policy: policy, now: now, environments: grantEnvironments)
        } else {
            state = primary ?? evaluate(facts: [], policy: policy, now: now, environment: .production)
        }
        state.evaluatedAt = 0
        return CustomerProjection(
            entitlements: rows.entitlements, subscriptions: rows.subscriptions, state: try document(customer: customer, state: state))
    }

    /// The projection's rows (its `state` left empty) and the primary environment's state.
    package func rows(facts: [Fact], now: Int64) -> (CustomerProjection, CustomerState?) {
        var entitlementRows: [EntitlementRow] = []
        var subscriptionRows: [SubscriptionRow] = []
        var primary: CustomerState?
        for environment in Environment.present(in: facts) {
            var state = evaluate(facts: facts, policy: policy, now: now, environment: environment)
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
        // One row per subscription: keep the first environment's (the primary one comes first).
        var seen = Set<String>()
        subscriptionRows = subscriptionRows.filter { seen.insert($0.originalTransactionId).inserted }
        return (CustomerProjection(entitlements: entitlementRows, subscriptions: subscriptionRows, state: []).canonical, primary)
    }
}

/// Storage's reference projector: facts as Foundation's sorted-keys JSON, and as the state
/// document the customer's ids beside their primary state, also as JSON. It serves the storage
/// tests, the crash child and `entitled bench store`; the server presents answers its own way
/// (`EntitledServer.FactLedger`).
public struct BasicProjector: Projector {
    public var policy: Policy
    public var maintainsMetrics: Bool
    /// How long events are held back (nil: derived at the commit).
    public var eventHold: EventHold?

    /// - Parameters:
    ///   - entitlements: product id → the entitlement it grants (auto-renewable products).
    ///   - maintainsMetrics: whether projections keep the metric rollups.
    public init(entitlements: [String: String] = [:], maintainsMetrics: Bool = false) {
        policy = Policy(products: entitlements.mapValues { ProductPolicy(type: .autoRenewable, entitlements: [$0]) })
        self.maintainsMetrics = maintainsMetrics
    }

    public func document(customer: CustomerRecord, state: CustomerState) throws -> [UInt8] {
        struct Document: Encodable {
            var appAccountToken: String
            var appUserId: String
            var state: CustomerState
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(
            try encoder.encode(Document(appAccountToken: customer.appAccountToken, appUserId: customer.appUserId, state: state)))
    }
}

/// What the ledger stores for a customer: entitlement and subscription rows indexed from their
/// states, and the state document. Storage's own row plumbing (its package's tests and benchmarks
/// read it), not API: callers hand in facts and read documents.
package struct CustomerProjection: Sendable, Hashable {
    /// Entitlement rows (stored sorted by entitlement, environment).
    package var entitlements: [EntitlementRow]
    /// Subscription rows (stored sorted by originalTransactionId).
    package var subscriptions: [SubscriptionRow]
    /// The state document (``Projector/document(customer:state:)``), returned as is.
    package var state: [UInt8]

    package init(entitlements: [EntitlementRow] = [], subscriptions: [SubscriptionRow] = [], state: [UInt8] = Array("{}".utf8)) {
        self.entitlements = entitlements
        self.subscriptions = subscriptions
        self.state = state
    }

    /// The same projection with rows in storage order, so projections compare by content.
    package var canonical: CustomerProjection {
        var copy = self
        copy.entitlements.sort { ($0.entitlement, $0.environment) < ($1.entitlement, $1.environment) }
        copy.subscriptions.sort { $0.originalTransactionId < $1.originalTransactionId }
        return copy
    }
}

/// One `entitlement_projections` row: an entitlement of one environment's `CustomerState`.
package struct EntitlementRow: Sendable, Hashable {
    package var entitlement: String
    /// The engine's `EntitlementStatus` raw value.
    package var status: String
    package var active: Bool
    package var productId: String?
    package var originalTransactionId: String?
    package var expiresAt: Int64?
    package var graceUntil: Int64?
    package var willRenew: Bool
    /// Environments never mix: one row per entitlement and environment.
    package var environment: String

    package init(
        entitlement: String, status: String, active: Bool, productId: String?, originalTransactionId: String?,
        expiresAt: Int64?, graceUntil: Int64?, willRenew: Bool, environment: String
    ) {
        self.entitlement = entitlement
        self.status = status
        self.active = active
        self.productId = productId
        self.originalTransactionId = originalTransactionId
        self.expiresAt = expiresAt
        self.graceUntil = graceUntil
        self.willRenew = willRenew
        self.environment = environment
    }
}

/// One `subscription_projections` row: a subscription group's current grant in one `CustomerState`.
package struct SubscriptionRow: Sendable, Hashable {
    package var originalTransactionId: String
    package var productId: String
    package var group: String?
    /// The grant's status raw value.
    package var status: String
    package var expiresAt: Int64?
    package var graceUntil: Int64?
    package var autoRenew: Bool
    package var environment: String

    package init(
        originalTransactionId: String, productId: String, group: String?, status: String, expiresAt: Int64?,
        graceUntil: Int64?, autoRenew: Bool, environment: String
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.group = group
        self.status = status
        self.expiresAt = expiresAt
        self.graceUntil = graceUntil
        self.autoRenew = autoRenew
        self.environment = environment
    }
}
