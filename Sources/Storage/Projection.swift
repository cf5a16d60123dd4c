import Entitlements
import Foundation
import JSONCoding

/// How the ledger evaluates the engine's facts: a value, not a callback. Storage keeps the
/// engine's own `Fact`s (as sorted-keys JSON written with ``codec``, once) and, inside the write
/// transaction, projects every affected customer with the engine under ``policy``: one
/// `CustomerState` per environment the customer has facts in, indexed as entitlement and
/// subscription rows, and one stored in storage's own encoding (``CustomerDocument``): the
/// ``grantEnvironments`` merged, or the primary environment's. How an answer is presented is the
/// reader's concern (``StoredProjection/answer``).
///
/// The same facts and `now` give the same projection, which is what makes
/// ``LedgerStore/rebuild(projector:now:)`` meaningful.
public struct Projector: Sendable {
    /// The policy every customer is evaluated with.
    public var policy: Policy
    /// The environments the stored state merges, primary first
    /// (``evaluate(facts:policy:now:environments:)``); nil: the customer's primary environment
    /// alone (Production when they have any Production facts, else the first they have facts in).
    public var grantEnvironments: [Environment]?
    /// Whether each projection also maintains the metric rollups (``ConsoleStore``) in its
    /// transaction (false: the rollups stay empty).
    public var maintainsMetrics: Bool
    /// How a committed change's answer-change events are written: at the commit (nil), or held
    /// back (``EventHold``) and released once the customer's history settles.
    public var eventHold: EventHold?
    /// The JSON seam the facts' ledger text is written and read with: the fast paths or
    /// Foundation alone, the same bytes and facts either way.
    public let codec: JSONCodec
    /// The facts' ledger text, made with ``codec`` (the tests replace it to count or refuse the
    /// texts read).
    var factCoding: FactCoding

    /// A projector evaluating with `policy`.
    public init(
        policy: Policy, grantEnvironments: [Environment]? = nil, maintainsMetrics: Bool = false, eventHold: EventHold? = nil,
        codec: JSONCodec = JSONCodec()
    ) {
        self.policy = policy
        self.grantEnvironments = grantEnvironments
        self.maintainsMetrics = maintainsMetrics
        self.eventHold = eventHold
        self.codec = codec
        factCoding = FactCoding(codec: codec)
    }

    /// A projector whose policy grants, for each auto-renewable product id, the entitlement it
    /// maps to (the storage tests, the crash child and `entitled bench store`).
    public init(entitlements: [String: String] = [:], maintainsMetrics: Bool = false) {
        self.init(
            policy: Policy(products: entitlements.mapValues { ProductPolicy(type: .autoRenewable, entitlements: [$0]) }),
            maintainsMetrics: maintainsMetrics)
    }

    /// The JSON text the ledger stores for a fact.
    public func encode(_ fact: Fact) -> String { factCoding.encode(fact) }

    /// The fact a stored text holds; nil when it is none this binary knows. The customer is then
    /// not projected (an answer computed without the fact could grant or deny wrongly).
    public func decode(_ text: String) -> Fact? { factCoding.decode(text) }

    /// A customer's projection from all of their facts (ordered by `signedDate`, then ledger id).
    ///
    /// Rows cover every environment the customer has facts in, each row saying its own; the
    /// stored state is the ``grantEnvironments`` merged, or without them the primary environment's
    /// state (Production when they have any Production facts, else the first environment they
    /// have facts in). Nothing in it depends on the instant itself, only on which
    /// statuses hold at `now`, so a rebuild at another instant finds no difference unless a status
    /// changed.
    package func projection(customer: CustomerRecord, facts: [Fact], now: Int64) throws -> CustomerProjection {
        try projectionAndDocument(customer: customer, facts: facts, now: now).projection
    }

    /// ``projection(customer:facts:now:)`` and the document its `state` encodes: callers that
    /// need the same customer's answer again (an event's) compare documents rather than encode one.
    package func projectionAndDocument(customer: CustomerRecord, facts: [Fact], now: Int64) throws
        -> (projection: CustomerProjection, document: CustomerDocument)
    {
        let (rows, states) = evaluated(facts: facts, now: now)
        let document = CustomerDocument(customer: customer, environments: grantEnvironments, state: stored(states, facts: facts, now: now))
        let state = try document.encoded(codec: codec)
        return (CustomerProjection(entitlements: rows.entitlements, subscriptions: rows.subscriptions, state: state), document)
    }

    /// The document ``projection(customer:facts:now:)`` stores, evaluated but not encoded.
    package func document(customer: CustomerRecord, facts: [Fact], now: Int64) -> CustomerDocument {
        CustomerDocument(customer: customer, environments: grantEnvironments, state: stored(evaluated(facts: facts, now: now).states, facts: facts, now: now))
    }

    /// The stored state from each environment's: the ``grantEnvironments`` merged, or the primary
    /// environment's; its `evaluatedAt` 0.
    private func stored(_ states: [Environment: CustomerState], facts: [Fact], now: Int64) -> CustomerState {
        var state: CustomerState
        if let grantEnvironments {
            // The rows' evaluations reused: each environment evaluated once per projection, not
            // once for the rows and again for the stored state.
            state = evaluate(facts: facts, policy: policy, now: now, environments: grantEnvironments, reusing: states)
        } else {
            state = Environment.present(in: facts).first.flatMap { states[$0] }
                ?? evaluate(facts: [], policy: policy, now: now, environment: .production)
        }
        state.evaluatedAt = 0
        return state
    }

    /// The projection's rows (its `state` left empty) and the state of each environment the facts
    /// are in (its `evaluatedAt` left at 0), one evaluation each.
    private func evaluated(facts: [Fact], now: Int64) -> (rows: CustomerProjection, states: [Environment: CustomerState]) {
        var entitlementRows: [EntitlementRow] = []
        var subscriptionRows: [SubscriptionRow] = []
        var states: [Environment: CustomerState] = [:]
        for environment in Environment.present(in: facts) {
            var state = evaluate(facts: facts, policy: policy, now: now, environment: environment)
            state.evaluatedAt = 0
            states[environment] = state
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
        return (CustomerProjection(entitlements: entitlementRows, subscriptions: subscriptionRows, state: []).canonical, states)
    }
}

/// How facts become the ledger's text and back: `JSONEncoder`'s sorted-keys JSON of the engine's
/// `Fact`, byte for byte, and `JSONDecoder`'s reading of it, both through the ``JSONCodec`` seam
/// (its fast reader and writer give the same bytes and facts). A stored text is never written
/// again, so the encoding may only change in ways `decode` still reads.
struct FactCoding: Sendable {
    /// The text stored for a fact.
    var encode: @Sendable (Fact) -> String
    /// The fact a stored text holds; nil when it is none.
    var decode: @Sendable (String) -> Fact?

    init(codec: JSONCodec) {
        encode = { fact in (try? codec.encodeSorted(fact)).map { String(decoding: $0, as: UTF8.self) } ?? "" }
        decode = { text in try? codec.decode(Fact.self, from: Array(text.utf8)) }
    }
}

/// A customer's evaluated state as storage keeps it: `customer_states.state` and each event's
/// `answer`, in storage's own encoding (sorted-keys JSON), which no answer format of the server's
/// changes. What a reader presents is made from it; the ids are those of the customer when it was
/// projected.
public struct CustomerDocument: Sendable, Hashable, Codable {
    public var appUserId: String
    public var appAccountToken: String
    /// The customer's other ids, sorted.
    public var aliases: [String]
    /// The environments `state` merges, primary first; nil: the primary environment alone.
    public var environments: [Environment]?
    /// The state, its `evaluatedAt` left at 0.
    public var state: CustomerState

    public init(customer: CustomerRecord, environments: [Environment]?, state: CustomerState) {
        appUserId = customer.appUserId
        appAccountToken = customer.appAccountToken
        aliases = customer.aliases
        self.environments = environments
        self.state = state
    }

    /// The customer it names (its row id and creation time are not kept: 0).
    public var customer: CustomerRecord {
        CustomerRecord(id: 0, appUserId: appUserId, appAccountToken: appAccountToken, createdAt: 0, aliases: aliases)
    }

    /// Storage's encoding: `JSONEncoder`'s sorted-keys JSON, written through `codec`: with its
    /// fast paths by ``DocumentJSON`` (the same bytes).
    public func encoded(codec: JSONCodec = JSONCodec()) throws -> [UInt8] {
        if codec.fastPaths, let bytes = DocumentJSON.encode(self) { return bytes }
        return try codec.encodeSorted(self)
    }

    /// The document `bytes` encode; nil when they are none (empty: a state stored before storage
    /// kept its own, or a failed projection's).
    public init?(encoded bytes: [UInt8]) {
        guard !bytes.isEmpty, let document = try? StorageJSON.decoder.decode(CustomerDocument.self, from: Data(bytes)) else {
            return nil
        }
        self = document
    }
}

/// Storage's JSON decoder. Never mutated after creation, so one instance serves every thread.
enum StorageJSON {
    static let decoder = JSONDecoder()
}

/// What the ledger stores for a customer: entitlement and subscription rows indexed from their
/// states, and the encoded state (``CustomerDocument``). Storage's own row plumbing (its package's tests and benchmarks
/// read it), not API: callers hand in facts and read documents.
package struct CustomerProjection: Sendable, Hashable {
    /// Entitlement rows (stored sorted by entitlement, environment).
    package var entitlements: [EntitlementRow]
    /// Subscription rows (stored sorted by originalTransactionId).
    package var subscriptions: [SubscriptionRow]
    /// The state in storage's encoding (``CustomerDocument``).
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
package struct EntitlementRow: Sendable, Hashable, Decodable {
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
package struct SubscriptionRow: Sendable, Hashable, Decodable {
    package var originalTransactionId: String
    package var productId: String
    package var group: String?
    /// The grant's status raw value.
    package var status: String
    package var expiresAt: Int64?
    package var graceUntil: Int64?
    package var autoRenew: Bool
    package var environment: String

    /// Columns of `subscription_projections` (the group is `group_id`).
    private enum CodingKeys: String, CodingKey {
        case originalTransactionId, productId, group = "group_id", status, expiresAt, graceUntil, autoRenew, environment
    }

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
