import AppStore
import EntitledConfig
import Entitlements
import Foundation
import JSONCoding
import Storage

// The verifier port the HTTP API is written against (the real one is `AppStoreVerifier`: JWS +
// X.509), and the values the API and ``FactLedger`` exchange. The ledger is no port: the API calls
// `FactLedger` over Storage's `LedgerStore` (API tests run it on `sqlite::memory:`).

// MARK: - Verification

extension VerificationError {
    /// A payload that is not what the endpoint expects (not JSON, not a JWS, missing fields).
    static func malformed(_ detail: String) -> VerificationError { VerificationError(.malformedPayload, detail) }
}

/// Verifies Apple's signed data (JWS with an x5c chain to a configured root) for one app.
///
/// Every method checks the signature, the chain (at the payload's signed date), the bundle id,
/// the app Apple ID where the payload has one, and that the environment is one of `app.environments`.
public protocol NotificationVerifying: Sendable {
    /// Verifies a V2 notification's `signedPayload` and each JWS nested in it, returned decoded
    /// beside its text (`data.transactionInfo`, `data.renewalInfo`, `appData.appTransaction`).
    func verifyNotification(signedPayload: String, app: App) async throws(VerificationError) -> VerifiedNotification
    /// Verifies a transaction the app posted (StoreKit 2 `jwsRepresentation`), with the members of
    /// its JSON this build does not know.
    func verifyTransaction(signedTransaction: String, app: App) async throws(VerificationError)
        -> (payload: JWSTransactionDecodedPayload, unknownMembers: [UnknownMember])
    /// Verifies an app transaction the app posted (`AppTransaction.shared`'s `jwsRepresentation`).
    func verifyAppTransaction(signedAppTransaction: String, app: App) async throws(VerificationError)
        -> AppTransaction
    /// Checks an app receipt (PKCS#7) decoded by ``ReceiptVerifier/decode(base64:)`` for `app`:
    /// signature and chain to a receipt root at its creation date, bundle id, environment.
    func verifyReceipt(_ receipt: ReceiptVerifier.Decoded, app: App, now: Int64) throws(VerificationError) -> AppReceipt
    /// Verifies a retention-messaging realtime request's `signedPayload` for `app`.
    func verifyRealtimeRequest(signedPayload: String, app: App) async throws(VerificationError) -> DecodedRealtimeRequestBody
}

/// A verified V2 notification, with the members of its signed JSON this build does not know (the
/// verifier's decode finds them, ``JSONCodec/decodeReportingUnknown(_:from:known:)``;
/// ``UnknownFields`` records them on the facts).
public struct VerifiedNotification: Sendable {
    /// The payload, its nested JWS decoded.
    public var payload: ResponseBodyV2DecodedPayload
    /// The notification's own (its nested objects' dotted: `data.newField`).
    public var unknownMembers: [UnknownMember]
    /// Those of `data.signedTransactionInfo`.
    public var transactionUnknownMembers: [UnknownMember]
    /// Those of `data.signedRenewalInfo`.
    public var renewalUnknownMembers: [UnknownMember]
    /// Whether the signed payload was the token alone (``AppStore/CompactJWS/isBare``): its
    /// accepted body is then written around it as it is (``JSONCodec/encodeMember(_:_:plain:)``).
    public var isBare: Bool

    public init(
        payload: ResponseBodyV2DecodedPayload, unknownMembers: [UnknownMember] = [], transactionUnknownMembers: [UnknownMember] = [],
        renewalUnknownMembers: [UnknownMember] = [], isBare: Bool = false
    ) {
        self.isBare = isBare
        self.payload = payload
        self.unknownMembers = unknownMembers
        self.transactionUnknownMembers = transactionUnknownMembers
        self.renewalUnknownMembers = renewalUnknownMembers
    }
}

extension NotificationVerifying {
    /// Checks an app receipt for `app` against Apple's receipt roots (``AppleRootCertificates/defaultReceiptRoots``);
    /// ``AppStoreVerifier`` uses the app's `receiptRootCertificates` instead.
    public func verifyReceipt(_ receipt: ReceiptVerifier.Decoded, app: App, now: Int64) throws(VerificationError) -> AppReceipt {
        try ReceiptVerifier(
            configuration: .init(bundleId: app.bundleId, environments: Set(app.environments.map(AppStoreEnvironment.init(rawValue:))))
        ).check(receipt, now: now)
    }
}

// MARK: - Ledger

/// What to evaluate a projection with.
public struct EvaluationContext: Sendable, Equatable {
    public var policy: Policy
    /// The environments the answer merges, the first being primary (see
    /// ``evaluate(facts:policy:now:environments:)``): the configuration's grant environments, or the
    /// one an `?environment=` filter names.
    public var environments: [Environment]
    public var now: Int64

    public init(policy: Policy, environments: [Environment], now: Int64) {
        self.policy = policy
        self.environments = environments
        self.now = now
    }

    /// One environment alone (an `?environment=` filter).
    public init(policy: Policy, environment: Environment, now: Int64) {
        self.init(policy: policy, environments: [environment], now: now)
    }

    /// The environments as stored answers name them (``RenderedCustomer/scope``): `Production+Sandbox`.
    public var scope: String { Self.scope(environments) }

    /// `none` for no environment (a stored header's fields are never empty).
    static func scope(_ environments: [Environment]) -> String {
        environments.isEmpty ? "none" : environments.map(\.rawValue).joined(separator: "+")
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
        case consumableSpend
        /// A promotional grant (`type`: the entitlement, `transactionId`: the grant id), or its early end.
        case promotionalGrant, promotionalGrantEnd
        /// A Play purchase as the Developer API answered (`type`: the subscription state), its
        /// voiding, or what one of its orders was charged (`transactionId`: the order id).
        case playSubscription, playProduct, playVoided, playOrder
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
    /// Units spent (a consumable spend).
    public var quantity: Int?
    /// The app's key of a consumable spend.
    public var idempotencyKey: String?

    public init(
        id: String, kind: Kind, type: String? = nil, subtype: String? = nil, occurredAt: Int64, receivedAt: Int64,
        environment: Environment = .production, productId: String? = nil, transactionId: String? = nil,
        originalTransactionId: String? = nil, price: Int64? = nil, currency: String? = nil, quantity: Int? = nil,
        idempotencyKey: String? = nil
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
        self.quantity = quantity
        self.idempotencyKey = idempotencyKey
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
        case .consumableSpend(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .consumableSpend, occurredAt: f.spentAt, receivedAt: receivedAt, environment: f.environment,
                productId: f.productId, quantity: f.quantity, idempotencyKey: f.idempotencyKey)
        case .promotionalGrant(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .promotionalGrant, type: f.entitlement, occurredAt: f.grantedAt, receivedAt: receivedAt,
                transactionId: f.grantId)
        case .promotionalGrantEnd(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .promotionalGrantEnd, occurredAt: f.endedAt, receivedAt: receivedAt, transactionId: f.grantId)
        case .playSubscription(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .playSubscription, type: f.state.rawValue, occurredAt: f.observedAt, receivedAt: receivedAt,
                environment: f.environment, productId: f.productId, transactionId: f.purchaseToken,
                originalTransactionId: f.linkedPurchaseToken ?? f.purchaseToken)
        case .playProduct(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .playProduct, occurredAt: f.purchaseTime, receivedAt: receivedAt, environment: f.environment,
                productId: f.productId, transactionId: f.purchaseToken, originalTransactionId: f.purchaseToken,
                quantity: f.quantity)
        case .playVoided(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .playVoided, occurredAt: f.voidedTime, receivedAt: receivedAt, environment: f.environment,
                transactionId: f.purchaseToken, originalTransactionId: f.purchaseToken)
        case .playOrder(let f):
            self = LedgerHistoryEntry(
                id: id, kind: .playOrder, occurredAt: f.observedAt, receivedAt: receivedAt, environment: f.environment,
                transactionId: f.orderId, originalTransactionId: f.purchaseToken, price: f.price, currency: f.currency)
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
