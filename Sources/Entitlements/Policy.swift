/// What the configuration says about products: the app's side of the rules.
public struct Policy: Hashable, Sendable, Codable {
    /// Products by `productId`. Facts about unknown products still count (history, groups,
    /// balances) but grant no entitlement.
    public var products: [String: ProductPolicy]
    /// Grace days after expiry while in billing retry, used only when Apple gives no
    /// `gracePeriodExpiresDate` in V1 data (V1 notifications, verifyReceipt). 0 = none.
    /// V2 renewal info without the field means the app has no grace period, and is not overridden.
    public var fallbackGraceDays: Int
    /// What a restore does with a purchase already linked to another account; carried for the storage layer.
    public var restoreBehavior: RestoreBehavior
    /// Small Business Program member: every proceeds estimate is 85%.
    public var smallBusiness: Bool

    public init(
        products: [String: ProductPolicy] = [:], fallbackGraceDays: Int = 0,
        restoreBehavior: RestoreBehavior = .transfer, smallBusiness: Bool = false
    ) {
        self.products = products
        self.fallbackGraceDays = fallbackGraceDays
        self.restoreBehavior = restoreBehavior
        self.smallBusiness = smallBusiness
    }
}

/// How restoring purchases on another app account behaves (applied by storage, not the engine).
public enum RestoreBehavior: String, Hashable, Sendable, Codable, CaseIterable {
    /// Move the purchases to the account that restored them.
    case transfer
    /// Leave them with the account they are linked to.
    case keep
}

/// One product's configuration.
public struct ProductPolicy: Hashable, Sendable, Codable {
    /// The kind of product; V1 receipt entries, which carry no type, take it from here.
    public var type: ProductType
    /// Entitlement ids this product grants while it is active.
    public var entitlements: [String]
    /// The subscription group's name, used as the group key (else Apple's `subscriptionGroupIdentifier`).
    /// For non-renewing products, purchases in the same group stack into one run.
    public var subscriptionGroup: String?
    /// Apple's service level within the group: 1 is the highest. Decides upgrade / downgrade / crossgrade.
    public var level: Int?
    /// Length of a non-renewing subscription (`P1M`, `P1Y`, …).
    public var duration: ISODuration?
    /// Promotional offer identifiers of this (auto-renewable) product, as in App Store Connect.
    public var promotionalOffers: [String]
    /// Win-back offers of this (auto-renewable) product, with the lapse they require.
    public var winBackOffers: [WinBackOfferRule]
    /// A Play subscription's base plans that grant its entitlements; nil: every base plan.
    public var basePlans: [String]?

    public init(
        type: ProductType, entitlements: [String] = [], subscriptionGroup: String? = nil, level: Int? = nil,
        duration: ISODuration? = nil, promotionalOffers: [String] = [], winBackOffers: [WinBackOfferRule] = [],
        basePlans: [String]? = nil
    ) {
        self.basePlans = basePlans
        self.type = type
        self.entitlements = entitlements
        self.subscriptionGroup = subscriptionGroup
        self.level = level
        self.duration = duration
        self.promotionalOffers = promotionalOffers
        self.winBackOffers = winBackOffers
    }
}

/// A win-back offer's eligibility rule: the customer's subscription in the product's group ended at
/// least `minimumLapsedDays` (and, when set, at most `maximumLapsedDays`) days ago, and nothing in
/// the group is current.
public struct WinBackOfferRule: Hashable, Sendable, Codable {
    public var offerId: String
    public var minimumLapsedDays: Int
    /// nil: no upper bound.
    public var maximumLapsedDays: Int?

    public init(offerId: String, minimumLapsedDays: Int, maximumLapsedDays: Int? = nil) {
        self.offerId = offerId
        self.minimumLapsedDays = minimumLapsedDays
        self.maximumLapsedDays = maximumLapsedDays
    }
}
