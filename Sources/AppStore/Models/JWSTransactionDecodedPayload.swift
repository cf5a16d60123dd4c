import Entitlements

/// A transaction as the App Store signs it (`signedTransactionInfo`, history and refund lists).
///
/// Prices are in milli-units of `currency` (10990 = 10.99). Dates are epoch milliseconds.
public struct JWSTransactionDecodedPayload: Sendable, Hashable, Codable {
    /// The transaction id of the original purchase; stable across renewals.
    public var originalTransactionId: String?
    public var transactionId: String?
    /// Identifies one subscription period; also stable across devices.
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    /// When the App Store charged the customer (for renewals: the renewal date).
    @EpochMilliseconds public var purchaseDate: Int64?
    @EpochMilliseconds public var originalPurchaseDate: Int64?
    /// When an auto-renewable subscription period expires or renews.
    @EpochMilliseconds public var expiresDate: Int64?
    public var quantity: Int32?
    public var type: ProductType?
    /// The UUID the app set at purchase, as text; nil if none was set.
    public var appAccountToken: String?
    public var inAppOwnershipType: InAppOwnershipType?
    @EpochMilliseconds public var signedDate: Int64?
    public var revocationReason: RevocationReason?
    /// When the App Store refunded or revoked the transaction.
    @EpochMilliseconds public var revocationDate: Int64?
    public var revocationType: RevocationType?
    /// The refunded share in thousandths of a percent (50000 = 50 %), for prorated refunds.
    public var revocationPercentage: Int32?
    /// Whether the customer upgraded to another subscription in the group.
    public var isUpgraded: Bool?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var offerDiscountType: OfferDiscountType?
    /// The ISO 8601 duration of the offer, e.g. `P1Y`.
    public var offerPeriod: String?
    public var environment: AppStoreEnvironment?
    /// ISO 3166-1 alpha-3 country code.
    public var storefront: String?
    public var storefrontId: String?
    public var transactionReason: TransactionReason?
    /// ISO 4217 code of `price`.
    public var currency: String?
    /// The price in milli-units of `currency`.
    public var price: Int64?
    public var appTransactionId: String?
    /// Advanced Commerce API details, kept as received.
    public var advancedCommerceInfo: RawJSON?
    public var billingPlanType: BillingPlanType?
    public var commitmentInfo: TransactionCommitmentInfo?
    /// The original transaction this one replaced (Apple docs, 2025-03-24).
    public var previousOriginalTransactionId: String?

    /// Every field defaults to nil (absent).
    public init(
        originalTransactionId: String? = nil,
        transactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        purchaseDate: Int64? = nil,
        originalPurchaseDate: Int64? = nil,
        expiresDate: Int64? = nil,
        quantity: Int32? = nil,
        type: ProductType? = nil,
        appAccountToken: String? = nil,
        inAppOwnershipType: InAppOwnershipType? = nil,
        signedDate: Int64? = nil,
        revocationReason: RevocationReason? = nil,
        revocationDate: Int64? = nil,
        revocationType: RevocationType? = nil,
        revocationPercentage: Int32? = nil,
        isUpgraded: Bool? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        offerPeriod: String? = nil,
        environment: AppStoreEnvironment? = nil,
        storefront: String? = nil,
        storefrontId: String? = nil,
        transactionReason: TransactionReason? = nil,
        currency: String? = nil,
        price: Int64? = nil,
        appTransactionId: String? = nil,
        advancedCommerceInfo: RawJSON? = nil,
        billingPlanType: BillingPlanType? = nil,
        commitmentInfo: TransactionCommitmentInfo? = nil,
        previousOriginalTransactionId: String? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.revocationDate = revocationDate
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.environment = environment
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.transactionReason = transactionReason
        self.currency = currency
        self.price = price
        self.appTransactionId = appTransactionId
        self.advancedCommerceInfo = advancedCommerceInfo
        self.billingPlanType = billingPlanType
        self.commitmentInfo = commitmentInfo
        self.previousOriginalTransactionId = previousOriginalTransactionId
    }
}

/// Commitment details of a transaction billed under a commitment plan.
public struct TransactionCommitmentInfo: Sendable, Hashable, Codable {
    public var billingPeriodNumber: Int32?
    @EpochMilliseconds public var commitmentExpiresDate: Int64?
    /// In milli-units of the transaction's currency.
    public var commitmentPrice: Int64?
    public var totalBillingPeriods: Int32?

    /// Every field defaults to nil (absent).
    public init(
        billingPeriodNumber: Int32? = nil,
        commitmentExpiresDate: Int64? = nil,
        commitmentPrice: Int64? = nil,
        totalBillingPeriods: Int32? = nil
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
        self.totalBillingPeriods = totalBillingPeriods
    }
}

extension JWSTransactionDecodedPayload: VerifiablePayload {
    public var verificationSignedDate: Int64? { signedDate }
    public var verificationEnvironment: AppStoreEnvironment? { environment }
    public var verificationBundleId: String? { bundleId }
    /// Transactions carry no app Apple ID.
    public var verificationAppAppleId: Int64? { nil }
}
