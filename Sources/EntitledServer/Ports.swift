import AppStore
import EntitledConfig
import Entitlements
import Foundation

// The two ports the HTTP API is written against. The real implementations live elsewhere:
// `NotificationVerifying` in the AppStore verifier (JWS + X.509), `LedgerStoring` in Storage
// (SQLite / PostgreSQL; API tests run it on `sqlite::memory:`).

// MARK: - Verification

extension VerificationError {
    /// A payload that is not what the endpoint expects (not JSON, not a JWS, missing fields).
    static func malformed(_ detail: String) -> VerificationError { VerificationError(.malformedPayload, detail) }
}

/// A verified V2 notification with its nested signed data, each verified too.
public struct VerifiedNotification: Sendable, Equatable {
    /// The decoded `signedPayload`.
    public var payload: ResponseBodyV2DecodedPayload
    /// `data.signedTransactionInfo`, decoded, when present.
    public var transaction: JWSTransactionDecodedPayload?
    /// `data.signedRenewalInfo`, decoded, when present.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    /// `appData.signedAppTransactionInfo`, decoded, when present.
    public var appTransaction: AppTransaction?

    public init(
        payload: ResponseBodyV2DecodedPayload, transaction: JWSTransactionDecodedPayload? = nil,
        renewalInfo: JWSRenewalInfoDecodedPayload? = nil, appTransaction: AppTransaction? = nil
    ) {
        self.payload = payload
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
    }
}

/// Verifies Apple's signed data (JWS with an x5c chain to a configured root) for one app.
///
/// Every method checks the signature, the chain (at the payload's signed date), the bundle id,
/// the app Apple ID where the payload has one, and that the environment is one of `app.environments`.
public protocol NotificationVerifying: Sendable {
    /// Verifies a V2 notification's `signedPayload` and the JWS nested in it.
    func verifyNotification(signedPayload: String, app: App) async throws(VerificationError) -> VerifiedNotification
    /// Verifies a transaction the app posted (StoreKit 2 `jwsRepresentation`).
    func verifyTransaction(signedTransaction: String, app: App) async throws(VerificationError)
        -> JWSTransactionDecodedPayload
    /// Verifies an app transaction the app posted (`AppTransaction.shared`'s `jwsRepresentation`).
    func verifyAppTransaction(signedAppTransaction: String, app: App) async throws(VerificationError)
        -> AppTransaction
}

// MARK: - Ledger

/// A storage failure. `unavailable` maps to 503 `STORAGE_UNAVAILABLE` (Apple retries; clients back off).
public struct LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// The database cannot be reached or the commit failed; nothing was applied.
        case unavailable
        /// The request names something that cannot be stored (e.g. a malformed cursor).
        case invalidRequest
        /// This customer's answer cannot be computed (its last projection failed, e.g. a stored
        /// fact no longer decodes): 500 `PROJECTION_FAILED` for this customer only.
        case projectionFailed
    }

    public var kind: Kind
    /// For logs only; never returned to clients.
    public var detail: String

    public init(_ kind: Kind, detail: String = "") {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}

/// Where a batch of facts came from; also the idempotency key of the batch.
public enum LedgerSource: Sendable, Equatable {
    /// A V2 notification; a repeated `notificationUUID` is a duplicate.
    case notificationV2(notificationUUID: String, type: String, subtype: String?)
    /// A V1 notification; `key` is the hex SHA-256 of its raw body (V1 has no id).
    case notificationV1(key: String, type: String)
    /// Signed data the app posted for `appUserId` (`POST /v1/customers/{appUserId}/transactions`).
    case client(appUserId: String)
}

/// Link purchases to a customer (the app posted them for that customer).
///
/// Facts of the batch without an `originalTransactionId` (a posted app transaction) belong to
/// `appUserId` directly. The customer is created if it does not exist yet.
public struct CustomerLink: Sendable, Equatable {
    public var appUserId: String
    /// The subscriptions / purchases to link (empty for an app transaction).
    public var originalTransactionIds: [String]
    /// What to do when one is already linked to another customer.
    public var restoreBehavior: RestoreBehavior

    public init(appUserId: String, originalTransactionIds: [String], restoreBehavior: RestoreBehavior) {
        self.appUserId = appUserId
        self.originalTransactionIds = originalTransactionIds
        self.restoreBehavior = restoreBehavior
    }
}

/// One verified batch to commit: the raw body (for audit), its facts, and an optional link.
///
/// Storage appends the facts idempotently (a fact already stored is a no-op), links, assigns facts
/// to customers (a transaction's `appAccountToken` equal to a customer's token makes it theirs,
/// whichever arrives first; else the customer linked to its `originalTransactionId`), and re-evaluates
/// the projections of every affected customer with `policy` at `now` — all in one database transaction.
public struct LedgerBatch: Sendable, Equatable {
    public var source: LedgerSource
    public var bundleId: String?
    public var environment: Environment
    /// The request body exactly as received; for V1, re-encoded without its `password`.
    public var rawBody: [UInt8]
    public var facts: [Fact]
    public var link: CustomerLink?
    /// The policy of the app the facts belong to, for the projections.
    public var policy: Policy
    /// When the server received the batch (epoch milliseconds).
    public var receivedAt: Int64

    /// The signed texts the facts were decoded from, stored beside them in the ledger.
    public var signed: SignedPayloads

    public init(
        source: LedgerSource, bundleId: String?, environment: Environment, rawBody: [UInt8], facts: [Fact],
        link: CustomerLink? = nil, policy: Policy, receivedAt: Int64, signed: SignedPayloads = SignedPayloads()
    ) {
        self.signed = signed
        self.source = source
        self.bundleId = bundleId
        self.environment = environment
        self.rawBody = rawBody
        self.facts = facts
        self.link = link
        self.policy = policy
        self.receivedAt = receivedAt
    }
}

/// The compact JWS texts a batch's facts come from (nil where a fact has no signed form, as V1's).
public struct SignedPayloads: Sendable, Equatable {
    public var notification: String?
    public var transaction: String?
    public var renewalInfo: String?
    public var appTransaction: String?

    public init(
        notification: String? = nil, transaction: String? = nil, renewalInfo: String? = nil,
        appTransaction: String? = nil
    ) {
        self.notification = notification
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
    }
}

/// What a commit did.
public struct IngestOutcome: Sendable, Equatable {
    public enum Status: String, Sendable, Equatable {
        /// Committed now.
        case accepted
        /// The same notification (or identical batch) was committed before; nothing changed.
        case duplicate
    }

    /// How one link request ended.
    public enum LinkResult: String, Sendable, Equatable {
        /// Linked to the customer (it was unlinked or already theirs).
        case linked
        /// Moved from another customer (`transfer`).
        case transferred
        /// Left with the other customer (`keep`).
        case keptByOther
    }

    public var status: Status
    /// Per `originalTransactionId` of the batch's link.
    public var links: [String: LinkResult]

    public init(status: Status, links: [String: LinkResult] = [:]) {
        self.status = status
        self.links = links
    }
}

/// A rejected delivery, kept for audit; nothing of it is applied.
public struct RejectedDelivery: Sendable, Equatable {
    /// `POST` path, e.g. `/v1/apple/notifications`.
    public var endpoint: String
    public var bundleId: String?
    /// The stable code the client was answered with.
    public var code: String
    public var rawBody: [UInt8]
    public var remoteAddress: String
    public var receivedAt: Int64

    public init(endpoint: String, bundleId: String?, code: String, rawBody: [UInt8], remoteAddress: String, receivedAt: Int64) {
        self.endpoint = endpoint
        self.bundleId = bundleId
        self.code = code
        self.rawBody = rawBody
        self.remoteAddress = remoteAddress
        self.receivedAt = receivedAt
    }
}

/// A customer: an app user id and the stable token the app passes to StoreKit as `appAccountToken`.
public struct CustomerRecord: Sendable, Equatable {
    public var appUserId: String
    /// Lower-case UUID text; never changes once created.
    public var appAccountToken: String
    public var createdAt: Int64

    public init(appUserId: String, appAccountToken: String, createdAt: Int64) {
        self.appUserId = appUserId
        self.appAccountToken = appAccountToken
        self.createdAt = createdAt
    }
}

/// What to evaluate a projection with.
public struct EvaluationContext: Sendable, Equatable {
    public var policy: Policy
    public var environment: Environment
    public var now: Int64

    public init(policy: Policy, environment: Environment, now: Int64) {
        self.policy = policy
        self.environment = environment
        self.now = now
    }
}

/// A customer with their state: the stored projection when still fresh (its `nextStatusChangeAt` is
/// after `now` and it was evaluated with the same policy), else re-evaluated from the ledger.
public struct CustomerSnapshot: Sendable, Equatable {
    public var customer: CustomerRecord
    public var state: CustomerState

    public init(customer: CustomerRecord, state: CustomerState) {
        self.customer = customer
        self.state = state
    }
}

/// One entry of a customer's timeline.
public struct LedgerHistoryEntry: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, Codable {
        case notification, transaction, renewalInfo, appTransaction, receiptEntry, pendingRenewal, v1Notification
    }

    /// Unique within the ledger.
    public var id: String
    public var kind: Kind
    /// Notification type (V2 or V1), or the transaction's `transactionReason`, if any.
    public var type: String?
    public var subtype: String?
    /// When it happened at Apple (signedDate / purchaseDate / receipt date), epoch ms.
    public var occurredAt: Int64
    /// When the server stored it.
    public var receivedAt: Int64
    public var environment: Environment
    public var productId: String?
    public var transactionId: String?
    public var originalTransactionId: String?
    /// Milli-units of `currency`.
    public var price: Int64?
    public var currency: String?

    public init(
        id: String, kind: Kind, type: String? = nil, subtype: String? = nil, occurredAt: Int64, receivedAt: Int64,
        environment: Environment = .production, productId: String? = nil, transactionId: String? = nil,
        originalTransactionId: String? = nil, price: Int64? = nil, currency: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.type = type
        self.subtype = subtype
        self.occurredAt = occurredAt
        self.receivedAt = receivedAt
        self.environment = environment
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.price = price
        self.currency = currency
    }
}

extension LedgerHistoryEntry {
    /// The timeline entry of a stored fact: its kind, Apple's dates, product, ids and price.
    public init(fact: Fact, id: String, receivedAt: Int64) {
        switch fact {
        case .transaction(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .transaction, type: f.transactionReason?.rawValue, occurredAt: f.purchaseDate,
                receivedAt: receivedAt, environment: f.environment, productId: f.productId,
                transactionId: f.transactionId, originalTransactionId: f.originalTransactionId, price: f.price,
                currency: f.currency)
        case .renewalInfo(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .renewalInfo, occurredAt: f.signedDate, receivedAt: receivedAt,
                environment: f.environment, productId: f.productId, originalTransactionId: f.originalTransactionId)
        case .notification(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .notification, type: f.type.rawValue, subtype: f.subtype?.rawValue, occurredAt: f.signedDate,
                receivedAt: receivedAt, environment: f.environment, productId: f.productId,
                transactionId: f.transactionId, originalTransactionId: f.originalTransactionId)
        case .appTransaction(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .appTransaction, occurredAt: f.signedDate, receivedAt: receivedAt,
                environment: f.environment)
        case .receiptEntry(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .receiptEntry, occurredAt: f.purchaseDate, receivedAt: receivedAt,
                environment: f.environment, productId: f.productId, transactionId: f.transactionId,
                originalTransactionId: f.originalTransactionId)
        case .pendingRenewal(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .pendingRenewal, occurredAt: f.receiptDate, receivedAt: receivedAt,
                environment: f.environment, productId: f.productId, originalTransactionId: f.originalTransactionId)
        case .v1Notification(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .v1Notification, type: f.type.rawValue, occurredAt: f.date, receivedAt: receivedAt,
                environment: f.environment, productId: f.productId, transactionId: f.transactionId,
                originalTransactionId: f.originalTransactionId)
        }
    }
}

/// One page of history, newest first. `nextCursor` is storage's own token, nil on the last page.
public struct LedgerHistoryPage: Sendable, Equatable {
    public var entries: [LedgerHistoryEntry]
    public var nextCursor: String?

    public init(entries: [LedgerHistoryEntry], nextCursor: String?) {
        self.entries = entries
        self.nextCursor = nextCursor
    }
}

/// One subscription as stored: its facts (all environments), its customer, its notifications.
public struct SubscriptionRecord: Sendable, Equatable {
    public var originalTransactionId: String
    public var bundleId: String?
    /// The linked customer, if any.
    public var customer: CustomerRecord?
    /// Every fact about this `originalTransactionId` (transactions, renewal infos, notifications, receipt entries).
    public var facts: [Fact]
    /// Its notifications, newest first.
    public var notifications: [LedgerHistoryEntry]

    public init(
        originalTransactionId: String, bundleId: String?, customer: CustomerRecord?, facts: [Fact],
        notifications: [LedgerHistoryEntry]
    ) {
        self.originalTransactionId = originalTransactionId
        self.bundleId = bundleId
        self.customer = customer
        self.facts = facts
        self.notifications = notifications
    }
}

/// The ledger and its projections, as the HTTP API needs them.
///
/// Every method is one database transaction. Blocking database work must run on storage's own
/// threads, never on Swift's cooperative pool. `checkReady()` (from ``ReadinessProbe``) backs `/readyz`.
public protocol LedgerStoring: ReadinessProbe {
    /// Commits a verified batch (raw body + facts + link + projections) atomically.
    /// Returns `.duplicate` without changing anything when the source was committed before.
    func ingest(_ batch: LedgerBatch) async throws(LedgerError) -> IngestOutcome

    /// Records a rejected delivery for audit (nothing is applied).
    func recordRejected(_ delivery: RejectedDelivery) async throws(LedgerError)

    /// The customer with their current state; creates the customer (with a new random
    /// `appAccountToken`) on first sight.
    func customer(appUserId: String, context: EvaluationContext) async throws(LedgerError) -> CustomerSnapshot

    /// A page of the customer's timeline, newest first, or nil when the customer does not exist.
    /// `cursor` is a `nextCursor` from an earlier page; a malformed one is `.invalidRequest`.
    func history(appUserId: String, cursor: String?, limit: Int) async throws(LedgerError) -> LedgerHistoryPage?

    /// One subscription by `originalTransactionId`, or nil when nothing is known about it.
    func subscription(originalTransactionId: String) async throws(LedgerError) -> SubscriptionRecord?

    /// The customer's answer ready to send, when the ledger keeps one that still holds for
    /// `context` (the hot read); nil means "build it from ``customer(appUserId:context:)``".
    func renderedCustomer(appUserId: String, context: EvaluationContext) async throws(LedgerError) -> RenderedCustomer?

    /// ``renderedCustomer(appUserId:context:)`` on the calling thread, for ledgers that can read at
    /// once (an HTTP poll thread must not wait); nil means "use the asynchronous calls".
    func renderedCustomerNow(appUserId: String, context: EvaluationContext) throws(LedgerError) -> RenderedCustomer?
}

extension LedgerStoring {
    /// Ledgers without immediate reads always use the asynchronous calls.
    public func renderedCustomerNow(appUserId: String, context: EvaluationContext) throws(LedgerError) -> RenderedCustomer? {
        nil
    }

    /// Ledgers without rendered answers always build them.
    public func renderedCustomer(appUserId: String, context: EvaluationContext) async throws(LedgerError) -> RenderedCustomer? {
        nil
    }
}
