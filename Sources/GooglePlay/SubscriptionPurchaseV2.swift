import Entitlements

/// A subscription purchase as `purchases.subscriptionsv2.get` answers it.
public struct SubscriptionPurchaseV2: Sendable, Hashable, Codable {
    /// `androidpublisher#subscriptionPurchaseV2`.
    public var kind: String?
    /// ISO 3166-1 alpha-2 billing country.
    public var regionCode: String?
    /// One per product in the purchase (more than one only for add-ons).
    public var lineItems: [SubscriptionPurchaseLineItem]
    /// When the subscription was granted (absent while pending).
    public var startTime: GoogleTimestamp?
    public var subscriptionState: SubscriptionState
    public var latestOrderId: String?
    /// The token this purchase replaced (upgrade, downgrade, resubscribe): that one is superseded.
    public var linkedPurchaseToken: String?
    public var pausedStateContext: PausedStateContext?
    public var canceledStateContext: CanceledStateContext?
    /// Present (an empty object) for license testers' purchases.
    public var testPurchase: TestPurchase?
    public var acknowledgementState: AcknowledgementState?
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?

    public init(
        kind: String? = "androidpublisher#subscriptionPurchaseV2", regionCode: String? = nil, lineItems: [SubscriptionPurchaseLineItem],
        startTime: GoogleTimestamp? = nil, subscriptionState: SubscriptionState, latestOrderId: String? = nil,
        linkedPurchaseToken: String? = nil, pausedStateContext: PausedStateContext? = nil,
        canceledStateContext: CanceledStateContext? = nil, testPurchase: TestPurchase? = nil,
        acknowledgementState: AcknowledgementState? = nil, externalAccountIdentifiers: ExternalAccountIdentifiers? = nil
    ) {
        self.kind = kind
        self.regionCode = regionCode
        self.lineItems = lineItems
        self.startTime = startTime
        self.subscriptionState = subscriptionState
        self.latestOrderId = latestOrderId
        self.linkedPurchaseToken = linkedPurchaseToken
        self.pausedStateContext = pausedStateContext
        self.canceledStateContext = canceledStateContext
        self.testPurchase = testPurchase
        self.acknowledgementState = acknowledgementState
        self.externalAccountIdentifiers = externalAccountIdentifiers
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decodeIfPresent(String.self, forKey: .kind)
        regionCode = try c.decodeIfPresent(String.self, forKey: .regionCode)
        lineItems = try c.decodeIfPresent([SubscriptionPurchaseLineItem].self, forKey: .lineItems) ?? []
        startTime = try c.decodeIfPresent(GoogleTimestamp.self, forKey: .startTime)
        subscriptionState = try c.decode(SubscriptionState.self, forKey: .subscriptionState)
        latestOrderId = try c.decodeIfPresent(String.self, forKey: .latestOrderId)
        linkedPurchaseToken = try c.decodeIfPresent(String.self, forKey: .linkedPurchaseToken)
        pausedStateContext = try c.decodeIfPresent(PausedStateContext.self, forKey: .pausedStateContext)
        canceledStateContext = try c.decodeIfPresent(CanceledStateContext.self, forKey: .canceledStateContext)
        testPurchase = try c.decodeIfPresent(TestPurchase.self, forKey: .testPurchase)
        acknowledgementState = try c.decodeIfPresent(AcknowledgementState.self, forKey: .acknowledgementState)
        externalAccountIdentifiers = try c.decodeIfPresent(ExternalAccountIdentifiers.self, forKey: .externalAccountIdentifiers)
        guard lineItems.count <= Self.maximumLineItems else {
            throw DecodingError.dataCorruptedError(forKey: .lineItems, in: c, debugDescription: "more than \(Self.maximumLineItems) line items")
        }
    }

    /// More line items than any real purchase has (a base subscription and its add-ons).
    public static let maximumLineItems = 50

    /// The largest answer accepted.
    public static let maximumBytes = 256 * 1024

    /// The latest expiry over the line items: when access ends unless the subscription renews.
    public var expiryTime: GoogleTimestamp? { lineItems.compactMap(\.expiryTime).max() }

    /// Whether this is a license tester's purchase.
    public var isTestPurchase: Bool { testPurchase != nil }
}

/// One product within a subscription purchase.
public struct SubscriptionPurchaseLineItem: Sendable, Hashable, Codable {
    public var productId: String
    /// When access ends unless it is extended (a renewal).
    public var expiryTime: GoogleTimestamp?
    public var autoRenewingPlan: AutoRenewingPlan?
    public var prepaidPlan: PrepaidPlan?
    public var offerDetails: OfferDetails?
    /// The pricing phase of the current period (free trial, introductory price, base price, proration).
    public var offerPhase: OfferPhase?
    public var latestSuccessfulOrderId: String?
    public var deferredItemReplacement: DeferredItemReplacement?

    public init(
        productId: String, expiryTime: GoogleTimestamp?, autoRenewingPlan: AutoRenewingPlan? = nil, prepaidPlan: PrepaidPlan? = nil,
        offerDetails: OfferDetails? = nil, offerPhase: OfferPhase? = nil, latestSuccessfulOrderId: String? = nil,
        deferredItemReplacement: DeferredItemReplacement? = nil
    ) {
        self.productId = productId
        self.expiryTime = expiryTime
        self.autoRenewingPlan = autoRenewingPlan
        self.prepaidPlan = prepaidPlan
        self.offerDetails = offerDetails
        self.offerPhase = offerPhase
        self.latestSuccessfulOrderId = latestSuccessfulOrderId
        self.deferredItemReplacement = deferredItemReplacement
    }
}

/// The line item renews automatically (unless `autoRenewEnabled` is false).
public struct AutoRenewingPlan: Sendable, Hashable, Codable {
    public var autoRenewEnabled: Bool?
    /// The base plan's current recurring price: without discounts (a trial or introductory phase
    /// is charged otherwise) and without tax where prices exclude it.
    public var recurringPrice: Money?
    public init(autoRenewEnabled: Bool?, recurringPrice: Money? = nil) {
        self.autoRenewEnabled = autoRenewEnabled
        self.recurringPrice = recurringPrice
    }
}

/// The line item was paid for a fixed time and does not renew.
public struct PrepaidPlan: Sendable, Hashable, Codable {
    /// From when the user may top up the plan.
    public var allowExtendAfterTime: GoogleTimestamp?
    public init(allowExtendAfterTime: GoogleTimestamp? = nil) { self.allowExtendAfterTime = allowExtendAfterTime }
}

/// The base plan and offer a line item was bought under.
public struct OfferDetails: Sendable, Hashable, Codable {
    public var basePlanId: String?
    /// Absent when bought at the base plan's price.
    public var offerId: String?
    public var offerTags: [String]?

    public init(basePlanId: String?, offerId: String? = nil, offerTags: [String]? = nil) {
        self.basePlanId = basePlanId
        self.offerId = offerId
        self.offerTags = offerTags
    }
}

/// A replacement that takes effect at the next renewal (a deferred downgrade).
public struct DeferredItemReplacement: Sendable, Hashable, Codable {
    public var productId: String?
    public init(productId: String?) { self.productId = productId }
}

/// Present while the subscription is paused.
public struct PausedStateContext: Sendable, Hashable, Codable {
    /// When the subscription resumes by itself.
    public var autoResumeTime: GoogleTimestamp?
    public init(autoResumeTime: GoogleTimestamp?) { self.autoResumeTime = autoResumeTime }
}

/// Why a subscription was canceled; each member is an object whose presence is the answer.
public struct CanceledStateContext: Sendable, Hashable, Codable {
    public var userInitiatedCancellation: Marker?
    public var systemInitiatedCancellation: Marker?
    public var developerInitiatedCancellation: Marker?
    public var replacementCancellation: Marker?

    public init(
        userInitiatedCancellation: Marker? = nil, systemInitiatedCancellation: Marker? = nil,
        developerInitiatedCancellation: Marker? = nil, replacementCancellation: Marker? = nil
    ) {
        self.userInitiatedCancellation = userInitiatedCancellation
        self.systemInitiatedCancellation = systemInitiatedCancellation
        self.developerInitiatedCancellation = developerInitiatedCancellation
        self.replacementCancellation = replacementCancellation
    }

    /// An object whose content this server does not need (Google's details are ignored).
    public struct Marker: Sendable, Hashable, Codable {
        public init() {}
        public init(from decoder: any Decoder) throws { _ = try decoder.container(keyedBy: AnyKey.self) }
        public func encode(to encoder: any Encoder) throws { _ = encoder.container(keyedBy: AnyKey.self) }
    }
}

/// An empty object marking a test purchase.
public struct TestPurchase: Sendable, Hashable, Codable {
    public init() {}
    public init(from decoder: any Decoder) throws { _ = try decoder.container(keyedBy: AnyKey.self) }
    public func encode(to encoder: any Encoder) throws { _ = encoder.container(keyedBy: AnyKey.self) }
}

/// Any member name (objects whose members are ignored).
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// The identifiers the app attached to the purchase (`setObfuscatedAccountId` and friends).
public struct ExternalAccountIdentifiers: Sendable, Hashable, Codable {
    public var externalAccountId: String?
    public var obfuscatedExternalAccountId: String?
    public var obfuscatedExternalProfileId: String?

    public init(externalAccountId: String? = nil, obfuscatedExternalAccountId: String? = nil, obfuscatedExternalProfileId: String? = nil) {
        self.externalAccountId = externalAccountId
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.obfuscatedExternalProfileId = obfuscatedExternalProfileId
    }
}

/// `SubscriptionPurchaseV2.subscriptionState`: the engine's own token, declared once there.
public typealias SubscriptionState = PlaySubscriptionState

/// `acknowledgementState` of a subscription purchase (v2 spells it as a string).
public struct AcknowledgementState: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let unspecified: Self = "ACKNOWLEDGEMENT_STATE_UNSPECIFIED"
    public static let pending: Self = "ACKNOWLEDGEMENT_STATE_PENDING"
    public static let acknowledged: Self = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
}
