import AppStore

/// Why an App Store Server API call failed. ``code`` is the stable SCREAMING_SNAKE name.
public enum ServerAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Apple answered with an error status; `code` is Apple's `errorCode` when the body had one.
    case apple(status: Int, code: APIErrorCode?, message: String?)
    /// Apple answered 401: the key (`keyId`, `issuerId`, `.p8`) is not valid for the app.
    case unauthorized(bundleId: String, keyId: String)
    /// No HTTP response arrived (after the retries).
    case network(message: String)
    /// Xcode and LocalTesting transactions exist only on a developer's machine; Apple has no API for them.
    case environmentNotCallable(AppStoreEnvironment)
    /// Apple's answer could not be read (not JSON of the documented shape, or too large).
    case invalidResponse(message: String)
    /// A signed payload in Apple's answer failed verification and was not used.
    case verification(VerificationError)
    /// The request could not be built (the key could not sign, or a path part was unusable).
    case invalidRequest(message: String)

    /// A stable machine-readable code.
    public var code: String {
        switch self {
        case .apple(let status, _, _) where status == 429: "APPLE_RATE_LIMITED"
        case .apple(let status, _, _) where status == 404: "APPLE_NOT_FOUND"
        case .apple(let status, _, _) where status >= 500: "APPLE_UNAVAILABLE"
        case .apple: "APPLE_REJECTED"
        case .unauthorized: "APPLE_KEY_REJECTED"
        case .network: "APPLE_UNREACHABLE"
        case .environmentNotCallable: "ENVIRONMENT_NOT_CALLABLE"
        case .invalidResponse: "APPLE_INVALID_RESPONSE"
        case .verification: "APPLE_PAYLOAD_UNVERIFIED"
        case .invalidRequest: "APPLE_INVALID_REQUEST"
        }
    }

    /// Apple's numeric `errorCode`, when Apple gave one.
    public var appleErrorCode: APIErrorCode? {
        if case .apple(_, let code, _) = self { return code }
        return nil
    }

    public var description: String {
        switch self {
        case .apple(let status, let code, let message):
            "App Store Server API answered \(status)" + (code.map { " errorCode \($0.rawValue)" } ?? "")
                + (message.map { ": \($0)" } ?? "")
        case .unauthorized(let bundleId, let keyId):
            "App Store Server API refused the key \(keyId) for app \(bundleId) (401): check apps[].serverAPI keyId, "
                + "issuerId and privateKeyFile"
        case .network(let message): "App Store Server API unreachable: \(message)"
        case .environmentNotCallable(let environment):
            "the \(environment.rawValue) environment has no App Store Server API; nothing was sent"
        case .invalidResponse(let message): "unreadable App Store Server API response: \(message)"
        case .verification(let error): "a signed payload from the App Store Server API failed verification: \(error)"
        case .invalidRequest(let message): "cannot build the App Store Server API request: \(message)"
        }
    }

    /// Whether trying again later may succeed: network failures, 429, 5xx, and the error codes
    /// Apple marks retryable.
    public var isRetryable: Bool {
        switch self {
        case .network: return true
        case .apple(let status, let code, _):
            if status == 429 || status >= 500 { return true }
            return code.map(Self.retryableCodes.contains) ?? false
        default: return false
        }
    }

    /// Apple's `…Retryable` error codes.
    static let retryableCodes: Set<APIErrorCode> = [
        .accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIdNotFoundRetryable, .generalInternalRetryable,
    ]
}
