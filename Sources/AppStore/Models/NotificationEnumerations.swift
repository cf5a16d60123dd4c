/// The state of an auto-renewable subscription (`status` in notification data and status responses).
public struct SubscriptionStatus: AppStoreEnumeration {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let active = SubscriptionStatus(rawValue: 1)
    public static let expired = SubscriptionStatus(rawValue: 2)
    public static let billingRetry = SubscriptionStatus(rawValue: 3)
    public static let billingGracePeriod = SubscriptionStatus(rawValue: 4)
    public static let revoked = SubscriptionStatus(rawValue: 5)

    public static let known: [SubscriptionStatus] = [
        .active, .expired, .billingRetry, .billingGracePeriod, .revoked,
    ]
}

/// Why the customer asked for the refund behind a `CONSUMPTION_REQUEST`.
public struct ConsumptionRequestReason: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let unintendedPurchase = ConsumptionRequestReason(rawValue: "UNINTENDED_PURCHASE")
    public static let fulfillmentIssue = ConsumptionRequestReason(rawValue: "FULFILLMENT_ISSUE")
    public static let unsatisfiedWithPurchase = ConsumptionRequestReason(rawValue: "UNSATISFIED_WITH_PURCHASE")
    public static let legal = ConsumptionRequestReason(rawValue: "LEGAL")
    public static let other = ConsumptionRequestReason(rawValue: "OTHER")

    public static let known: [ConsumptionRequestReason] = [
        .unintendedPurchase, .fulfillmentIssue, .unsatisfiedWithPurchase, .legal, .other,
    ]
}

/// The kind of External Purchase custom-link token (`tokenType`).
public struct ExternalPurchaseTokenType: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let services = ExternalPurchaseTokenType(rawValue: "SERVICES")
    public static let acquisition = ExternalPurchaseTokenType(rawValue: "ACQUISITION")

    public static let known: [ExternalPurchaseTokenType] = [
        .services, .acquisition,
    ]
}

/// The outcome of one attempt to deliver a notification to the server.
public struct SendAttemptResult: AppStoreEnumeration {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let success = SendAttemptResult(rawValue: "SUCCESS")
    public static let timedOut = SendAttemptResult(rawValue: "TIMED_OUT")
    public static let tlsIssue = SendAttemptResult(rawValue: "TLS_ISSUE")
    public static let circularRedirect = SendAttemptResult(rawValue: "CIRCULAR_REDIRECT")
    public static let noResponse = SendAttemptResult(rawValue: "NO_RESPONSE")
    public static let socketIssue = SendAttemptResult(rawValue: "SOCKET_ISSUE")
    public static let unsupportedCharset = SendAttemptResult(rawValue: "UNSUPPORTED_CHARSET")
    public static let invalidResponse = SendAttemptResult(rawValue: "INVALID_RESPONSE")
    public static let prematureClose = SendAttemptResult(rawValue: "PREMATURE_CLOSE")
    public static let unsuccessfulHTTPResponseCode = SendAttemptResult(rawValue: "UNSUCCESSFUL_HTTP_RESPONSE_CODE")
    public static let other = SendAttemptResult(rawValue: "OTHER")

    public static let known: [SendAttemptResult] = [
        .success, .timedOut, .tlsIssue, .circularRedirect, .noResponse, .socketIssue, .unsupportedCharset,
        .invalidResponse, .prematureClose, .unsuccessfulHTTPResponseCode, .other,
    ]
}
