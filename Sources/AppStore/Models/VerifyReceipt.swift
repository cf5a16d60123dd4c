// Legacy receipts and V1 notifications write dates as strings of epoch milliseconds and flags as strings.
// The models keep those strings exactly as sent; the typed views (dates without the `Ms` suffix, other
// values with a `Value` suffix) parse them and give nil for anything malformed instead of failing the decode.

/// The `status` of a verifyReceipt response (and of `unified_receipt`).
///
/// 21100–21199 are internal errors; see ``isRetryable``.
public struct VerifyReceiptStatus: AppStoreEnumeration {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let valid = VerifyReceiptStatus(rawValue: 0)
    /// The request was not an HTTP POST.
    public static let badRequestMethod = VerifyReceiptStatus(rawValue: 21000)
    public static let malformedReceiptData = VerifyReceiptStatus(rawValue: 21002)
    public static let notAuthenticated = VerifyReceiptStatus(rawValue: 21003)
    public static let sharedSecretMismatch = VerifyReceiptStatus(rawValue: 21004)
    /// Retry.
    public static let serverUnavailable = VerifyReceiptStatus(rawValue: 21005)
    /// Valid receipt, expired subscription (legacy iOS 6 style receipts only).
    public static let subscriptionExpired = VerifyReceiptStatus(rawValue: 21006)
    /// Retry against the sandbox URL.
    public static let sandboxReceiptSentToProduction = VerifyReceiptStatus(rawValue: 21007)
    /// Retry against the production URL.
    public static let productionReceiptSentToSandbox = VerifyReceiptStatus(rawValue: 21008)
    public static let internalDataAccessError = VerifyReceiptStatus(rawValue: 21009)
    public static let accountNotFound = VerifyReceiptStatus(rawValue: 21010)

    public static let known: [VerifyReceiptStatus] = [
        .valid, .badRequestMethod, .malformedReceiptData, .notAuthenticated, .sharedSecretMismatch,
        .serverUnavailable, .subscriptionExpired, .sandboxReceiptSentToProduction, .productionReceiptSentToSandbox,
        .internalDataAccessError, .accountNotFound,
    ]

    /// A temporary failure: the server was unavailable or an internal error in 21100–21199.
    public var isRetryable: Bool {
        self == .serverUnavailable || (21100...21199).contains(rawValue)
    }
}

/// The body of `POST /verifyReceipt`.
public struct VerifyReceiptRequest: Sendable, Hashable, Codable {
    /// The base64 app receipt.
    public var receiptData: String?
    /// The app's shared secret; required for auto-renewable subscriptions.
    public var password: String?
    /// Only the latest renewal of each subscription.
    public var excludeOldTransactions: Bool?

    /// Every field defaults to nil (absent).
    public init(
        receiptData: String? = nil,
        password: String? = nil,
        excludeOldTransactions: Bool? = nil
    ) {
        self.receiptData = receiptData
        self.password = password
        self.excludeOldTransactions = excludeOldTransactions
    }

    enum CodingKeys: String, CodingKey {
        case receiptData = "receipt-data"
        case password
        case excludeOldTransactions = "exclude-old-transactions"
    }
}

/// The response of `POST /verifyReceipt`.
public struct VerifyReceiptResponse: Sendable, Hashable, Codable {
    /// 0 when valid; see ``VerifyReceiptStatus``.
    public var status: Int?
    public var environment: LegacyEnvironment?
    public var receipt: LegacyReceipt?
    public var latestReceipt: String?
    public var latestReceiptInfo: [LatestReceiptInfo]?
    public var pendingRenewalInfo: [PendingRenewalInfo]?
    /// Set with internal-error statuses that are worth retrying.
    public var isRetryable: Bool?

    /// Every field defaults to nil (absent).
    public init(
        status: Int? = nil,
        environment: LegacyEnvironment? = nil,
        receipt: LegacyReceipt? = nil,
        latestReceipt: String? = nil,
        latestReceiptInfo: [LatestReceiptInfo]? = nil,
        pendingRenewalInfo: [PendingRenewalInfo]? = nil,
        isRetryable: Bool? = nil
    ) {
        self.status = status
        self.environment = environment
        self.receipt = receipt
        self.latestReceipt = latestReceipt
        self.latestReceiptInfo = latestReceiptInfo
        self.pendingRenewalInfo = pendingRenewalInfo
        self.isRetryable = isRetryable
    }

    enum CodingKeys: String, CodingKey {
        case status
        case environment
        case receipt
        case latestReceipt = "latest_receipt"
        case latestReceiptInfo = "latest_receipt_info"
        case pendingRenewalInfo = "pending_renewal_info"
        case isRetryable = "is-retryable"
    }

    /// `status` as a ``VerifyReceiptStatus``.
    public var statusValue: VerifyReceiptStatus? { status.map(VerifyReceiptStatus.init(rawValue:)) }
}

/// The decoded app receipt in a verifyReceipt response (`receipt`).
public struct LegacyReceipt: Sendable, Hashable, Codable {
    public var receiptType: String?
    public var adamId: Int64?
    public var appItemId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var originalApplicationVersion: String?
    public var downloadId: Int64?
    public var versionExternalIdentifier: Int64?
    public var receiptCreationDateMs: String?
    public var requestDateMs: String?
    public var originalPurchaseDateMs: String?
    /// Present only for pre-ordered apps.
    public var preorderDateMs: String?
    /// Volume Purchase Program receipts only.
    public var expirationDateMs: String?
    public var inApp: [LatestReceiptInfo]?

    /// Every field defaults to nil (absent).
    public init(
        receiptType: String? = nil,
        adamId: Int64? = nil,
        appItemId: Int64? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        originalApplicationVersion: String? = nil,
        downloadId: Int64? = nil,
        versionExternalIdentifier: Int64? = nil,
        receiptCreationDateMs: String? = nil,
        requestDateMs: String? = nil,
        originalPurchaseDateMs: String? = nil,
        preorderDateMs: String? = nil,
        expirationDateMs: String? = nil,
        inApp: [LatestReceiptInfo]? = nil
    ) {
        self.receiptType = receiptType
        self.adamId = adamId
        self.appItemId = appItemId
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.downloadId = downloadId
        self.versionExternalIdentifier = versionExternalIdentifier
        self.receiptCreationDateMs = receiptCreationDateMs
        self.requestDateMs = requestDateMs
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.preorderDateMs = preorderDateMs
        self.expirationDateMs = expirationDateMs
        self.inApp = inApp
    }

    enum CodingKeys: String, CodingKey {
        case receiptType = "receipt_type"
        case adamId = "adam_id"
        case appItemId = "app_item_id"
        case bundleId = "bundle_id"
        case applicationVersion = "application_version"
        case originalApplicationVersion = "original_application_version"
        case downloadId = "download_id"
        case versionExternalIdentifier = "version_external_identifier"
        case receiptCreationDateMs = "receipt_creation_date_ms"
        case requestDateMs = "request_date_ms"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case preorderDateMs = "preorder_date_ms"
        case expirationDateMs = "expiration_date_ms"
        case inApp = "in_app"
    }

    public var receiptCreationDate: Int64? { LegacyField.milliseconds(receiptCreationDateMs) }
    public var requestDate: Int64? { LegacyField.milliseconds(requestDateMs) }
    public var originalPurchaseDate: Int64? { LegacyField.milliseconds(originalPurchaseDateMs) }
    public var preorderDate: Int64? { LegacyField.milliseconds(preorderDateMs) }
    public var expirationDate: Int64? { LegacyField.milliseconds(expirationDateMs) }
}
