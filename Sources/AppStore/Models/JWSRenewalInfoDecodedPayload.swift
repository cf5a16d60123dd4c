import Entitlements

/// Subscription renewal information as the App Store signs it (`signedRenewalInfo`).
public struct JWSRenewalInfoDecodedPayload: Sendable, Hashable, Codable {
    public var originalTransactionId: String?
    /// The product the subscription renews to next.
    public var autoRenewProductId: String?
    /// The product of the current period.
    public var productId: String?
    public var autoRenewStatus: AutoRenewStatus?
    public var expirationIntent: ExpirationIntent?
    public var isInBillingRetryPeriod: Bool?
    @EpochMilliseconds public var gracePeriodExpiresDate: Int64?
    public var priceIncreaseStatus: PriceIncreaseStatus?
    /// The offer that applies to the next renewal.
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var offerDiscountType: OfferDiscountType?
    public var offerPeriod: String?
    @EpochMilliseconds public var signedDate: Int64?
    public var environment: AppStoreEnvironment?
    /// Start of the latest run of continuous subscription (gaps up to 60 days allowed).
    @EpochMilliseconds public var recentSubscriptionStartDate: Int64?
    /// When the subscription renews next.
    @EpochMilliseconds public var renewalDate: Int64?
    public var currency: String?
    /// The next renewal price in milli-units of `currency`.
    public var renewalPrice: Int64?
    public var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    public var appTransactionId: String?
    /// Advanced Commerce API details, kept as received.
    public var advancedCommerceInfo: RawJSON?
    public var commitmentInfo: RenewalCommitmentInfo?
    public var renewalBillingPlanType: BillingPlanType?

    /// Every field defaults to nil (absent).
    public init(
        originalTransactionId: String? = nil,
        autoRenewProductId: String? = nil,
        productId: String? = nil,
        autoRenewStatus: AutoRenewStatus? = nil,
        expirationIntent: ExpirationIntent? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        gracePeriodExpiresDate: Int64? = nil,
        priceIncreaseStatus: PriceIncreaseStatus? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        offerPeriod: String? = nil,
        signedDate: Int64? = nil,
        environment: AppStoreEnvironment? = nil,
        recentSubscriptionStartDate: Int64? = nil,
        renewalDate: Int64? = nil,
        currency: String? = nil,
        renewalPrice: Int64? = nil,
        eligibleWinBackOfferIds: [String]? = nil,
        appAccountToken: String? = nil,
        appTransactionId: String? = nil,
        advancedCommerceInfo: RawJSON? = nil,
        commitmentInfo: RenewalCommitmentInfo? = nil,
        renewalBillingPlanType: BillingPlanType? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.autoRenewProductId = autoRenewProductId
        self.productId = productId
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.priceIncreaseStatus = priceIncreaseStatus
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.signedDate = signedDate
        self.environment = environment
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalDate = renewalDate
        self.currency = currency
        self.renewalPrice = renewalPrice
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.appAccountToken = appAccountToken
        self.appTransactionId = appTransactionId
        self.advancedCommerceInfo = advancedCommerceInfo
        self.commitmentInfo = commitmentInfo
        self.renewalBillingPlanType = renewalBillingPlanType
    }
}

/// Commitment renewal details of a subscription billed under a commitment plan.
public struct RenewalCommitmentInfo: Sendable, Hashable, Codable {
    public var commitmentAutoRenewProductId: String?
    public var commitmentAutoRenewStatus: AutoRenewStatus?
    public var commitmentRenewalBillingPlanType: BillingPlanType?
    @EpochMilliseconds public var commitmentRenewalDate: Int64?
    public var commitmentRenewalPrice: Int64?

    /// Every field defaults to nil (absent).
    public init(
        commitmentAutoRenewProductId: String? = nil,
        commitmentAutoRenewStatus: AutoRenewStatus? = nil,
        commitmentRenewalBillingPlanType: BillingPlanType? = nil,
        commitmentRenewalDate: Int64? = nil,
        commitmentRenewalPrice: Int64? = nil
    ) {
        self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
        self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
        self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
        self.commitmentRenewalDate = commitmentRenewalDate
        self.commitmentRenewalPrice = commitmentRenewalPrice
    }
}

extension JWSRenewalInfoDecodedPayload: VerifiablePayload {
    public var verificationSignedDate: Int64? { signedDate }
    public var verificationEnvironment: AppStoreEnvironment? { environment }
    /// Renewal info carries no bundle identifier; only its environment is checked.
    public var verificationBundleId: String? { nil }
    public var verificationAppAppleId: Int64? { nil }
}
