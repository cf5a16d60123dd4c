import Entitlements

/// The body of an App Store Server API error, next to a 4xx or 5xx HTTP status.
///
/// An unlisted code decodes and keeps its number (``APIErrorCode/isKnown`` is false).
public struct APIErrorResponse: Sendable, Hashable, Codable {
    public var errorCode: APIErrorCode?
    public var errorMessage: String?

    /// Every field defaults to nil (absent).
    public init(
        errorCode: APIErrorCode? = nil,
        errorMessage: String? = nil
    ) {
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}

/// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}`.
public struct TransactionInfoResponse: Sendable, Hashable, Codable {
    /// A JWS whose payload is a ``JWSTransactionDecodedPayload``.
    public var signedTransactionInfo: String?

    /// Every field defaults to nil (absent).
    public init(
        signedTransactionInfo: String? = nil
    ) {
        self.signedTransactionInfo = signedTransactionInfo
    }
}

/// Get App Transaction Info.
public struct AppTransactionInfoResponse: Sendable, Hashable, Codable {
    /// A JWS whose payload is an ``AppTransaction``.
    public var signedAppTransactionInfo: String?

    /// Every field defaults to nil (absent).
    public init(
        signedAppTransactionInfo: String? = nil
    ) {
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}

/// Get Transaction History v2: one page of up to 20 signed transactions.
public struct HistoryResponse: Sendable, Hashable, Codable {
    /// Pass back as `revision` to get the next page.
    public var revision: String?
    public var hasMore: Bool?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: AppStoreEnvironment?
    /// JWS strings whose payloads are ``JWSTransactionDecodedPayload``.
    public var signedTransactions: [String]?

    /// Every field defaults to nil (absent).
    public init(
        revision: String? = nil,
        hasMore: Bool? = nil,
        bundleId: String? = nil,
        appAppleId: Int64? = nil,
        environment: AppStoreEnvironment? = nil,
        signedTransactions: [String]? = nil
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
}

/// Get All Subscription Statuses: the latest transaction of each subscription, by group.
public struct StatusResponse: Sendable, Hashable, Codable {
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [SubscriptionGroupIdentifierItem]?

    /// Every field defaults to nil (absent).
    public init(
        environment: AppStoreEnvironment? = nil,
        bundleId: String? = nil,
        appAppleId: Int64? = nil,
        data: [SubscriptionGroupIdentifierItem]? = nil
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }
}

/// The subscriptions of one subscription group in a ``StatusResponse``.
public struct SubscriptionGroupIdentifierItem: Sendable, Hashable, Codable {
    public var subscriptionGroupIdentifier: String?
    public var lastTransactions: [LastTransactionsItem]?

    /// Every field defaults to nil (absent).
    public init(
        subscriptionGroupIdentifier: String? = nil,
        lastTransactions: [LastTransactionsItem]? = nil
    ) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.lastTransactions = lastTransactions
    }
}

/// The most recent signed transaction and renewal info of one subscription.
public struct LastTransactionsItem: Sendable, Hashable, Codable {
    public var status: SubscriptionStatus?
    public var originalTransactionId: String?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?

    /// Every field defaults to nil (absent).
    public init(
        status: SubscriptionStatus? = nil,
        originalTransactionId: String? = nil,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil
    ) {
        self.status = status
        self.originalTransactionId = originalTransactionId
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
    }
}

/// Get Refund History v2: refunded and revoked transactions, paginated by `revision`.
public struct RefundHistoryResponse: Sendable, Hashable, Codable {
    public var signedTransactions: [String]?
    public var revision: String?
    public var hasMore: Bool?

    /// Every field defaults to nil (absent).
    public init(
        signedTransactions: [String]? = nil,
        revision: String? = nil,
        hasMore: Bool? = nil
    ) {
        self.signedTransactions = signedTransactions
        self.revision = revision
        self.hasMore = hasMore
    }
}

/// Look Up Order ID: the transactions of a customer's order id.
public struct OrderLookupResponse: Sendable, Hashable, Codable {
    public var status: OrderLookupStatus?
    public var signedTransactions: [String]?

    /// Every field defaults to nil (absent).
    public init(
        status: OrderLookupStatus? = nil,
        signedTransactions: [String]? = nil
    ) {
        self.status = status
        self.signedTransactions = signedTransactions
    }
}

/// The body of Get Notification History. `startDate` and `endDate` are required by Apple;
/// use either `notificationType` (with optional subtype) or `transactionId`, not both.
public struct NotificationHistoryRequest: Sendable, Hashable, Codable {
    @EpochMilliseconds public var startDate: Int64?
    @EpochMilliseconds public var endDate: Int64?
    public var notificationType: NotificationType?
    public var notificationSubtype: NotificationSubtype?
    public var transactionId: String?
    /// Only notifications that never reached the server.
    public var onlyFailures: Bool?

    /// Every field defaults to nil (absent).
    public init(
        startDate: Int64? = nil,
        endDate: Int64? = nil,
        notificationType: NotificationType? = nil,
        notificationSubtype: NotificationSubtype? = nil,
        transactionId: String? = nil,
        onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}

/// One page of notification history.
public struct NotificationHistoryResponse: Sendable, Hashable, Codable {
    /// Pass back as the `paginationToken` query parameter for the next page.
    public var paginationToken: String?
    public var hasMore: Bool?
    public var notificationHistory: [NotificationHistoryResponseItem]?

    /// Every field defaults to nil (absent).
    public init(
        paginationToken: String? = nil,
        hasMore: Bool? = nil,
        notificationHistory: [NotificationHistoryResponseItem]? = nil
    ) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }
}

/// One past notification and Apple's attempts to deliver it.
public struct NotificationHistoryResponseItem: Sendable, Hashable, Codable {
    /// The notification JWS, as it was (or would have been) sent.
    public var signedPayload: String?
    public var sendAttempts: [SendAttemptItem]?

    /// Every field defaults to nil (absent).
    public init(
        signedPayload: String? = nil,
        sendAttempts: [SendAttemptItem]? = nil
    ) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// One attempt to deliver a notification.
public struct SendAttemptItem: Sendable, Hashable, Codable {
    @EpochMilliseconds public var attemptDate: Int64?
    public var sendAttemptResult: SendAttemptResult?

    /// Every field defaults to nil (absent).
    public init(
        attemptDate: Int64? = nil,
        sendAttemptResult: SendAttemptResult? = nil
    ) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }
}

/// Request a Test Notification: `POST /inApps/v1/notifications/test`.
public struct SendTestNotificationResponse: Sendable, Hashable, Codable {
    public var testNotificationToken: String?

    /// Every field defaults to nil (absent).
    public init(
        testNotificationToken: String? = nil
    ) {
        self.testNotificationToken = testNotificationToken
    }
}

/// Get Test Notification Status.
public struct CheckTestNotificationResponse: Sendable, Hashable, Codable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttemptItem]?

    /// Every field defaults to nil (absent).
    public init(
        signedPayload: String? = nil,
        sendAttempts: [SendAttemptItem]? = nil
    ) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// Extend a Subscription Renewal Date: `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`.
public struct ExtendRenewalDateRequest: Sendable, Hashable, Codable {
    /// 1 to 90 days.
    public var extendByDays: Int32?
    public var extendReasonCode: ExtendReasonCode?
    /// A UUID that makes the request idempotent.
    public var requestIdentifier: String?

    /// Every field defaults to nil (absent).
    public init(
        extendByDays: Int32? = nil,
        extendReasonCode: ExtendReasonCode? = nil,
        requestIdentifier: String? = nil
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }
}

/// The result of extending one subscription's renewal date.
public struct ExtendRenewalDateResponse: Sendable, Hashable, Codable {
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var success: Bool?
    /// The new renewal date.
    @EpochMilliseconds public var effectiveDate: Int64?

    /// Every field defaults to nil (absent).
    public init(
        originalTransactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        success: Bool? = nil,
        effectiveDate: Int64? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.success = success
        self.effectiveDate = effectiveDate
    }
}

/// Extend renewal dates for all active subscribers: `POST /inApps/v1/subscriptions/extend/mass`.
public struct MassExtendRenewalDateRequest: Sendable, Hashable, Codable {
    public var extendByDays: Int32?
    public var extendReasonCode: ExtendReasonCode?
    public var requestIdentifier: String?
    /// Limits the extension to these storefronts; all when absent.
    public var storefrontCountryCodes: [String]?
    public var productId: String?

    /// Every field defaults to nil (absent).
    public init(
        extendByDays: Int32? = nil,
        extendReasonCode: ExtendReasonCode? = nil,
        requestIdentifier: String? = nil,
        storefrontCountryCodes: [String]? = nil,
        productId: String? = nil
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.productId = productId
    }
}

/// Acknowledges a mass-extension request.
public struct MassExtendRenewalDateResponse: Sendable, Hashable, Codable {
    public var requestIdentifier: String?

    /// Every field defaults to nil (absent).
    public init(
        requestIdentifier: String? = nil
    ) {
        self.requestIdentifier = requestIdentifier
    }
}

/// Get Status of Subscription Renewal Date Extensions.
public struct MassExtendRenewalDateStatusResponse: Sendable, Hashable, Codable {
    public var requestIdentifier: String?
    public var complete: Bool?
    @EpochMilliseconds public var completeDate: Int64?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    /// Every field defaults to nil (absent).
    public init(
        requestIdentifier: String? = nil,
        complete: Bool? = nil,
        completeDate: Int64? = nil,
        succeededCount: Int64? = nil,
        failedCount: Int64? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// The body of Send Consumption Information (v1 fields):
/// `PUT /inApps/v1/transactions/consumption/{transactionId}`, the reply to `CONSUMPTION_REQUEST`.
public struct ConsumptionRequest: Sendable, Hashable, Codable {
    /// Apple rejects the request unless this is true.
    public var customerConsented: Bool?
    public var consumptionStatus: ConsumptionStatus?
    public var platform: ConsumptionPlatform?
    public var sampleContentProvided: Bool?
    public var deliveryStatus: DeliveryStatus?
    /// The UUID as text, or an empty string when there is none.
    public var appAccountToken: String?
    public var accountTenure: AccountTenure?
    public var playTime: PlayTime?
    public var lifetimeDollarsRefunded: LifetimeDollarsRefunded?
    public var lifetimeDollarsPurchased: LifetimeDollarsPurchased?
    public var userStatus: UserStatus?
    public var refundPreference: RefundPreference?

    /// Every field defaults to nil (absent).
    public init(
        customerConsented: Bool? = nil,
        consumptionStatus: ConsumptionStatus? = nil,
        platform: ConsumptionPlatform? = nil,
        sampleContentProvided: Bool? = nil,
        deliveryStatus: DeliveryStatus? = nil,
        appAccountToken: String? = nil,
        accountTenure: AccountTenure? = nil,
        playTime: PlayTime? = nil,
        lifetimeDollarsRefunded: LifetimeDollarsRefunded? = nil,
        lifetimeDollarsPurchased: LifetimeDollarsPurchased? = nil,
        userStatus: UserStatus? = nil,
        refundPreference: RefundPreference? = nil
    ) {
        self.customerConsented = customerConsented
        self.consumptionStatus = consumptionStatus
        self.platform = platform
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.appAccountToken = appAccountToken
        self.accountTenure = accountTenure
        self.playTime = playTime
        self.lifetimeDollarsRefunded = lifetimeDollarsRefunded
        self.lifetimeDollarsPurchased = lifetimeDollarsPurchased
        self.userStatus = userStatus
        self.refundPreference = refundPreference
    }
}

/// Set App Account Token: `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`.
public struct UpdateAppAccountTokenRequest: Sendable, Hashable, Codable {
    /// A UUID as text.
    public var appAccountToken: String?

    /// Every field defaults to nil (absent).
    public init(
        appAccountToken: String? = nil
    ) {
        self.appAccountToken = appAccountToken
    }
}
