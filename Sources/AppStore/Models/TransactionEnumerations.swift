/// The kind of in-app purchase a transaction is for (`type`).
public struct ProductType: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let autoRenewableSubscription = ProductType(rawValue: "Auto-Renewable Subscription")
    public static let nonConsumable = ProductType(rawValue: "Non-Consumable")
    public static let consumable = ProductType(rawValue: "Consumable")
    public static let nonRenewingSubscription = ProductType(rawValue: "Non-Renewing Subscription")

    public static let known: [ProductType] = [
        .autoRenewableSubscription, .nonConsumable, .consumable, .nonRenewingSubscription,
    ]
}

/// Whether the customer bought the item or has it through Family Sharing.
public struct InAppOwnershipType: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let familyShared = InAppOwnershipType(rawValue: "FAMILY_SHARED")
    public static let purchased = InAppOwnershipType(rawValue: "PURCHASED")

    public static let known: [InAppOwnershipType] = [
        .familyShared, .purchased,
    ]
}

/// Why Apple refunded or revoked a transaction (`revocationReason`).
public struct RevocationReason: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Refunded for another reason, such as an accidental purchase.
    public static let other = RevocationReason(rawValue: 0)
    /// Refunded because of an actual or perceived issue in the app.
    public static let appIssue = RevocationReason(rawValue: 1)

    public static let known: [RevocationReason] = [
        .other, .appIssue,
    ]
}

/// The kind of offer applied to a transaction or the next renewal (`offerType`).
public struct OfferType: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let introductoryOffer = OfferType(rawValue: 1)
    public static let promotionalOffer = OfferType(rawValue: 2)
    public static let offerCode = OfferType(rawValue: 3)
    public static let winBackOffer = OfferType(rawValue: 4)
    /// An offer made to keep a subscriber who is cancelling (Retention Messaging).
    public static let retentionOffer = OfferType(rawValue: 5)

    public static let known: [OfferType] = [
        .introductoryOffer, .promotionalOffer, .offerCode, .winBackOffer, .retentionOffer,
    ]
}

/// How a subscription with a commitment is billed (`billingPlanType`, `renewalBillingPlanType`).
public struct BillingPlanType: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let billedUpfront = BillingPlanType(rawValue: "BILLED_UPFRONT")
    public static let monthly = BillingPlanType(rawValue: "MONTHLY")

    public static let known: [BillingPlanType] = [
        .billedUpfront, .monthly,
    ]
}

/// Why a subscription expired (`expirationIntent`; V1 `expiration_intent`).
public struct ExpirationIntent: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let customerCancelled = ExpirationIntent(rawValue: 1)
    public static let billingError = ExpirationIntent(rawValue: 2)
    public static let customerDidNotConsentToPriceIncrease = ExpirationIntent(rawValue: 3)
    public static let productNotAvailable = ExpirationIntent(rawValue: 4)
    public static let other = ExpirationIntent(rawValue: 5)

    public static let known: [ExpirationIntent] = [
        .customerCancelled, .billingError, .customerDidNotConsentToPriceIncrease, .productNotAvailable, .other,
    ]
}

/// Whether the subscription renews automatically (`autoRenewStatus`).
public struct AutoRenewStatus: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let off = AutoRenewStatus(rawValue: 0)
    public static let on = AutoRenewStatus(rawValue: 1)

    public static let known: [AutoRenewStatus] = [
        .off, .on,
    ]
}

/// Whether the customer consented to a price increase (`priceIncreaseStatus`).
public struct PriceIncreaseStatus: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let customerHasNotResponded = PriceIncreaseStatus(rawValue: 0)
    public static let customerConsentedOrWasNotifiedWithoutNeedingConsent = PriceIncreaseStatus(rawValue: 1)

    public static let known: [PriceIncreaseStatus] = [
        .customerHasNotResponded, .customerConsentedOrWasNotifiedWithoutNeedingConsent,
    ]
}

/// The platform of the customer's original app purchase (`originalPlatform`).
public struct PurchasePlatform: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let iOS = PurchasePlatform(rawValue: "iOS")
    public static let macOS = PurchasePlatform(rawValue: "macOS")
    public static let tvOS = PurchasePlatform(rawValue: "tvOS")
    public static let visionOS = PurchasePlatform(rawValue: "visionOS")

    public static let known: [PurchasePlatform] = [
        .iOS, .macOS, .tvOS, .visionOS,
    ]
}
