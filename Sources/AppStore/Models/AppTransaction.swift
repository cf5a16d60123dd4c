/// The customer's purchase of the app itself, as the App Store signs it.
public struct AppTransaction: Sendable, Hashable, Codable {
    /// The environment the app transaction was created in.
    public var receiptType: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    @EpochMilliseconds public var receiptCreationDate: Int64?
    /// Xcode writes year 1 (-62135769600000) here.
    @EpochMilliseconds public var originalPurchaseDate: Int64?
    public var originalApplicationVersion: String?
    /// Base64 device verification value.
    public var deviceVerification: String?
    /// The UUID nonce used for `deviceVerification`, as text.
    public var deviceVerificationNonce: String?
    /// Present only when the customer pre-ordered the app.
    @EpochMilliseconds public var preorderDate: Int64?
    public var appTransactionId: String?
    public var originalPlatform: PurchasePlatform?

    /// Every field defaults to nil (absent).
    public init(
        receiptType: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        versionExternalIdentifier: Int64? = nil,
        receiptCreationDate: Int64? = nil,
        originalPurchaseDate: Int64? = nil,
        originalApplicationVersion: String? = nil,
        deviceVerification: String? = nil,
        deviceVerificationNonce: String? = nil,
        preorderDate: Int64? = nil,
        appTransactionId: String? = nil,
        originalPlatform: PurchasePlatform? = nil
    ) {
        self.receiptType = receiptType
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.versionExternalIdentifier = versionExternalIdentifier
        self.receiptCreationDate = receiptCreationDate
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
        self.deviceVerification = deviceVerification
        self.deviceVerificationNonce = deviceVerificationNonce
        self.preorderDate = preorderDate
        self.appTransactionId = appTransactionId
        self.originalPlatform = originalPlatform
    }
}

extension AppTransaction: VerifiablePayload {
    /// An app transaction has no `signedDate`; Apple's libraries check its chain at `receiptCreationDate`.
    public var verificationSignedDate: Int64? { receiptCreationDate }
    public var verificationEnvironment: AppStoreEnvironment? { receiptType }
    public var verificationBundleId: String? { bundleId }
    public var verificationAppAppleId: Int64? { appAppleId }
}
