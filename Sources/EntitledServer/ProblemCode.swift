import AppStore
import GooglePlay
import HTTPServer

/// Every error code the API answers, with its HTTP status: the one table.
///
/// Handlers throw ``HTTPError/init(_:_:headers:)`` with a case of this enum, never a string, so a
/// code cannot be invented inline and its status is never chosen at the call site. The transport
/// codes are raised by `HTTPServer` itself (it knows nothing of this API); a test checks that what
/// it raises matches its row here. docs/openapi.yaml lists every case (also checked by a test).
public enum ProblemCode: String, CaseIterable, Sendable {
    // Transport (raised by HTTPServer).
    case notFound = "NOT_FOUND"
    case methodNotAllowed = "METHOD_NOT_ALLOWED"
    case payloadTooLarge = "PAYLOAD_TOO_LARGE"
    case bodyNotAllowed = "BODY_NOT_ALLOWED"
    case uriTooLong = "URI_TOO_LONG"
    case headersTooLarge = "HEADERS_TOO_LARGE"
    case missingParameter = "MISSING_PARAMETER"
    case invalidPathParameter = "INVALID_PATH_PARAMETER"
    case invalidJSON = "INVALID_JSON"
    case internalError = "INTERNAL_ERROR"
    case shuttingDown = "SHUTTING_DOWN"

    // Credentials and abuse.
    case unauthorized = "UNAUTHORIZED"
    case forbidden = "FORBIDDEN"
    // A customer token refused: which check failed, so that its issuer can fix it.
    case tokenMalformed = "TOKEN_MALFORMED"
    case tokenSignatureInvalid = "TOKEN_SIGNATURE_INVALID"
    case tokenExpiryMissing = "TOKEN_EXP_MISSING"
    case tokenLifetimeTooLong = "TOKEN_LIFETIME_TOO_LONG"
    case tokenExpired = "TOKEN_EXPIRED"
    case tokenCustomerMismatch = "TOKEN_CUSTOMER_MISMATCH"
    case tooManyRejections = "TOO_MANY_REJECTIONS"
    /// An app key's creations of anonymous customers are over its rate.
    case appKeyRateLimited = "APP_KEY_RATE_LIMITED"
    /// One client address's anonymous creations, refreshes or logins are over its rate.
    case addressRateLimited = "ADDRESS_RATE_LIMITED"
    /// A login's `token` is not a valid customer token for the `appUserId` it names.
    case invalidLoginToken = "INVALID_LOGIN_TOKEN"
    case offerRateLimited = "OFFER_RATE_LIMITED"

    // The request itself.
    case jsonTooDeep = "JSON_TOO_DEEP"
    case invalidRequest = "INVALID_REQUEST"
    case invalidAppUserId = "INVALID_APP_USER_ID"
    case invalidEnvironment = "INVALID_ENVIRONMENT"
    case invalidLimit = "INVALID_LIMIT"
    case invalidCursor = "INVALID_CURSOR"
    case invalidStorefront = "INVALID_STOREFRONT"
    case customerNotFound = "CUSTOMER_NOT_FOUND"
    case appNotFound = "APP_NOT_FOUND"
    case subscriptionNotFound = "SUBSCRIPTION_NOT_FOUND"
    case productNotFound = "PRODUCT_NOT_FOUND"
    case offerNotFound = "OFFER_NOT_FOUND"
    case offerNotEligible = "OFFER_NOT_ELIGIBLE"
    case signingKeyNotConfigured = "SIGNING_KEY_NOT_CONFIGURED"
    case aliasConflict = "ALIAS_CONFLICT"
    case grantNotFound = "GRANT_NOT_FOUND"
    /// `GET /v1/charts/{chart}` names no chart.
    case chartNotFound = "CHART_NOT_FOUND"
    case invalidGrant = "INVALID_GRANT"
    case insufficientBalance = "INSUFFICIENT_BALANCE"
    case idempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
    // Customer attributes, offerings and their targeting.
    case invalidAttribute = "INVALID_ATTRIBUTE"
    case tooManyAttributes = "TOO_MANY_ATTRIBUTES"
    case invalidOffering = "INVALID_OFFERING"
    case offeringNotFound = "OFFERING_NOT_FOUND"
    case offeringInUse = "OFFERING_IN_USE"
    case invalidTargeting = "INVALID_TARGETING"
    case invalidExperiment = "INVALID_EXPERIMENT"
    case experimentNotFound = "EXPERIMENT_NOT_FOUND"
    /// An ended experiment changed, or a variant's offering.
    case experimentLocked = "EXPERIMENT_LOCKED"

    // A signed payload or V1 body refused (recorded as rejected). `INVALID_ENVIRONMENT` above is
    // also one of these: a payload's environment the app does not accept.
    case invalidJWTFormat = "INVALID_JWT_FORMAT"
    case invalidAlgorithm = "INVALID_ALGORITHM"
    case invalidChainLength = "INVALID_CHAIN_LENGTH"
    case invalidCertificate = "INVALID_CERTIFICATE"
    case chainUntrusted = "CHAIN_UNTRUSTED"
    case certificateExpired = "CERTIFICATE_EXPIRED"
    case missingAppleOID = "MISSING_APPLE_OID"
    case certificateRevoked = "CERTIFICATE_REVOKED"
    case invalidSignature = "INVALID_SIGNATURE"
    case invalidAppIdentifier = "INVALID_APP_IDENTIFIER"
    case malformedPayload = "MALFORMED_PAYLOAD"
    case invalidDate = "INVALID_DATE"
    case invalidSharedSecret = "INVALID_SHARED_SECRET"
    case invalidReceipt = "INVALID_RECEIPT"
    case receiptSignatureInvalid = "RECEIPT_SIGNATURE_INVALID"
    case receiptWrongBundle = "RECEIPT_WRONG_BUNDLE"
    case receiptTooLarge = "RECEIPT_TOO_LARGE"

    // The server's side.
    case retryableVerificationFailure = "RETRYABLE_VERIFICATION_FAILURE"
    case storageUnavailable = "STORAGE_UNAVAILABLE"
    case projectionFailed = "PROJECTION_FAILED"
    case notReady = "NOT_READY"

    // Apple's App Store Server API (support endpoints).
    case serverAPINotConfigured = "SERVER_API_NOT_CONFIGURED"
    case appleNotFound = "APPLE_NOT_FOUND"
    case appleAPIFailed = "APPLE_API_FAILED"

    // Google Play: a push refused (401: its authentication failed; nothing is recorded, Pub/Sub
    // retries), or a call to Google that failed (the Developer API, its token endpoint, the key set).
    case googlePushMissingToken = "GOOGLE_PUSH_MISSING_TOKEN"
    case googlePushMalformedToken = "GOOGLE_PUSH_MALFORMED_TOKEN"
    case googlePushUnsupportedAlgorithm = "GOOGLE_PUSH_UNSUPPORTED_ALGORITHM"
    case googlePushUnknownKey = "GOOGLE_PUSH_UNKNOWN_KEY"
    case googlePushBadSignature = "GOOGLE_PUSH_BAD_SIGNATURE"
    case googlePushWrongIssuer = "GOOGLE_PUSH_WRONG_ISSUER"
    case googlePushWrongAudience = "GOOGLE_PUSH_WRONG_AUDIENCE"
    case googlePushWrongAccount = "GOOGLE_PUSH_WRONG_ACCOUNT"
    case googlePushEmailNotVerified = "GOOGLE_PUSH_EMAIL_NOT_VERIFIED"
    case googlePushTokenExpired = "GOOGLE_PUSH_TOKEN_EXPIRED"
    case googlePushTokenInvalidTimes = "GOOGLE_PUSH_TOKEN_INVALID_TIMES"
    case googlePushKeysUnavailable = "GOOGLE_PUSH_KEYS_UNAVAILABLE"
    case googleMalformedNotification = "GOOGLE_MALFORMED_NOTIFICATION"
    case googleMalformedResponse = "GOOGLE_MALFORMED_RESPONSE"
    case googleInvalidServiceAccount = "GOOGLE_INVALID_SERVICE_ACCOUNT"
    case googleTokenExchangeFailed = "GOOGLE_TOKEN_EXCHANGE_FAILED"
    case googleInvalidRequest = "GOOGLE_INVALID_REQUEST"
    case googleNetwork = "GOOGLE_NETWORK"
    case googleAPIError = "GOOGLE_API_ERROR"
    /// The Developer API knows no purchase with the token (404, 410, or 400 for a malformed one).
    case googlePurchaseNotFound = "GOOGLE_PURCHASE_NOT_FOUND"
    /// No pending refund review of the order (with that `pendingRefundToken`) reached the server.
    case refundReviewNotFound = "REFUND_REVIEW_NOT_FOUND"
    /// The review has its one answer already (the server's or the backend's).
    case refundReviewAnswered = "REFUND_REVIEW_ANSWERED"
    /// Google's 24 hours to answer the review are over.
    case refundReviewPastDeadline = "REFUND_REVIEW_PAST_DEADLINE"

    /// The HTTP status this code is always answered with.
    public var status: Int {
        switch self {
        case .missingParameter, .invalidPathParameter, .invalidJSON, .jsonTooDeep, .invalidRequest, .invalidAppUserId,
            .invalidEnvironment, .invalidLimit, .invalidCursor, .invalidStorefront, .invalidJWTFormat, .invalidAlgorithm,
            .invalidChainLength, .invalidCertificate, .chainUntrusted, .certificateExpired, .missingAppleOID,
            .certificateRevoked, .invalidSignature, .invalidAppIdentifier, .malformedPayload, .invalidDate, .invalidReceipt,
            .receiptSignatureInvalid, .receiptWrongBundle, .receiptTooLarge, .invalidGrant, .googleMalformedNotification,
            .googleInvalidRequest, .invalidAttribute,
            .tooManyAttributes, .invalidOffering, .invalidTargeting, .invalidExperiment:
            400
        case .unauthorized, .invalidSharedSecret, .tokenMalformed, .tokenSignatureInvalid, .tokenExpiryMissing,
            .tokenLifetimeTooLong, .tokenExpired, .googlePushMissingToken, .googlePushMalformedToken,
            .googlePushUnsupportedAlgorithm, .googlePushUnknownKey, .googlePushBadSignature, .googlePushWrongIssuer,
            .googlePushWrongAudience, .googlePushWrongAccount, .googlePushEmailNotVerified, .googlePushTokenExpired,
            .googlePushTokenInvalidTimes:
            401
        case .forbidden, .tokenCustomerMismatch, .invalidLoginToken: 403
        case .notFound, .customerNotFound, .appNotFound, .subscriptionNotFound, .appleNotFound, .productNotFound,
            .offerNotFound, .grantNotFound, .googlePurchaseNotFound, .chartNotFound, .offeringNotFound,
            .experimentNotFound, .refundReviewNotFound:
            404
        case .methodNotAllowed: 405
        case .payloadTooLarge, .bodyNotAllowed: 413
        case .uriTooLong: 414
        case .headersTooLarge: 431
        case .tooManyRejections, .appKeyRateLimited, .addressRateLimited, .offerRateLimited: 429
        case .serverAPINotConfigured, .offerNotEligible, .signingKeyNotConfigured, .insufficientBalance, .aliasConflict,
            .offeringInUse, .experimentLocked, .refundReviewAnswered, .refundReviewPastDeadline:
            409
        case .idempotencyKeyReused: 422
        case .appleAPIFailed, .googleMalformedResponse, .googleAPIError: 502
        case .internalError, .projectionFailed: 500
        case .shuttingDown, .retryableVerificationFailure, .storageUnavailable, .notReady, .googlePushKeysUnavailable,
            .googleNetwork, .googleTokenExchangeFailed, .googleInvalidServiceAccount:
            503
        }
    }

    /// The row for a verifier code. Every code the verifier produces has its own row (a test checks
    /// `VerificationError.Code.all`); one it might add later is answered as a malformed payload.
    public init(_ code: VerificationError.Code) {
        self = ProblemCode(rawValue: code.rawValue) ?? .malformedPayload
    }

    /// The row for a Google Play failure: each ``GooglePlayError/Code`` under its own name, except
    /// the Developer API's 400, 404 and 410 for a purchase token, which is
    /// ``googlePurchaseNotFound``; a code added later is answered as Google's API failing.
    public init(_ error: GooglePlayError) {
        if error.code == .apiError, let status = error.status, [400, 404, 410].contains(status) {
            self = .googlePurchaseNotFound
        } else {
            self = ProblemCode(rawValue: error.code.rawValue) ?? .googleAPIError
        }
    }
}

extension HTTPError {
    /// The problem for `code`, answered with the status the table gives it.
    public init(_ code: ProblemCode, _ detail: String, headers: [String: String] = [:]) {
        self.init(status: code.status, code: code.rawValue, detail: detail, headers: headers)
    }
}

/// A signed payload or V1 body the API refuses: recorded as rejected under ``code``, answered
/// with the code's status (see ``Ingest/recordRejected(_:source:body:now:)``).
struct Rejection: Error {
    var code: ProblemCode
    /// For the problem's `detail`; never contains secrets.
    var message: String

    init(_ code: ProblemCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The verifier's refusal under its own code.
    init(_ error: VerificationError) {
        self.init(ProblemCode(error.code), error.message)
    }

    /// Verification could not complete (Apple or a certificate check unreachable): nothing is
    /// recorded, and the sender is told to retry.
    var isRetryable: Bool { code == .retryableVerificationFailure }
}
