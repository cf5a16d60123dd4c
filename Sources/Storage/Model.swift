// Public value types of the ledger. Times are milliseconds since the Unix epoch (`Int64`),
// the unit Apple uses in signed payloads; `now` is always a parameter, never read from a clock here.

import Entitlements

/// Where a received message came from.
public enum IngestSource: String, Sendable, Hashable, CaseIterable {
    /// App Store Server Notifications V2 (signed).
    case appleV2 = "apple-v2"
    /// App Store Server Notifications V1 (legacy, unsigned JSON).
    case appleV1 = "apple-v1"
    /// A signed transaction posted by the app or the app's backend.
    case client
    /// Produced by the local App Store simulator.
    case simulator
    /// A V2 notification read back from Apple's notification history (reconciliation).
    case reconcile
}

/// A message as received, before or without any interpretation: it is stored verbatim.
public struct ReceivedMessage: Sendable, Hashable {
    /// Apple's `notificationUUID`; unique among accepted messages. Nil for messages without one
    /// (client posts, imports), which are then deduplicated only by their facts.
    public var notificationUUID: String?
    /// Where the message came from.
    public var source: IngestSource
    /// The raw body, byte for byte.
    public var body: [UInt8]
    /// When the server received it (ms since the epoch).
    public var receivedAt: Int64
    /// Apple's `notificationType`, when known (for history and audit only).
    public var notificationType: String?
    /// Apple's `subtype`, when known.
    public var subtype: String?

    /// Creates a received message.
    public init(
        notificationUUID: String?, source: IngestSource, body: [UInt8], receivedAt: Int64,
        notificationType: String? = nil, subtype: String? = nil
    ) {
        self.notificationUUID = notificationUUID
        self.source = source
        self.body = body
        self.receivedAt = receivedAt
        self.notificationType = notificationType
        self.subtype = subtype
    }
}

extension ReceivedMessage {
    /// Most bytes of a rejected message's body the ledger keeps (with the whole body's SHA-256
    /// and size): enough to see what it was, too little for forged bodies to fill the disk.
    public static let maxRejectedBodyBytes = 4096
}

/// What a fact is: which kind of signed payload it was decoded from.
public struct FactKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The kind as stored (`transaction`, `renewal`, …).
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A signed notification payload (`signedPayload`).
    public static let notification = FactKind(rawValue: "notification")
    /// A signed transaction (`JWSTransaction`).
    public static let transaction = FactKind(rawValue: "transaction")
    /// A signed renewal info (`JWSRenewalInfo`).
    public static let renewal = FactKind(rawValue: "renewal")
    /// A signed app transaction.
    public static let appTransaction = FactKind(rawValue: "appTransaction")
    /// A verified receipt (V1 / legacy).
    public static let receipt = FactKind(rawValue: "receipt")
    public var description: String { rawValue }
}

/// A verified fact to append to the ledger.
///
/// The ledger is keyed so that a replay is a no-op: a fact is unique by its kind and the
/// SHA-256 of its signed content (a JWS's signing input, without the signature).
public struct IncomingFact: Sendable, Hashable {
    /// The kind of payload.
    public var kind: FactKind
    /// The signed payload exactly as received (compact JWS), or the raw receipt.
    public var jws: String {
        didSet { jwsSHA256 = FactDigest.hex(jws) }
    }
    /// Lower-case hex SHA-256 of what `jws` signs (its `header.payload`; all of it when it is not
    /// a compact JWS), also when a read leaves `jws` empty: with the kind, what makes a fact
    /// unique, whatever signature encoding the content came with. Computed where the fact is made (a request's
    /// thread), not on the ledger's single writer.
    public private(set) var jwsSHA256: String
    /// The decoded payload as JSON text (UTF-8).
    public var payload: String
    /// `transactionId`, when the payload has one.
    public var transactionId: String?
    /// `originalTransactionId`: the subscription the fact belongs to and the key customers link by.
    public var originalTransactionId: String?
    /// `appAccountToken` (a UUID; compared case-insensitively).
    public var appAccountToken: String?
    /// `environment` (`Production`, `Sandbox`, `Xcode`, `LocalTesting`).
    public var environment: String?
    /// `bundleId`.
    public var bundleId: String?
    /// `signedDate` (ms since the epoch).
    public var signedDate: Int64?

    /// Creates a fact.
    public init(
        kind: FactKind, jws: String, payload: String, transactionId: String? = nil,
        originalTransactionId: String? = nil, appAccountToken: String? = nil, environment: String? = nil,
        bundleId: String? = nil, signedDate: Int64? = nil
    ) {
        self.init(
            kind: kind, jws: jws, jwsSHA256: FactDigest.hex(jws), payload: payload, transactionId: transactionId,
            originalTransactionId: originalTransactionId, appAccountToken: appAccountToken, environment: environment,
            bundleId: bundleId, signedDate: signedDate)
    }

    /// A stored fact, with the digest stored beside it.
    init(
        kind: FactKind, jws: String, jwsSHA256: String, payload: String, transactionId: String?,
        originalTransactionId: String?, appAccountToken: String?, environment: String?, bundleId: String?, signedDate: Int64?
    ) {
        self.kind = kind
        self.jws = jws
        self.jwsSHA256 = jwsSHA256
        self.payload = payload
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.appAccountToken = appAccountToken
        self.environment = environment
        self.bundleId = bundleId
        self.signedDate = signedDate
    }
}

/// A fact as stored in the ledger.
public struct StoredFact: Sendable, Hashable {
    /// The ledger's row id (increasing in insertion order).
    public var id: Int64
    /// The notification row this fact arrived with.
    public var notificationID: Int64?
    /// When it was stored (ms).
    public var receivedAt: Int64
    /// The fact itself.
    public var fact: IncomingFact

    /// Creates a stored fact.
    public init(id: Int64, notificationID: Int64?, receivedAt: Int64, fact: IncomingFact) {
        self.id = id
        self.notificationID = notificationID
        self.receivedAt = receivedAt
        self.fact = fact
    }
}

/// A request, carried by a client post, to link every `originalTransactionId` in the batch to a customer.
public struct Claim: Sendable, Hashable {
    /// The customer (created if missing).
    public var appUserId: String
    /// What to do when a subscription already belongs to someone else (the app's configured
    /// `restoreBehavior`: the engine's one `RestoreBehavior`).
    public var behaviour: RestoreBehavior

    /// Creates a claim.
    public init(appUserId: String, behaviour: RestoreBehavior = .transfer) {
        self.appUserId = appUserId
        self.behaviour = behaviour
    }
}

/// Everything one received message contributes, applied in one database transaction.
public struct IngestBatch: Sendable, Hashable {
    /// The message as received.
    public var message: ReceivedMessage
    /// The verified facts decoded from it.
    public var facts: [IncomingFact]
    /// For client posts: link the batch's subscriptions to this customer.
    public var claim: Claim?

    /// Creates a batch.
    public init(message: ReceivedMessage, facts: [IncomingFact], claim: Claim? = nil) {
        self.message = message
        self.facts = facts
        self.claim = claim
    }
}

/// How a link request ended.
public enum LinkOutcome: Sendable, Hashable {
    /// A new link was created.
    case linked
    /// The customer already owned it.
    case alreadyLinked
    /// It moved from the named customer (`RestoreBehavior.transfer`).
    case transferred(from: String)
    /// The named customer keeps it (`RestoreBehavior.keep`); nothing changed.
    case kept(owner: String)
}

/// The result of linking one subscription to a customer.
public struct LinkResult: Sendable, Hashable {
    /// The subscription.
    public var originalTransactionId: String
    /// What happened.
    public var outcome: LinkOutcome

    /// Creates a link result.
    public init(originalTransactionId: String, outcome: LinkOutcome) {
        self.originalTransactionId = originalTransactionId
        self.outcome = outcome
    }
}

/// The result of ``LedgerStore/ingest(_:projector:now:)``.
public struct IngestResult: Sendable, Hashable {
    /// Whether the message was applied or was a repeat.
    public enum Status: String, Sendable, Hashable {
        /// Committed (facts may still all have been replays).
        case applied
        /// The `notificationUUID` was already accepted; nothing changed.
        case duplicate
    }

    /// Applied or duplicate.
    public var status: Status
    /// The notification row's id (nil for duplicates, and for a message without a UUID whose
    /// facts were all replays: its row is not kept).
    public var notificationID: Int64?
    /// Facts newly appended.
    public var insertedFacts: Int
    /// Facts that were already in the ledger (replays, no-ops).
    public var replayedFacts: Int
    /// Customers whose projections were recomputed, by `appUserId`, sorted.
    public var affectedCustomers: [String]
    /// Links made by the batch's ``Claim``.
    public var links: [LinkResult]
    /// Affected customers whose projection failed (marked failed; the batch still committed).
    public var failedCustomers: [ProjectionFailure]

    /// Creates a result.
    public init(
        status: Status, notificationID: Int64? = nil, insertedFacts: Int = 0, replayedFacts: Int = 0,
        affectedCustomers: [String] = [], links: [LinkResult] = [], failedCustomers: [ProjectionFailure] = []
    ) {
        self.failedCustomers = failedCustomers
        self.status = status
        self.notificationID = notificationID
        self.insertedFacts = insertedFacts
        self.replayedFacts = replayedFacts
        self.affectedCustomers = affectedCustomers
        self.links = links
    }
}

/// A customer.
public struct CustomerRecord: Sendable, Hashable {
    /// Storage-local row id; not part of any external API.
    public var id: Int64
    /// The app's own user identifier.
    public var appUserId: String
    /// The stable `appAccountToken` (lowercase UUID) the app passes to StoreKit purchases.
    public var appAccountToken: String
    /// When the customer was created (ms).
    public var createdAt: Int64

    /// Creates a customer record.
    public init(id: Int64, appUserId: String, appAccountToken: String, createdAt: Int64) {
        self.id = id
        self.appUserId = appUserId
        self.appAccountToken = appAccountToken
        self.createdAt = createdAt
    }
}

/// One entitlement of a customer, as projected.
public struct EntitlementRow: Sendable, Hashable {
    /// The entitlement's name (from the product → entitlement configuration).
    public var entitlement: String
    /// The projector's status word (e.g. `active`, `gracePeriod`, `expired`, `revoked`).
    public var status: String
    /// Whether the customer has the entitlement now.
    public var active: Bool
    /// The product granting it.
    public var productId: String?
    /// The subscription granting it.
    public var originalTransactionId: String?
    /// When it expires (ms).
    public var expiresAt: Int64?
    /// End of a billing grace period (ms).
    public var graceUntil: Int64?
    /// Whether it is set to renew.
    public var willRenew: Bool
    /// Environments never mix: one row per entitlement and environment.
    public var environment: String

    /// Creates an entitlement row.
    public init(
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

/// One subscription (by `originalTransactionId`), as projected.
public struct SubscriptionRow: Sendable, Hashable {
    /// The subscription's key.
    public var originalTransactionId: String
    /// The current product.
    public var productId: String
    /// The subscription group.
    public var group: String?
    /// The projector's status word.
    public var status: String
    /// When the current period ends (ms).
    public var expiresAt: Int64?
    /// End of a billing grace period (ms).
    public var graceUntil: Int64?
    /// Whether auto-renew is on.
    public var autoRenew: Bool
    /// `Production`, `Sandbox`, …
    public var environment: String

    /// Creates a subscription row.
    public init(
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

/// What a ``Projector`` derives for one customer: indexed rows plus the opaque state document
/// the API returns.
public struct CustomerProjection: Sendable, Hashable {
    /// Entitlement rows (stored sorted by entitlement, environment).
    public var entitlements: [EntitlementRow]
    /// Subscription rows (stored sorted by originalTransactionId).
    public var subscriptions: [SubscriptionRow]
    /// The full customer state as UTF-8 JSON, returned by the API as is.
    public var state: [UInt8]

    /// Creates a projection.
    public init(entitlements: [EntitlementRow] = [], subscriptions: [SubscriptionRow] = [], state: [UInt8] = Array("{}".utf8)) {
        self.entitlements = entitlements
        self.subscriptions = subscriptions
        self.state = state
    }

    /// The same projection with rows in storage order, so projections compare by content.
    public var canonical: CustomerProjection {
        var copy = self
        copy.entitlements.sort { ($0.entitlement, $0.environment) < ($1.entitlement, $1.environment) }
        copy.subscriptions.sort { $0.originalTransactionId < $1.originalTransactionId }
        return copy
    }
}

/// Computes a customer's projection from all of that customer's facts.
///
/// Must be pure and deterministic: the same customer, facts and `now` give the same projection,
/// which is what makes ``LedgerStore/rebuild(projector:now:)`` meaningful. It is called inside the
/// database transaction (on a storage thread), so it must be fast and must not block.
public protocol Projector: Sendable {
    /// Projects one customer.
    /// - Parameters:
    ///   - customer: The customer.
    ///   - facts: All facts of the customer, ordered by `signedDate` then ledger id. Their `jws` is
    ///     empty: projectors work on the decoded `payload` and keys (the signed text is most of a
    ///     fact's bytes); ``LedgerStore/facts(appUserId:)`` returns it.
    ///   - now: The current time (ms).
    /// - Returns: The rows and state document to store.
    /// - Throws: when this customer cannot be projected (e.g. a stored fact no longer decodes).
    ///   The ledger contains the failure to this customer: the facts still commit, the customer's
    ///   stored projection is marked failed (``StoredProjection/failure``) and every other
    ///   customer is projected as usual; a later successful projection clears the mark.
    func project(customer: CustomerRecord, facts: [StoredFact], now: Int64) throws -> CustomerProjection

    /// Whether ``LedgerStore/compareProjections(projector:)`` may compare a stored state document
    /// byte for byte with a fresh one; false for one the projector's reader replaces by itself (an
    /// older format), compared by its rows alone. Default: true.
    func isComparable(stateDocument: [UInt8]) -> Bool
}

/// A customer's stored projection: the API's hot read.
public struct StoredProjection: Sendable, Hashable {
    /// The customer.
    public var customer: CustomerRecord
    /// Rows and state document (canonical order).
    public var projection: CustomerProjection
    /// The `now` the projection was computed with (ms).
    public var computedAt: Int64
    /// Set when the last projection of this customer failed (the projector's error): `projection`
    /// is then the last one that succeeded (empty state for a customer never projected) and must
    /// not be served as the customer's answer.
    public var failure: String?

    /// Creates a stored projection.
    public init(customer: CustomerRecord, projection: CustomerProjection, computedAt: Int64, failure: String? = nil) {
        self.customer = customer
        self.projection = projection
        self.computedAt = computedAt
        self.failure = failure
    }
}

/// A customer's stored state document without its projection rows: what a hot read that serves
/// the document as it is needs.
public struct StoredState: Sendable, Hashable {
    /// The customer.
    public var customer: CustomerRecord
    /// The projector's state document.
    public var state: [UInt8]
    /// The `now` the projection was computed with (ms).
    public var computedAt: Int64
    /// Set when the last projection failed (see ``StoredProjection/failure``).
    public var failure: String?

    /// Creates a stored state.
    public init(customer: CustomerRecord, state: [UInt8], computedAt: Int64, failure: String? = nil) {
        self.customer = customer
        self.state = state
        self.computedAt = computedAt
        self.failure = failure
    }
}

/// A subscription with the customer it belongs to.
public struct OwnedSubscription: Sendable, Hashable {
    /// The owner.
    public var appUserId: String
    /// The subscription row.
    public var subscription: SubscriptionRow

    /// Creates an owned subscription.
    public init(appUserId: String, subscription: SubscriptionRow) {
        self.appUserId = appUserId
        self.subscription = subscription
    }
}

/// One entry of a customer's history: a received notification or a fact.
public struct HistoryEntry: Sendable, Hashable {
    /// Whether the entry is a notification or a fact.
    public enum Kind: String, Sendable, Hashable {
        case notification
        case fact
    }

    /// Notification or fact.
    public var kind: Kind
    /// The row id in its table.
    public var id: Int64
    /// When it was received (ms).
    public var receivedAt: Int64
    /// For notifications: where it came from.
    public var source: IngestSource?
    /// For notifications: Apple's `notificationUUID`.
    public var notificationUUID: String?
    /// For notifications: `notificationType`.
    public var notificationType: String?
    /// For notifications: `subtype`.
    public var subtype: String?
    /// For facts: the kind.
    public var factKind: FactKind?
    /// For facts: `transactionId`.
    public var transactionId: String?
    /// For facts: `originalTransactionId`.
    public var originalTransactionId: String?
    /// For facts: `signedDate` (ms).
    public var signedDate: Int64?

    /// Creates a history entry.
    public init(
        kind: Kind, id: Int64, receivedAt: Int64, source: IngestSource? = nil, notificationUUID: String? = nil,
        notificationType: String? = nil, subtype: String? = nil, factKind: FactKind? = nil,
        transactionId: String? = nil, originalTransactionId: String? = nil, signedDate: Int64? = nil
    ) {
        self.kind = kind
        self.id = id
        self.receivedAt = receivedAt
        self.source = source
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.subtype = subtype
        self.factKind = factKind
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.signedDate = signedDate
    }
}

/// A page of history, newest first.
public struct HistoryPage: Sendable, Hashable {
    /// The entries.
    public var entries: [HistoryEntry]
    /// Pass to the next call to continue; nil at the end.
    public var nextCursor: String?

    /// Creates a page.
    public init(entries: [HistoryEntry], nextCursor: String?) {
        self.entries = entries
        self.nextCursor = nextCursor
    }
}

/// Named points inside a write transaction where a ``FaultInjector`` may abort it.
public enum FaultPoint: String, Sendable, Hashable, CaseIterable {
    /// After the received-notification row is inserted.
    case afterNotificationInsert
    /// After the facts are appended.
    case afterFacts
    /// After customer links are written.
    case afterLinks
    /// After projections are written.
    case afterProjections
    /// Just before the (group) transaction commits.
    case beforeCommit
}

/// A test hook called at each ``FaultPoint``; throwing aborts the surrounding transaction
/// (for `beforeCommit`: the whole group commit).
public typealias FaultInjector = @Sendable (FaultPoint) throws -> Void
