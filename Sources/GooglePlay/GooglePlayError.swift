/// A failure in Google Play input or in a call to Google: a malformed push or answer, a push
/// whose authentication fails, a service-account problem, or the Developer API's refusal.
///
/// A struct with an extensible ``Code`` (stable SCREAMING_SNAKE strings for logs and problem
/// bodies); equality compares the code only, so tests assert on it.
public struct GooglePlayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable failure category.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Input from Google.
        /// A push body, its base64 `data` or the `DeveloperNotification` inside is not what Google sends.
        public static let malformedNotification = Code(rawValue: "GOOGLE_MALFORMED_NOTIFICATION")
        /// A Developer API or token endpoint answer could not be decoded.
        public static let malformedResponse = Code(rawValue: "GOOGLE_MALFORMED_RESPONSE")

        // Push authentication (each answers 401 and changes nothing).
        /// No `Authorization: Bearer` header.
        public static let missingToken = Code(rawValue: "GOOGLE_PUSH_MISSING_TOKEN")
        /// The bearer value is not a compact JWS with JSON header and claims.
        public static let malformedToken = Code(rawValue: "GOOGLE_PUSH_MALFORMED_TOKEN")
        /// `alg` is not RS256 (`none`, HS256 and the rest are refused outright).
        public static let unsupportedAlgorithm = Code(rawValue: "GOOGLE_PUSH_UNSUPPORTED_ALGORITHM")
        /// No key with the token's `kid` in Google's key set, even after a refetch.
        public static let unknownKey = Code(rawValue: "GOOGLE_PUSH_UNKNOWN_KEY")
        /// Google's key set could not be fetched or read.
        public static let keysUnavailable = Code(rawValue: "GOOGLE_PUSH_KEYS_UNAVAILABLE")
        /// The signature does not verify with the key.
        public static let badSignature = Code(rawValue: "GOOGLE_PUSH_BAD_SIGNATURE")
        /// `iss` is not Google's accounts issuer.
        public static let wrongIssuer = Code(rawValue: "GOOGLE_PUSH_WRONG_ISSUER")
        /// `aud` is not the configured push audience.
        public static let wrongAudience = Code(rawValue: "GOOGLE_PUSH_WRONG_AUDIENCE")
        /// `email` is not the configured push service account.
        public static let wrongAccount = Code(rawValue: "GOOGLE_PUSH_WRONG_ACCOUNT")
        /// `email_verified` is not `true`.
        public static let emailNotVerified = Code(rawValue: "GOOGLE_PUSH_EMAIL_NOT_VERIFIED")
        /// `exp` has passed (beyond the allowed skew).
        public static let expired = Code(rawValue: "GOOGLE_PUSH_TOKEN_EXPIRED")
        /// `iat` lies in the future (beyond the allowed skew), or `exp`/`iat` are missing or inconsistent.
        public static let invalidTimes = Code(rawValue: "GOOGLE_PUSH_TOKEN_INVALID_TIMES")

        // Calls to Google.
        /// The service-account key file is missing fields or holds an unusable key.
        public static let invalidServiceAccount = Code(rawValue: "GOOGLE_INVALID_SERVICE_ACCOUNT")
        /// The token endpoint refused the assertion or answered without an access token.
        public static let tokenExchangeFailed = Code(rawValue: "GOOGLE_TOKEN_EXCHANGE_FAILED")
        /// A call could not be built (an empty or oversized id, an unusable base URL).
        public static let invalidRequest = Code(rawValue: "GOOGLE_INVALID_REQUEST")
        /// No usable answer: connection, timeout, TLS.
        public static let network = Code(rawValue: "GOOGLE_NETWORK")
        /// The Developer API answered with an error status (see ``GooglePlayError/status``).
        public static let apiError = Code(rawValue: "GOOGLE_API_ERROR")

        /// Every code this module produces.
        public static let all: [Code] = [
            .malformedNotification, .malformedResponse, .missingToken, .malformedToken, .unsupportedAlgorithm, .unknownKey,
            .keysUnavailable, .badSignature, .wrongIssuer, .wrongAudience, .wrongAccount, .emailNotVerified, .expired,
            .invalidTimes, .invalidServiceAccount, .tokenExchangeFailed, .invalidRequest, .network, .apiError,
        ]
    }

    /// The failure category.
    public var code: Code
    /// A human-readable explanation for logs; never holds tokens, keys or whole payloads.
    public var message: String
    /// The HTTP status of Google's answer, for ``Code/apiError`` and ``Code/tokenExchangeFailed``.
    public var status: Int?

    public init(_ code: Code, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    public static func == (lhs: GooglePlayError, rhs: GooglePlayError) -> Bool { lhs.code == rhs.code }

    public var description: String { status.map { "\(code) (\($0)): \(message)" } ?? "\(code): \(message)" }

    /// Whether asking again may succeed: network failures, 408, 429 and 5xx.
    public var isRetryable: Bool {
        switch code {
        case .network: true
        case .apiError, .tokenExchangeFailed: status.map { $0 == 408 || $0 == 429 || (500..<600).contains($0) } ?? false
        default: false
        }
    }

    /// Whether Google said the purchase token or product does not exist (404, or 410 for a token
    /// Google no longer keeps).
    public var isNotFound: Bool { code == .apiError && (status == 404 || status == 410) }
}
