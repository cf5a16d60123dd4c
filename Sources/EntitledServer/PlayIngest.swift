import AppStore
import EntitledConfig
import Entitlements
import GooglePlay
import Storage

/// What the server needs to talk to Google about one Play app: its configuration, the Developer
/// API client (its service account's), and the verifier of its Pub/Sub pushes.
public struct PlayClients: Sendable {
    public var app: PlayApp
    public var api: DeveloperAPIClient
    public var pushVerifier: PushVerifier

    public init(app: PlayApp, api: DeveloperAPIClient, pushVerifier: PushVerifier) {
        self.app = app
        self.api = api
        self.pushVerifier = pushVerifier
    }
}

/// Everything that turns what Google says into stored facts: a Pub/Sub push (authenticated,
/// decoded, deduplicated on its `messageId`), or a purchase token the app posts. A notification
/// only says *that* a purchase changed: its state is asked of the Developer API, and the answer
/// is committed through ``Ingest``'s commit path, linked by `obfuscatedExternalAccountId`
/// (the customer's `appAccountToken`), by the posting customer, or by the token it replaced.
///
/// Knows nothing of HTTP: failures are ``IngestError``s (``PlayIngest/rejection(_:)`` maps
/// Google's codes to the API's).
struct PlayIngest: Sendable {
    let ingest: Ingest
    /// By package name.
    let apps: [String: PlayClients]
    /// How a posted purchase already linked to another customer is treated.
    let restoreBehavior: RestoreBehavior

    var ledger: FactLedger { ingest.ledger }

    init(ingest: Ingest, clients: [PlayClients], restoreBehavior: RestoreBehavior) {
        self.ingest = ingest
        self.apps = Dictionary(clients.map { ($0.app.packageName, $0) }, uniquingKeysWith: { first, _ in first })
        self.restoreBehavior = restoreBehavior
    }

    // MARK: - Pushes

    /// Authenticates a push (any configured app's push subscription may have sent it), then
    /// decodes it, asks Google for the state it announces and commits the facts. A push that
    /// fails authentication throws before anything is read or stored.
    func push(authorization: String?, body: [UInt8], now: Int64) async throws(IngestError) -> IngestResult.Status {
        let verifiedFor = try await authenticated(authorization)
        let envelope: PubSubPushEnvelope
        let notification: DeveloperNotification
        do {
            envelope = try PubSubPushEnvelope.decode(body)
            notification = try envelope.message.developerNotification()
        } catch {
            throw .rejected(Self.rejection(error))
        }
        // The push subscription that authenticated it must be the app's own.
        guard let clients = apps[notification.packageName], verifiedFor.contains(notification.packageName) else {
            throw .rejected(Rejection(.invalidAppIdentifier, "the notification's packageName is not an app of this push subscription"))
        }
        let facts: [Fact]
        let type: String
        switch notification.kind {
        case .subscription(let n)?:
            facts = [.playSubscription(try await subscription(clients, token: n.purchaseToken, now: now))]
            type = "subscription:\(n.notificationType.rawValue)"
        case .oneTimeProduct(let n)?:
            facts = [.playProduct(try await product(clients, productId: n.sku, token: n.purchaseToken, now: now))]
            type = "oneTimeProduct:\(n.notificationType.rawValue)"
        case .voidedPurchase(let n)?:
            // A voiding the voided-purchases poll stored already changes nothing.
            guard let voided = try await voidedFact(
                purchaseToken: n.purchaseToken, orderId: n.orderId, productType: n.productType?.rawValue,
                refundType: n.refundType?.rawValue, voidedTime: notification.eventTimeMillis.value, voidedSource: nil, voidedReason: nil,
                voidedQuantity: nil)
            else { return .duplicate }
            facts = try await withRefundedUnits(voided, clients: clients, now: now)
            type = "voidedPurchase"
        case .pendingRefundReview(let review)?:
            return try await refundReview(
                review, clients: clients, messageId: envelope.message.messageId, body: body, eventTime: notification.eventTimeMillis.value, now: now)
        case .test?, nil:
            // Nothing to store: answered 200 so Pub/Sub does not retry it.
            return .accepted
        }
        let message = ReceivedMessage(
            notificationUUID: "google-play:" + envelope.message.messageId, source: .googlePlay, body: body, receivedAt: now,
            notificationType: type, bundleId: notification.packageName)
        return try await commit(message, facts: facts, claim: try await successorClaim(facts))
    }

    /// The package names whose push settings accept `authorization`; the first refusal when none does.
    private func authenticated(_ authorization: String?) async throws(IngestError) -> Set<String> {
        var accepted: Set<String> = []
        var refusal: GooglePlayError?
        // Apps sharing one push subscription's settings are verified once.
        var tried: [PushVerifier.Settings: Bool] = [:]
        for packageName in apps.keys.sorted() {
            let verifier = apps[packageName]!.pushVerifier
            if let ok = tried[verifier.settings] {
                if ok { accepted.insert(packageName) }
                continue
            }
            do {
                _ = try await verifier.verify(authorization: authorization)
                tried[verifier.settings] = true
                accepted.insert(packageName)
            } catch {
                tried[verifier.settings] = false
                if refusal == nil || error.code == .keysUnavailable { refusal = error }
            }
        }
        guard !accepted.isEmpty else {
            throw .rejected(Self.rejection(refusal ?? GooglePlayError(.missingToken, "no Google Play app is configured")))
        }
        return accepted
    }

    // MARK: - Posted purchases

    /// Asks Google about a purchase token the app posted for `appUserId` and stores the answer,
    /// linked to the customer whose `appAccountToken` is its `obfuscatedExternalAccountId`, else
    /// to the posting customer.
    func posted(packageName: String, productId: String, purchaseToken: String, appUserId: String, body: [UInt8], now: Int64)
        async throws(IngestError)
    {
        guard let clients = apps[packageName] else {
            throw .rejected(Rejection(.appNotFound, "no Google Play app with packageName '\(packageName)' is configured"))
        }
        guard let product = clients.app.product(productId) else {
            throw .rejected(Rejection(.productNotFound, "'\(productId)' is not a product of \(packageName)"))
        }
        let fact: Fact
        let account: String?
        switch product.type {
        case .autoRenewable:
            let snapshot = try await subscription(clients, token: purchaseToken, now: now)
            guard snapshot.productId == productId || snapshot.linkedPurchaseToken != nil else {
                throw .rejected(Rejection(.invalidRequest, "the purchase token is not one of '\(productId)'"))
            }
            fact = .playSubscription(snapshot)
            account = snapshot.obfuscatedExternalAccountId
        case .nonConsumable, .consumable:
            let snapshot = try await self.product(clients, productId: productId, token: purchaseToken, now: now)
            fact = .playProduct(snapshot)
            account = snapshot.obfuscatedExternalAccountId
        }
        let message = ReceivedMessage(
            notificationUUID: nil, source: .googlePlay, body: body, receivedAt: now, notificationType: "posted", bundleId: packageName)
        // The account id the app attached decides (the store links by it); without one the poster claims it.
        let claim = account == nil ? Claim(appUserId: appUserId, behaviour: restoreBehavior) : nil
        _ = try await commit(message, facts: [fact], claim: claim)
    }

    // MARK: - Shared steps

    func subscription(_ clients: PlayClients, token: String, now: Int64) async throws(IngestError) -> PlaySubscriptionFact {
        let purchase: SubscriptionPurchaseV2
        do {
            purchase = try await clients.api.subscriptionV2(packageName: clients.app.packageName, purchaseToken: token)
        } catch {
            throw .rejected(Self.rejection(error))
        }
        do throws(MappingError) {
            let fact = try PlaySubscriptionFact(purchase, purchaseToken: token, packageName: clients.app.packageName, observedAt: now)
            _ = try Self.checked(.playSubscription(fact))
            if purchase.lineItems.contains(where: { PlayPeriodPrice($0).ignoredAmount }) {
                ServerLog.event(
                    "play price ignored", ["app": clients.app.packageName, "reason": "recurringPrice is not an exact ISO 4217 amount"],
                    level: .warn)
            }
            return fact
        } catch {
            throw .rejected(Ingest.rejection(error))
        }
    }

    func product(_ clients: PlayClients, productId: String, token: String, now: Int64) async throws(IngestError) -> PlayProductFact {
        let purchase: ProductPurchase
        do {
            purchase = try await clients.api.product(packageName: clients.app.packageName, productId: productId, purchaseToken: token)
        } catch {
            throw .rejected(Self.rejection(error))
        }
        do throws(MappingError) {
            let fact = try PlayProductFact(
                purchase, purchaseToken: token, packageName: clients.app.packageName, productId: productId, observedAt: now)
            _ = try Self.checked(.playProduct(fact))
            return fact
        } catch {
            throw .rejected(Ingest.rejection(error))
        }
    }

    /// `voided`, and for a quantity-based partial refund of a one-time purchase Google's fresh
    /// answer about it (`refundableQuantity` counts the units refunded: the notification names
    /// none). A token whose purchase the server never fetched is stored as it is.
    func withRefundedUnits(_ voided: Fact, clients: PlayClients, now: Int64) async throws(IngestError) -> [Fact] {
        guard case .playVoided(let v) = voided, v.isPartial else { return [voided] }
        let stored = try await storedFacts(purchaseToken: v.purchaseToken)
        guard case .product(let newest, _)? = PlayStoredPurchase(stored, token: v.purchaseToken) else { return [voided] }
        return [voided, .playProduct(try await product(clients, productId: newest.productId, token: v.purchaseToken, now: now))]
    }

    /// A snapshot that names the token it replaced and carries no account id joins that token's
    /// customer (an upgrade bought without `setObfuscatedAccountId`).
    func successorClaim(_ facts: [Fact]) async throws(IngestError) -> Claim? {
        guard case .playSubscription(let snapshot)? = facts.first, snapshot.obfuscatedExternalAccountId == nil,
            let previous = snapshot.linkedPurchaseToken
        else { return nil }
        let record: SubscriptionRecord?
        do {
            record = try await ledger.subscription(originalTransactionId: previous)
        } catch {
            throw .storage(error)
        }
        guard let owner = record?.customer, !owner.isUnlinked else { return nil }
        return Claim(appUserId: owner.appUserId, behaviour: .keep)
    }

    func commit(_ message: ReceivedMessage, facts: [Fact], claim: Claim?) async throws(IngestError) -> IngestResult.Status {
        let status = try await ingest.commitRecordingUnknown(message, facts: facts.map { ($0, nil, []) }, claim: claim)
        try await enqueueAcknowledgements(facts, now: message.receivedAt)
        try await enqueueOrderPrices(facts, now: message.receivedAt)
        return status
    }

    /// `fact` when its dates are in range (``Fact/checkDates()``).
    static func checked(_ fact: Fact) throws(MappingError) -> Fact {
        try fact.checkDates()
        return fact
    }

    /// Google's failure under the API's code: push authentication 401, Google unreachable 503, a
    /// purchase Google does not know 404, Google's other refusals 502.
    static func rejection(_ error: GooglePlayError) -> Rejection {
        let code = ProblemCode(error)
        return Rejection(code, code == .googlePurchaseNotFound ? "Google Play knows no such purchase" : error.message)
    }
}
