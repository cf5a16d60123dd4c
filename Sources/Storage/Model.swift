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
    /// A transaction fetched from Apple's transaction history (backfill of a subscription first
    /// seen here, or an import).
    case backfill
    /// Google Play: a Pub/Sub push, or a purchase token the app posted, with what the Developer
    /// API answered about it.
    case googlePlay = "google-play"
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
    /// The app the message is for, stored with each of its facts (`facts.bundle_id`).
    public var bundleId: String?
    /// An event the message is by itself (a store asking about a refund), emitted with it for
    /// the owner of each of the event's subscriptions; nil for most messages.
    public var event: MessageEvent? = nil

    /// Creates a received message.
    public init(
        notificationUUID: String?, source: IngestSource, body: [UInt8], receivedAt: Int64,
        notificationType: String? = nil, subtype: String? = nil, bundleId: String? = nil
    ) {
        self.notificationUUID = notificationUUID
        self.source = source
        self.body = body
        self.receivedAt = receivedAt
        self.notificationType = notificationType
        self.subtype = subtype
        self.bundleId = bundleId
    }
}

/// An event a message is by itself rather than by a change of an answer (``ReceivedMessage/event``).
public struct MessageEvent: Sendable, Hashable {
    /// The event's type (docs/events.md).
    public var type: String
    /// The subscriptions (originalTransactionIds, Play purchase tokens) it concerns: one event for
    /// each one's owner.
    public var originalTransactionIds: [String]
    /// Its `data` beyond the usual fields.
    public var details: [String: String]

    public init(type: String, originalTransactionIds: [String], details: [String: String]) {
        self.type = type
        self.originalTransactionIds = originalTransactionIds
        self.details = details
    }
}

extension ReceivedMessage {
    /// Most bytes of a rejected message's body the ledger keeps (with the whole body's SHA-256
    /// and size): enough to see what it was, too little for forged bodies to fill the disk.
    public static let maxRejectedBodyBytes = 4096
}

/// A fact as the ledger keeps it: the engine's fact with where and when it arrived.
public struct StoredFact: Sendable, Hashable {
    /// The ledger's row id (increasing in insertion order).
    public var id: Int64
    /// The notification row this fact arrived with.
    public var notificationID: Int64?
    /// When it was stored (ms).
    public var receivedAt: Int64
    /// The kind it is stored under (`transaction`, `renewal`, `receipt`, …).
    public var kind: String
    /// The signed text it came from (a compact JWS); for a fact without a signed form, its
    /// `Fact.identity`.
    public var signed: String
    /// The app it came for.
    public var bundleId: String?
    /// The fact; nil when its stored text is none this binary decodes (``Projector/decode(_:)``).
    public var fact: Fact?

    /// Creates a stored fact.
    public init(
        id: Int64, notificationID: Int64?, receivedAt: Int64, kind: String, signed: String, bundleId: String?, fact: Fact?
    ) {
        self.id = id
        self.notificationID = notificationID
        self.receivedAt = receivedAt
        self.kind = kind
        self.signed = signed
        self.bundleId = bundleId
        self.fact = fact
    }
}

/// A request, carried by a client post, to link every `originalTransactionId` of its facts to a customer.
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

/// The result of ``LedgerStore/ingest(_:facts:claim:projector:now:)``.
public struct IngestResult: Sendable, Hashable {
    /// Whether the message was accepted or was a repeat; the raw value is the word the API answers
    /// Apple and clients with (`{"status":"accepted"}`).
    public enum Status: String, Sendable, Hashable {
        /// Committed (facts may still all have been replays).
        case accepted
        /// The `notificationUUID` was already accepted; nothing changed.
        case duplicate
    }

    /// Accepted or duplicate.
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
    /// Storage-local row id of the customer (for an alias, the customer it was merged into); not
    /// part of any external API.
    public var id: Int64
    /// The app's own user identifier.
    public var appUserId: String
    /// The stable `appAccountToken` (lowercase UUID) the app passes to StoreKit purchases.
    public var appAccountToken: String
    /// When the customer was created (ms).
    public var createdAt: Int64
    /// The customer's other ids (aliases, or the id they were merged into), sorted; empty for a
    /// customer under one id. Every id reads the same customer: ``id`` is the merged customer's.
    public var aliases: [String]

    /// Creates a customer record.
    public init(id: Int64, appUserId: String, appAccountToken: String, createdAt: Int64, aliases: [String] = []) {
        self.id = id
        self.appUserId = appUserId
        self.appAccountToken = appAccountToken
        self.createdAt = createdAt
        self.aliases = aliases
    }

    /// Whether this is the placeholder of an unlinked subscription (``UnlinkedSubscription``):
    /// its ``appUserId`` is storage's key, never an app's id, and is answered as null.
    public var isUnlinked: Bool { UnlinkedSubscription.isKey(appUserId) }

    /// The app's id, nil for an unlinked subscription's placeholder.
    public var linkedAppUserId: String? { isUnlinked ? nil : appUserId }
}

/// A subscription stored before any customer claimed it (a purchase without `appAccountToken`,
/// or one whose token names nobody yet) lives under a placeholder customer keyed by its
/// `originalTransactionId`, so it is projected, counted, searchable and produces events like any
/// other; the key starts with a control character, which no valid appUserId holds, and is never
/// answered as an appUserId. A claim (the app posting the transaction, an alias) or a customer
/// created with the token moves the subscription to that customer.
public enum UnlinkedSubscription {
    /// The start of every placeholder key.
    public static let prefix = "\u{1}unlinked:"

    /// The placeholder key of the subscription `originalTransactionId`.
    public static func key(_ originalTransactionId: String) -> String { prefix + originalTransactionId }

    /// Whether `appUserId` is a placeholder key.
    public static func isKey(_ appUserId: String) -> Bool { appUserId.utf8.starts(with: prefix.utf8) }

    /// The subscription a placeholder key stands for.
    public static func originalTransactionId(_ key: String) -> String? {
        isKey(key) ? String(key.dropFirst(prefix.count)) : nil
    }
}

/// A customer's stored projection: the API's hot read.
public struct StoredProjection: Sendable, Hashable {
    /// The customer.
    public var customer: CustomerRecord
    /// Rows and encoded state (canonical order): storage's own plumbing.
    package var projection: CustomerProjection
    /// The `now` the projection was computed with (ms).
    public var computedAt: Int64
    /// Set when the last projection of this customer failed (the projector's error): `document`
    /// is then empty and the rows are the last ones that succeeded; it must not be served as the
    /// customer's answer.
    public var failure: String?
    /// The reader's rendering of ``document`` (``LedgerStore/storeAnswer(_:appUserId:document:)``);
    /// nil when none is stored for this document.
    public var answer: [UInt8]?

    /// The state in storage's encoding (``CustomerDocument``); empty when the projection failed
    /// or was stored before storage kept its own encoding.
    public var document: [UInt8] { projection.state }

    /// Creates a stored projection.
    package init(
        customer: CustomerRecord, projection: CustomerProjection, computedAt: Int64, failure: String? = nil, answer: [UInt8]? = nil
    ) {
        self.customer = customer
        self.projection = projection
        self.computedAt = computedAt
        self.failure = failure
        self.answer = answer
    }
}

/// A customer's stored answer without the projection: what a hot read that serves the answer as
/// it is needs.
public struct StoredState: Sendable, Hashable {
    /// The customer.
    public var customer: CustomerRecord
    /// The reader's rendering stored beside the state (``StoredProjection/answer``); nil when none.
    public var answer: [UInt8]?
    /// The `now` the projection was computed with (ms).
    public var computedAt: Int64
    /// Set when the last projection failed (see ``StoredProjection/failure``).
    public var failure: String?

    /// Creates a stored state.
    public init(customer: CustomerRecord, answer: [UInt8]?, computedAt: Int64, failure: String? = nil) {
        self.customer = customer
        self.answer = answer
        self.computedAt = computedAt
        self.failure = failure
    }
}

/// A subscription with the customer it belongs to.
public struct OwnedSubscription: Sendable, Hashable {
    /// The owner.
    public var appUserId: String
    /// The subscription row: storage's own plumbing.
    package var subscription: SubscriptionRow

    /// Creates an owned subscription.
    package init(appUserId: String, subscription: SubscriptionRow) {
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
    /// For facts: the kind (``StoredFact/kind``).
    public var factKind: String?
    /// For facts: `transactionId`.
    public var transactionId: String?
    /// For facts: `originalTransactionId`.
    public var originalTransactionId: String?
    /// For facts: `signedDate` (ms).
    public var signedDate: Int64?

    /// Creates a history entry.
    public init(
        kind: Kind, id: Int64, receivedAt: Int64, source: IngestSource? = nil, notificationUUID: String? = nil,
        notificationType: String? = nil, subtype: String? = nil, factKind: String? = nil,
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
