/// The `errorCode` of an App Store Server API error body.
public struct APIErrorCode: AppStoreEnumeration {
    public var rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }

    public static let generalBadRequest = APIErrorCode(rawValue: 4_000_000)
    public static let invalidAppIdentifier = APIErrorCode(rawValue: 4_000_002)
    public static let invalidRequestRevision = APIErrorCode(rawValue: 4_000_005)
    public static let invalidTransactionId = APIErrorCode(rawValue: 4_000_006)
    public static let invalidOriginalTransactionId = APIErrorCode(rawValue: 4_000_008)
    public static let invalidExtendByDays = APIErrorCode(rawValue: 4_000_009)
    public static let invalidExtendReasonCode = APIErrorCode(rawValue: 4_000_010)
    public static let invalidRequestIdentifier = APIErrorCode(rawValue: 4_000_011)
    public static let startDateTooFarInPast = APIErrorCode(rawValue: 4_000_012)
    public static let startDateAfterEndDate = APIErrorCode(rawValue: 4_000_013)
    public static let invalidPaginationToken = APIErrorCode(rawValue: 4_000_014)
    public static let invalidStartDate = APIErrorCode(rawValue: 4_000_015)
    public static let invalidEndDate = APIErrorCode(rawValue: 4_000_016)
    public static let paginationTokenExpired = APIErrorCode(rawValue: 4_000_017)
    public static let invalidNotificationType = APIErrorCode(rawValue: 4_000_018)
    public static let multipleFiltersSupplied = APIErrorCode(rawValue: 4_000_019)
    public static let invalidTestNotificationToken = APIErrorCode(rawValue: 4_000_020)
    public static let invalidSort = APIErrorCode(rawValue: 4_000_021)
    public static let invalidProductType = APIErrorCode(rawValue: 4_000_022)
    public static let invalidProductId = APIErrorCode(rawValue: 4_000_023)
    public static let invalidSubscriptionGroupIdentifier = APIErrorCode(rawValue: 4_000_024)
    public static let invalidInAppOwnershipType = APIErrorCode(rawValue: 4_000_026)
    public static let invalidEmptyStorefrontCountryCodeList = APIErrorCode(rawValue: 4_000_027)
    public static let invalidStorefrontCountryCode = APIErrorCode(rawValue: 4_000_028)
    public static let invalidRevoked = APIErrorCode(rawValue: 4_000_030)
    public static let invalidStatus = APIErrorCode(rawValue: 4_000_031)
    /// The app account token must be a valid UUID.
    public static let invalidAppAccountTokenUUID = APIErrorCode(rawValue: 4_000_183)
    /// Family Sharing transactions aren't supported by this endpoint.
    public static let familyTransactionNotSupported = APIErrorCode(rawValue: 4_000_185)
    public static let transactionIdIsNotOriginalTransactionId = APIErrorCode(rawValue: 4_000_187)
    // Retention Messaging API.
    public static let invalidImage = APIErrorCode(rawValue: 4_000_161)
    public static let headerTooLong = APIErrorCode(rawValue: 4_000_162)
    public static let bodyTooLong = APIErrorCode(rawValue: 4_000_163)
    public static let invalidLocale = APIErrorCode(rawValue: 4_000_164)
    public static let altTextTooLong = APIErrorCode(rawValue: 4_000_175)
    public static let invalidPerformanceTestRequest = APIErrorCode(rawValue: 4_000_211)
    public static let invalidRequestId = APIErrorCode(rawValue: 4_000_212)
    public static let existingPerformanceTestRun = APIErrorCode(rawValue: 4_000_213)
    public static let badRequestRealtimeURL = APIErrorCode(rawValue: 4_000_215)
    public static let badRequestImageSize = APIErrorCode(rawValue: 4_000_216)
    public static let badRequestTooManyBulletPoints = APIErrorCode(rawValue: 4_000_218)
    public static let badRequestBulletPointTextTooLong = APIErrorCode(rawValue: 4_000_219)
    public static let badRequestAboveImageRequiresAnImage = APIErrorCode(rawValue: 4_000_224)
    public static let subscriptionExtensionIneligible = APIErrorCode(rawValue: 4_030_004)
    public static let subscriptionMaxExtension = APIErrorCode(rawValue: 4_030_005)
    public static let familySharedSubscriptionExtensionIneligible = APIErrorCode(rawValue: 4_030_007)
    public static let maximumNumberOfImagesReached = APIErrorCode(rawValue: 4_030_014)
    public static let maximumNumberOfMessagesReached = APIErrorCode(rawValue: 4_030_016)
    public static let messageNotApproved = APIErrorCode(rawValue: 4_030_017)
    public static let imageNotApproved = APIErrorCode(rawValue: 4_030_018)
    public static let imageInUse = APIErrorCode(rawValue: 4_030_019)
    /// The production realtime URL needs a passed performance test first.
    public static let forbiddenNoPassingTest = APIErrorCode(rawValue: 4_030_026)
    public static let accountNotFound = APIErrorCode(rawValue: 4_040_001)
    public static let accountNotFoundRetryable = APIErrorCode(rawValue: 4_040_002)
    public static let appNotFound = APIErrorCode(rawValue: 4_040_003)
    public static let appNotFoundRetryable = APIErrorCode(rawValue: 4_040_004)
    public static let originalTransactionIdNotFound = APIErrorCode(rawValue: 4_040_005)
    public static let originalTransactionIdNotFoundRetryable = APIErrorCode(rawValue: 4_040_006)
    public static let serverNotificationURLNotFound = APIErrorCode(rawValue: 4_040_007)
    public static let testNotificationNotFound = APIErrorCode(rawValue: 4_040_008)
    public static let statusRequestNotFound = APIErrorCode(rawValue: 4_040_009)
    /// Also the answer when a transaction is asked of the wrong environment.
    public static let transactionIdNotFound = APIErrorCode(rawValue: 4_040_010)
    public static let imageNotFound = APIErrorCode(rawValue: 4_040_014)
    public static let messageNotFound = APIErrorCode(rawValue: 4_040_015)
    public static let performanceTestRunNotFound = APIErrorCode(rawValue: 4_040_018)
    public static let appTransactionDoesNotExist = APIErrorCode(rawValue: 4_040_019)
    public static let defaultMessageNotFound = APIErrorCode(rawValue: 4_040_020)
    public static let realtimeURLNotFound = APIErrorCode(rawValue: 4_040_021)
    public static let imageAlreadyExists = APIErrorCode(rawValue: 4_090_000)
    public static let messageAlreadyExists = APIErrorCode(rawValue: 4_090_001)
    /// Back off until the `Retry-After` header (UNIX milliseconds).
    public static let rateLimitExceeded = APIErrorCode(rawValue: 4_290_000)
    public static let generalInternal = APIErrorCode(rawValue: 5_000_000)
    public static let generalInternalRetryable = APIErrorCode(rawValue: 5_000_001)

    public static let known: [APIErrorCode] = [
        .generalBadRequest, .invalidAppIdentifier, .invalidRequestRevision, .invalidTransactionId,
        .invalidOriginalTransactionId, .invalidExtendByDays, .invalidExtendReasonCode, .invalidRequestIdentifier,
        .startDateTooFarInPast, .startDateAfterEndDate, .invalidPaginationToken, .invalidStartDate, .invalidEndDate,
        .paginationTokenExpired, .invalidNotificationType, .multipleFiltersSupplied, .invalidTestNotificationToken,
        .invalidSort, .invalidProductType, .invalidProductId, .invalidSubscriptionGroupIdentifier,
        .invalidInAppOwnershipType, .invalidEmptyStorefrontCountryCodeList, .invalidStorefrontCountryCode,
        .invalidRevoked, .invalidStatus, .invalidAppAccountTokenUUID, .familyTransactionNotSupported,
        .transactionIdIsNotOriginalTransactionId, .invalidImage, .headerTooLong, .bodyTooLong, .invalidLocale,
        .altTextTooLong, .invalidPerformanceTestRequest, .invalidRequestId, .existingPerformanceTestRun,
        .badRequestRealtimeURL, .badRequestImageSize, .badRequestTooManyBulletPoints, .badRequestBulletPointTextTooLong,
        .badRequestAboveImageRequiresAnImage, .subscriptionExtensionIneligible, .subscriptionMaxExtension,
        .familySharedSubscriptionExtensionIneligible, .maximumNumberOfImagesReached, .maximumNumberOfMessagesReached,
        .messageNotApproved, .imageNotApproved, .imageInUse, .forbiddenNoPassingTest, .accountNotFound, .accountNotFoundRetryable, .appNotFound,
        .appNotFoundRetryable, .originalTransactionIdNotFound, .originalTransactionIdNotFoundRetryable,
        .serverNotificationURLNotFound, .testNotificationNotFound, .statusRequestNotFound, .transactionIdNotFound,
        .imageNotFound, .messageNotFound, .performanceTestRunNotFound, .appTransactionDoesNotExist, .defaultMessageNotFound,
        .realtimeURLNotFound, .imageAlreadyExists, .messageAlreadyExists, .rateLimitExceeded, .generalInternal, .generalInternalRetryable,
    ]

    /// Codes Apple documents as transient: retrying the same request later may succeed.
    public var isRetryable: Bool {
        [.accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIdNotFoundRetryable,
         .generalInternalRetryable, .rateLimitExceeded].contains(self)
    }
}

/// Why a subscription's renewal date is extended (`extendReasonCode`).
public struct ExtendReasonCode: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = ExtendReasonCode(rawValue: 0)
    public static let customerSatisfaction = ExtendReasonCode(rawValue: 1)
    public static let other = ExtendReasonCode(rawValue: 2)
    public static let serviceIssueOrOutage = ExtendReasonCode(rawValue: 3)

    public static let known: [ExtendReasonCode] = [
        .undeclared, .customerSatisfaction, .other, .serviceIssueOrOutage,
    ]
}

/// Whether an order id was found (`status` of Look Up Order ID).
public struct OrderLookupStatus: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let valid = OrderLookupStatus(rawValue: 0)
    public static let invalid = OrderLookupStatus(rawValue: 1)

    public static let known: [OrderLookupStatus] = [
        .valid, .invalid,
    ]
}

/// How much of the in-app purchase the customer consumed.
public struct ConsumptionStatus: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = ConsumptionStatus(rawValue: 0)
    public static let notConsumed = ConsumptionStatus(rawValue: 1)
    public static let partiallyConsumed = ConsumptionStatus(rawValue: 2)
    public static let fullyConsumed = ConsumptionStatus(rawValue: 3)

    public static let known: [ConsumptionStatus] = [
        .undeclared, .notConsumed, .partiallyConsumed, .fullyConsumed,
    ]
}

/// Where the customer consumed the purchase (`platform`).
public struct ConsumptionPlatform: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = ConsumptionPlatform(rawValue: 0)
    public static let apple = ConsumptionPlatform(rawValue: 1)
    public static let nonApple = ConsumptionPlatform(rawValue: 2)

    public static let known: [ConsumptionPlatform] = [
        .undeclared, .apple, .nonApple,
    ]
}

/// Whether the app delivered a working in-app purchase (`deliveryStatus`).
public struct DeliveryStatus: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let deliveredAndWorkingProperly = DeliveryStatus(rawValue: 0)
    public static let didNotDeliverDueToQualityIssue = DeliveryStatus(rawValue: 1)
    public static let deliveredWrongItem = DeliveryStatus(rawValue: 2)
    public static let didNotDeliverDueToServerOutage = DeliveryStatus(rawValue: 3)
    public static let didNotDeliverDueToInGameCurrencyChange = DeliveryStatus(rawValue: 4)
    public static let didNotDeliverForOtherReason = DeliveryStatus(rawValue: 5)

    public static let known: [DeliveryStatus] = [
        .deliveredAndWorkingProperly, .didNotDeliverDueToQualityIssue, .deliveredWrongItem,
        .didNotDeliverDueToServerOutage, .didNotDeliverDueToInGameCurrencyChange, .didNotDeliverForOtherReason,
    ]
}

/// The age of the customer's account (`accountTenure`).
public struct AccountTenure: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = AccountTenure(rawValue: 0)
    public static let days0To3 = AccountTenure(rawValue: 1)
    public static let days3To10 = AccountTenure(rawValue: 2)
    public static let days10To30 = AccountTenure(rawValue: 3)
    public static let days30To90 = AccountTenure(rawValue: 4)
    public static let days90To180 = AccountTenure(rawValue: 5)
    public static let days180To365 = AccountTenure(rawValue: 6)
    public static let over365Days = AccountTenure(rawValue: 7)

    public static let known: [AccountTenure] = [
        .undeclared, .days0To3, .days3To10, .days10To30, .days30To90, .days90To180, .days180To365, .over365Days,
    ]
}

/// How long the customer used the app (`playTime`).
public struct PlayTime: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = PlayTime(rawValue: 0)
    public static let minutes0To5 = PlayTime(rawValue: 1)
    public static let minutes5To60 = PlayTime(rawValue: 2)
    public static let hours1To6 = PlayTime(rawValue: 3)
    public static let hours6To24 = PlayTime(rawValue: 4)
    public static let days1To4 = PlayTime(rawValue: 5)
    public static let days4To16 = PlayTime(rawValue: 6)
    public static let over16Days = PlayTime(rawValue: 7)

    public static let known: [PlayTime] = [
        .undeclared, .minutes0To5, .minutes5To60, .hours1To6, .hours6To24, .days1To4, .days4To16, .over16Days,
    ]
}

/// Band of the customer's lifetime in-app spend in USD (`lifetimeDollarsPurchased`).
public struct LifetimeDollarsPurchased: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = LifetimeDollarsPurchased(rawValue: 0)
    public static let usd0 = LifetimeDollarsPurchased(rawValue: 1)
    public static let usd0_01To49_99 = LifetimeDollarsPurchased(rawValue: 2)
    public static let usd50To99_99 = LifetimeDollarsPurchased(rawValue: 3)
    public static let usd100To499_99 = LifetimeDollarsPurchased(rawValue: 4)
    public static let usd500To999_99 = LifetimeDollarsPurchased(rawValue: 5)
    public static let usd1000To1999_99 = LifetimeDollarsPurchased(rawValue: 6)
    public static let usd2000OrMore = LifetimeDollarsPurchased(rawValue: 7)

    public static let known: [LifetimeDollarsPurchased] = [
        .undeclared, .usd0, .usd0_01To49_99, .usd50To99_99, .usd100To499_99, .usd500To999_99, .usd1000To1999_99,
        .usd2000OrMore,
    ]
}

/// Band of the customer's lifetime refunds in USD (`lifetimeDollarsRefunded`).
public struct LifetimeDollarsRefunded: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = LifetimeDollarsRefunded(rawValue: 0)
    public static let usd0 = LifetimeDollarsRefunded(rawValue: 1)
    public static let usd0_01To49_99 = LifetimeDollarsRefunded(rawValue: 2)
    public static let usd50To99_99 = LifetimeDollarsRefunded(rawValue: 3)
    public static let usd100To499_99 = LifetimeDollarsRefunded(rawValue: 4)
    public static let usd500To999_99 = LifetimeDollarsRefunded(rawValue: 5)
    public static let usd1000To1999_99 = LifetimeDollarsRefunded(rawValue: 6)
    public static let usd2000OrMore = LifetimeDollarsRefunded(rawValue: 7)

    public static let known: [LifetimeDollarsRefunded] = [
        .undeclared, .usd0, .usd0_01To49_99, .usd50To99_99, .usd100To499_99, .usd500To999_99, .usd1000To1999_99,
        .usd2000OrMore,
    ]
}

/// The status of the customer's account in the app (`userStatus`).
public struct UserStatus: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = UserStatus(rawValue: 0)
    public static let active = UserStatus(rawValue: 1)
    public static let suspended = UserStatus(rawValue: 2)
    public static let terminated = UserStatus(rawValue: 3)
    public static let limitedAccess = UserStatus(rawValue: 4)

    public static let known: [UserStatus] = [
        .undeclared, .active, .suspended, .terminated, .limitedAccess,
    ]
}

/// The developer's preference on granting a refund (`refundPreference`).
public struct RefundPreference: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let undeclared = RefundPreference(rawValue: 0)
    public static let preferGrant = RefundPreference(rawValue: 1)
    public static let preferDecline = RefundPreference(rawValue: 2)
    public static let noPreference = RefundPreference(rawValue: 3)

    public static let known: [RefundPreference] = [
        .undeclared, .preferGrant, .preferDecline, .noPreference,
    ]
}
