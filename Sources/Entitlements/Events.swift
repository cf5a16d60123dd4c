/// The type of an event the server emits (webhooks, `GET /v1/events`): one vocabulary for the
/// engine's timeline, the webhook configuration's `events` filter, the OpenAPI spec and
/// docs/events.md. Open like Apple's tokens: a stored event of a type this build does not know
/// still decodes.
public struct EventType: StringToken {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchaseCompleted: Self = "purchase.completed"
    public static let subscriptionStarted: Self = "subscription.started"
    public static let subscriptionProductChanged: Self = "subscription.product_changed"
    public static let subscriptionRenewed: Self = "subscription.renewed"
    public static let subscriptionRecovered: Self = "subscription.recovered"
    public static let subscriptionOfferRedeemed: Self = "subscription.offer_redeemed"
    public static let subscriptionExtended: Self = "subscription.extended"
    public static let subscriptionRefundReversed: Self = "subscription.refund_reversed"
    public static let purchaseRefundReversed: Self = "purchase.refund_reversed"
    public static let subscriptionPriceIncrease: Self = "subscription.price_increase"
    public static let subscriptionAutoRenewEnabled: Self = "subscription.auto_renew_enabled"
    public static let subscriptionAutoRenewDisabled: Self = "subscription.auto_renew_disabled"
    public static let subscriptionBillingIssue: Self = "subscription.billing_issue"
    public static let subscriptionGracePeriodExpired: Self = "subscription.grace_period_expired"
    /// A Google Play subscription paused (no access until it resumes).
    public static let subscriptionPaused: Self = "subscription.paused"
    /// A paused Google Play subscription resumed (a new paid period).
    public static let subscriptionResumed: Self = "subscription.resumed"
    public static let subscriptionRefunded: Self = "subscription.refunded"
    public static let subscriptionRevoked: Self = "subscription.revoked"
    public static let purchaseRefunded: Self = "purchase.refunded"
    public static let subscriptionExpired: Self = "subscription.expired"
    public static let customerTransferred: Self = "customer.transferred"
    public static let customerMerged: Self = "customer.merged"
    public static let customerDeleted: Self = "customer.deleted"
    public static let consumptionRequested: Self = "consumption.requested"
    /// Google Play asks the developer's view on a refund request (a pending refund review) that
    /// the server does not answer itself.
    public static let refundReviewRequested: Self = "refund_review.requested"
    /// A customer's first exposure to an experiment: the variant they were enrolled in.
    public static let experimentEnrolled: Self = "experiment.enrolled"
    /// Hindsight disproves events already released (facts that came late): names them and the
    /// events that replace them (``eventRelease(facts:policy:now:environment:released:revealedFrom:)``).
    public static let correction: Self = "correction"
    public static let test: Self = "test"

    /// Every type, in the order events of one instant come in (docs/events.md): what began before
    /// what changed it, what ended it last.
    public static let allDocumented: [EventType] = [
        .purchaseCompleted, .subscriptionStarted, .subscriptionProductChanged, .subscriptionRenewed,
        .subscriptionRecovered, .subscriptionResumed, .subscriptionOfferRedeemed, .subscriptionExtended, .subscriptionRefundReversed,
        .purchaseRefundReversed, .subscriptionPriceIncrease, .subscriptionAutoRenewEnabled,
        .subscriptionAutoRenewDisabled, .subscriptionBillingIssue, .subscriptionGracePeriodExpired, .subscriptionPaused,
        .subscriptionRefunded, .subscriptionRevoked, .purchaseRefunded, .subscriptionExpired,
        .customerTransferred, .customerMerged, .customerDeleted, .consumptionRequested, .refundReviewRequested, .experimentEnrolled,
        .correction, .test,
    ]

    /// The position of the type among events of one instant (unknown types last).
    public var instantRank: Int { Self.allDocumented.firstIndex(of: self) ?? Self.allDocumented.count }
}

/// One event of a customer's timeline, as the engine decides it from the customer's facts.
public struct CustomerEvent: Hashable, Sendable {
    public var type: EventType
    /// When it happened at Apple (epoch ms): a purchase date, a period end, a revocation date, the
    /// signed date of the renewal info that changed.
    public var occurredAt: Int64
    public var environment: Environment
    public var originalTransactionId: String
    /// The transaction it concerns (the period's, for period events).
    public var transactionId: String
    public var productId: String
    /// The entitlements its product grants (both products' for a product change), sorted.
    public var entitlements: [String]
    /// Type-specific fields (`kind`, `reason`, `from`, `to`, …) and the analytics fields (`store`,
    /// `price`, `currency`, `periodType`, `storefront`, `offerId`, `offerType`, `transactionId`).
    public var details: [String: String]
    /// What it is about: the subscription (`originalTransactionId`) for subscription events, the
    /// transaction for a refund, a reversal, an offer or a purchase.
    public var subject: String
    /// The newest signed date of the facts it rests on: no fact signed before can reveal it.
    public var basis: Int64
    /// The index (into the facts the timeline was given) of the fact signed at ``basis``: what the
    /// event cites. Not part of its identity.
    public var causeIndex: Int

    /// Its stable identity: type, instant and subject, the same however the facts arrived; a
    /// subscription starts once, so `started` is its type and subject alone.
    public var identity: String { Self.identity(type, identityKey) }

    static func identity(_ type: EventType, _ key: [String]) -> String { ([type.rawValue] + key).joined(separator: "\u{1F}") }

    /// What the identity is made of after the type, as the storage keys an event.
    public var identityKey: [String] { type == .subscriptionStarted ? [subject] : [subject, String(occurredAt)] }

    public static func == (a: CustomerEvent, b: CustomerEvent) -> Bool {
        a.identity == b.identity && (a.environment, a.originalTransactionId, a.transactionId, a.productId)
            == (b.environment, b.originalTransactionId, b.transactionId, b.productId)
            && a.entitlements == b.entitlements && a.details == b.details && a.basis == b.basis
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }

    /// The order of a timeline: by instant, then ``EventType/instantRank``, then subject.
    public static func happensBefore(_ a: CustomerEvent, _ b: CustomerEvent) -> Bool {
        if a.occurredAt != b.occurredAt { return a.occurredAt < b.occurredAt }
        if a.type.instantRank != b.type.instantRank { return a.type.instantRank < b.type.instantRank }
        if a.subject != b.subject { return a.subject < b.subject }
        return a.type < b.type
    }
}
