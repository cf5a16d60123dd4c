import EntitledCrypto

/// The body of a Cloud Pub/Sub push request: one message and the subscription it came through.
///
/// Pub/Sub also writes snake_case duplicates (`message_id`, `publish_time`) and may add
/// `deliveryAttempt` or `orderingKey`; those are ignored.
public struct PubSubPushEnvelope: Sendable, Hashable, Codable {
    public var message: PubSubMessage
    /// `projects/{project}/subscriptions/{subscription}`.
    public var subscription: String

    public init(message: PubSubMessage, subscription: String) {
        self.message = message
        self.subscription = subscription
    }

    /// The largest push body accepted. Play's notifications are a few hundred bytes; Pub/Sub allows
    /// 10 MB messages, but nothing Play sends comes near this.
    public static let maximumBytes = 64 * 1024

    /// Decodes a push body (bounded, strict); ``GooglePlayError/Code/malformedNotification`` otherwise.
    public static func decode(_ body: [UInt8]) throws(GooglePlayError) -> PubSubPushEnvelope {
        let envelope = try PlayJSON.decode(Self.self, from: body, maxBytes: maximumBytes, code: .malformedNotification)
        guard !envelope.message.messageId.isEmpty, envelope.message.messageId.utf8.count <= 256 else {
            throw GooglePlayError(.malformedNotification, "$.message.messageId must be 1 to 256 bytes")
        }
        guard envelope.subscription.utf8.count <= 512 else {
            throw GooglePlayError(.malformedNotification, "$.subscription is longer than 512 bytes")
        }
        return envelope
    }
}

/// One Pub/Sub message as pushed.
public struct PubSubMessage: Sendable, Hashable, Codable {
    /// The payload, base64: for Play, a ``DeveloperNotification`` as JSON.
    public var data: String?
    /// Pub/Sub's id of the message, unique within the topic: the key to deduplicate redeliveries on.
    public var messageId: String
    /// When Pub/Sub accepted the message.
    public var publishTime: GoogleTimestamp?
    public var attributes: [String: String]?

    public init(data: String?, messageId: String, publishTime: GoogleTimestamp? = nil, attributes: [String: String]? = nil) {
        self.data = data
        self.messageId = messageId
        self.publishTime = publishTime
        self.attributes = attributes
    }

    /// The decoded ``DeveloperNotification`` in ``data``.
    public func developerNotification() throws(GooglePlayError) -> DeveloperNotification {
        guard let data, let bytes = Base64.decode(data) else {
            throw GooglePlayError(.malformedNotification, "$.message.data is missing or not base64")
        }
        return try DeveloperNotification.decode(bytes)
    }
}

/// A real-time developer notification from Google Play (the decoded `data` of a push).
///
/// Exactly one of the notification members is present; ``kind`` says which. Notifications say only
/// *that* something changed: the state comes from the Developer API.
public struct DeveloperNotification: Sendable, Hashable, Codable {
    /// The format's version, "1.0" (not the version of the inner notifications).
    public var version: String
    /// The app, e.g. `com.example.app`.
    public var packageName: String
    /// When the event happened, milliseconds since 1970 (written as a JSON string).
    public var eventTimeMillis: Int64String
    public var subscriptionNotification: SubscriptionNotification?
    public var oneTimeProductNotification: OneTimeProductNotification?
    public var voidedPurchaseNotification: VoidedPurchaseNotification?
    public var pendingRefundReviewNotification: PendingRefundReviewNotification?
    public var testNotification: TestNotification?

    public init(
        version: String = "1.0", packageName: String, eventTimeMillis: Int64,
        subscriptionNotification: SubscriptionNotification? = nil, oneTimeProductNotification: OneTimeProductNotification? = nil,
        voidedPurchaseNotification: VoidedPurchaseNotification? = nil,
        pendingRefundReviewNotification: PendingRefundReviewNotification? = nil, testNotification: TestNotification? = nil
    ) {
        self.version = version
        self.packageName = packageName
        self.eventTimeMillis = Int64String(eventTimeMillis)
        self.subscriptionNotification = subscriptionNotification
        self.oneTimeProductNotification = oneTimeProductNotification
        self.voidedPurchaseNotification = voidedPurchaseNotification
        self.pendingRefundReviewNotification = pendingRefundReviewNotification
        self.testNotification = testNotification
    }

    /// Which notification this is.
    public enum Kind: Sendable, Hashable {
        case subscription(SubscriptionNotification)
        case oneTimeProduct(OneTimeProductNotification)
        case voidedPurchase(VoidedPurchaseNotification)
        case pendingRefundReview(PendingRefundReviewNotification)
        case test(TestNotification)
    }

    /// The one notification present (``decode(_:)`` guarantees there is exactly one).
    public var kind: Kind? {
        if let subscriptionNotification { return .subscription(subscriptionNotification) }
        if let oneTimeProductNotification { return .oneTimeProduct(oneTimeProductNotification) }
        if let voidedPurchaseNotification { return .voidedPurchase(voidedPurchaseNotification) }
        if let pendingRefundReviewNotification { return .pendingRefundReview(pendingRefundReviewNotification) }
        if let testNotification { return .test(testNotification) }
        return nil
    }

    /// The largest decoded notification accepted.
    public static let maximumBytes = 16 * 1024

    /// Decodes and checks a notification: exactly one kind, a package name and tokens of sane size.
    public static func decode(_ bytes: [UInt8]) throws(GooglePlayError) -> DeveloperNotification {
        let value = try PlayJSON.decode(Self.self, from: bytes, maxBytes: maximumBytes, code: .malformedNotification)
        let present = [
            value.subscriptionNotification != nil, value.oneTimeProductNotification != nil, value.voidedPurchaseNotification != nil,
            value.pendingRefundReviewNotification != nil, value.testNotification != nil,
        ].filter { $0 }.count
        guard present == 1 else {
            throw GooglePlayError(.malformedNotification, "expected exactly one notification member, found \(present)")
        }
        guard !value.packageName.isEmpty, value.packageName.utf8.count <= 256 else {
            throw GooglePlayError(.malformedNotification, "$.packageName must be 1 to 256 bytes")
        }
        for (path, token) in value.purchaseTokens {
            guard !token.isEmpty, token.utf8.count <= maximumTokenBytes else {
                throw GooglePlayError(.malformedNotification, "\(path) must be 1 to \(maximumTokenBytes) bytes")
            }
        }
        if let review = value.pendingRefundReviewNotification {
            // Both are quoted in the answer's path and the durable job's subject: no spaces.
            guard !review.orderId.isEmpty, review.orderId.utf8.count <= PendingRefundReviewNotification.maximumOrderIdBytes,
                !review.orderId.contains(where: \.isWhitespace), !review.pendingRefundToken.contains(where: \.isWhitespace)
            else {
                throw GooglePlayError(.malformedNotification, "$.pendingRefundReviewNotification has an unusable orderId or pendingRefundToken")
            }
        }
        return value
    }

    /// The longest purchase token accepted (Google's are a few hundred bytes).
    public static let maximumTokenBytes = 4096

    private var purchaseTokens: [(String, String)] {
        switch kind {
        case .subscription(let n): [("$.subscriptionNotification.purchaseToken", n.purchaseToken)]
        case .oneTimeProduct(let n): [("$.oneTimeProductNotification.purchaseToken", n.purchaseToken)]
        case .voidedPurchase(let n): [("$.voidedPurchaseNotification.purchaseToken", n.purchaseToken)]
        case .pendingRefundReview(let n): [("$.pendingRefundReviewNotification.pendingRefundToken", n.pendingRefundToken)]
        case .test, nil: []
        }
    }
}

/// A change to a subscription purchase.
public struct SubscriptionNotification: Sendable, Hashable, Codable {
    public var version: String?
    public var notificationType: SubscriptionNotificationType
    public var purchaseToken: String
    /// The subscription's product id (deprecated by Google in favour of the purchase's line items,
    /// still sent).
    public var subscriptionId: String?

    public init(version: String? = "1.0", notificationType: SubscriptionNotificationType, purchaseToken: String, subscriptionId: String?) {
        self.version = version
        self.notificationType = notificationType
        self.purchaseToken = purchaseToken
        self.subscriptionId = subscriptionId
    }
}

/// A change to a one-time product purchase.
public struct OneTimeProductNotification: Sendable, Hashable, Codable {
    public var version: String?
    public var notificationType: OneTimeProductNotificationType
    public var purchaseToken: String
    /// The product id.
    public var sku: String

    public init(version: String? = "1.0", notificationType: OneTimeProductNotificationType, purchaseToken: String, sku: String) {
        self.version = version
        self.notificationType = notificationType
        self.purchaseToken = purchaseToken
        self.sku = sku
    }
}

/// A purchase was voided: refunded, charged back or revoked.
public struct VoidedPurchaseNotification: Sendable, Hashable, Codable {
    public var purchaseToken: String
    public var orderId: String?
    public var productType: VoidedProductType?
    public var refundType: RefundType?

    public init(purchaseToken: String, orderId: String?, productType: VoidedProductType?, refundType: RefundType?) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.productType = productType
        self.refundType = refundType
    }
}

/// Google asks the developer's opinion on a refund request before deciding it (collaborative
/// chargeback review), answered once with `orders.reviewrefund` quoting the `pendingRefundToken`
/// within 24 hours of the notification.
public struct PendingRefundReviewNotification: Sendable, Hashable, Codable {
    public var version: String?
    /// The token to quote when answering the review.
    public var pendingRefundToken: String
    /// The order whose refund is requested (a subscription's renewal orders end in `..N`).
    public var orderId: String
    /// Google's reason code for the request; an open set, passed on as it is.
    public var refundReason: Int?
    /// The account id the app passed to `setObfuscatedAccountId` (the customer's `appAccountToken`).
    public var obfuscatedAccountId: String?
    public var obfuscatedProfileId: String?

    public init(
        version: String? = "1.0", pendingRefundToken: String, orderId: String, refundReason: Int? = nil,
        obfuscatedAccountId: String? = nil, obfuscatedProfileId: String? = nil
    ) {
        self.version = version
        self.pendingRefundToken = pendingRefundToken
        self.orderId = orderId
        self.refundReason = refundReason
        self.obfuscatedAccountId = obfuscatedAccountId
        self.obfuscatedProfileId = obfuscatedProfileId
    }

    /// The longest order id accepted (Google's are about 30 bytes).
    public static let maximumOrderIdBytes = 256
}

/// Sent from Play Console's "Send test notification"; carries nothing to act on.
public struct TestNotification: Sendable, Hashable, Codable {
    public var version: String?
    public init(version: String? = "1.0") { self.version = version }
}
