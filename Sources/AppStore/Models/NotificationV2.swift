import Entitlements

/// The HTTP body of a V2 App Store Server Notification: one JWS.
public struct ResponseBodyV2: Sendable, Hashable, Codable {
    /// The notification as a JWS whose payload is a ``ResponseBodyV2DecodedPayload``.
    public var signedPayload: String?

    /// Every field defaults to nil (absent).
    public init(
        signedPayload: String? = nil
    ) {
        self.signedPayload = signedPayload
    }
}

/// The decoded payload of a V2 notification.
///
/// Exactly one of `data`, `summary`, `externalPurchaseToken` or `appData` is expected to be present.
public struct ResponseBodyV2DecodedPayload: Sendable, Hashable, Codable {
    public var notificationType: NotificationType?
    public var subtype: NotificationSubtype?
    /// Unique per notification and stable across Apple's retries; the deduplication key.
    public var notificationUUID: String?
    /// App metadata and the signed transaction and renewal info, for most types.
    public var data: NotificationData?
    /// The result of a mass renewal-date extension (`RENEWAL_EXTENSION` / `SUMMARY`).
    public var summary: Summary?
    /// Present for `EXTERNAL_PURCHASE_TOKEN`.
    public var externalPurchaseToken: ExternalPurchaseToken?
    /// Present for `RESCIND_CONSENT`.
    public var appData: AppData?
    /// The notification format version, `2.0`.
    public var version: String?
    /// When the App Store signed the payload; orders notifications for the same subscription.
    @EpochMilliseconds public var signedDate: Int64?

    /// Every field defaults to nil (absent).
    public init(
        notificationType: NotificationType? = nil,
        subtype: NotificationSubtype? = nil,
        notificationUUID: String? = nil,
        data: NotificationData? = nil,
        summary: Summary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: AppData? = nil,
        version: String? = nil,
        signedDate: Int64? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.appData = appData
        self.version = version
        self.signedDate = signedDate
    }
}

/// App metadata and signed purchase data carried by most V2 notifications.
public struct NotificationData: Sendable, Hashable, Codable {
    public var environment: AppStoreEnvironment?
    /// The app's Apple ID; absent in Sandbox.
    public var appAppleId: Int64?
    public var bundleId: String?
    public var bundleVersion: String?
    /// A JWS whose payload is a ``JWSTransactionDecodedPayload``; verify it separately.
    public var signedTransactionInfo: String?
    /// A JWS whose payload is a ``JWSRenewalInfoDecodedPayload``; verify it separately.
    public var signedRenewalInfo: String?
    /// The subscription's status as of the notification's `signedDate`.
    public var status: SubscriptionStatus?
    /// Present for `CONSUMPTION_REQUEST`.
    public var consumptionRequestReason: ConsumptionRequestReason?
    /// `signedTransactionInfo`, decoded once its own signature verified; never read from or
    /// written to JSON (the outer signature does not vouch for it), so nil until a verifier set it.
    public var transactionInfo: JWSTransactionDecodedPayload?
    /// `signedRenewalInfo`, decoded once its own signature verified; never read from or written to JSON.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?

    enum CodingKeys: String, CodingKey {
        case environment, appAppleId, bundleId, bundleVersion, signedTransactionInfo, signedRenewalInfo, status
        case consumptionRequestReason
    }

    /// Every field defaults to nil (absent).
    public init(
        environment: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        bundleVersion: String? = nil,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        status: SubscriptionStatus? = nil,
        consumptionRequestReason: ConsumptionRequestReason? = nil
    ) {
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }
}

/// The outcome of a mass renewal-date extension, sent as `RENEWAL_EXTENSION` / `SUMMARY`.
public struct Summary: Sendable, Hashable, Codable {
    public var environment: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var productId: String?
    /// The identifier sent with the mass-extension request.
    public var requestIdentifier: String?
    /// ISO 3166-1 alpha-3 codes the extension applied to.
    public var storefrontCountryCodes: [String]?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    /// Every field defaults to nil (absent).
    public init(
        environment: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        requestIdentifier: String? = nil,
        storefrontCountryCodes: [String]? = nil,
        succeededCount: Int64? = nil,
        failedCount: Int64? = nil
    ) {
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.productId = productId
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// An External Purchase API token, sent as `EXTERNAL_PURCHASE_TOKEN`.
public struct ExternalPurchaseToken: Sendable, Hashable, Codable {
    /// Starts with `SANDBOX` for sandbox tokens; the payload has no environment field.
    public var externalPurchaseId: String?
    @EpochMilliseconds public var tokenCreationDate: Int64?
    public var appAppleId: Int64?
    public var bundleId: String?
    /// Documented by Apple; not in Apple's Swift or Python libraries.
    public var tokenType: ExternalPurchaseTokenType?
    /// Documented by Apple; not in Apple's Swift or Python libraries.
    @EpochMilliseconds public var tokenExpirationDate: Int64?

    /// Every field defaults to nil (absent).
    public init(
        externalPurchaseId: String? = nil,
        tokenCreationDate: Int64? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        tokenType: ExternalPurchaseTokenType? = nil,
        tokenExpirationDate: Int64? = nil
    ) {
        self.externalPurchaseId = externalPurchaseId
        self.tokenCreationDate = tokenCreationDate
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.tokenType = tokenType
        self.tokenExpirationDate = tokenExpirationDate
    }

    /// The environment the token belongs to, inferred as Apple's libraries do: an id starting with `SANDBOX`
    /// means Sandbox, anything else (including no id) Production.
    public var inferredEnvironment: AppStoreEnvironment {
        externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
    }
}

/// App metadata sent with `RESCIND_CONSENT`.
public struct AppData: Sendable, Hashable, Codable {
    public var appAppleId: Int64?
    public var bundleId: String?
    public var environment: AppStoreEnvironment?
    /// A JWS whose payload is an ``AppTransaction``.
    public var signedAppTransactionInfo: String?
    /// `signedAppTransactionInfo`, decoded once its own signature verified; never read from or
    /// written to JSON, so nil until a verifier set it.
    public var appTransaction: AppTransaction?

    enum CodingKeys: String, CodingKey {
        case appAppleId, bundleId, environment, signedAppTransactionInfo
    }

    /// Every field defaults to nil (absent).
    public init(
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedAppTransactionInfo: String? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.environment = environment
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}

extension ResponseBodyV2DecodedPayload: VerifiablePayload {
    public var verificationSignedDate: Int64? { signedDate }

    // The app identity comes from whichever body is present, checked in the same order as Apple's libraries.
    public var verificationEnvironment: AppStoreEnvironment? {
        if let data { return data.environment }
        if let summary { return summary.environment }
        if let externalPurchaseToken { return externalPurchaseToken.inferredEnvironment }
        if let appData { return appData.environment }
        return nil
    }

    public var verificationBundleId: String? {
        if let data { return data.bundleId }
        if let summary { return summary.bundleId }
        if let externalPurchaseToken { return externalPurchaseToken.bundleId }
        if let appData { return appData.bundleId }
        return nil
    }

    public var verificationAppAppleId: Int64? {
        if let data { return data.appAppleId }
        if let summary { return summary.appAppleId }
        if let externalPurchaseToken { return externalPurchaseToken.appAppleId }
        if let appData { return appData.appAppleId }
        return nil
    }
}
