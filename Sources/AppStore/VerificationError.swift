/// Why a signed App Store payload was rejected.
///
/// ``code`` is stable (it appears in HTTP bodies and CLI output); ``message`` is for people. Equality
/// compares the code only, so tests can write `#expect(throws: VerificationError(.invalidSignature))`.
public struct VerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, string-backed failure code. A struct, not an enum, so codes can be added later
    /// without breaking exhaustive switches in callers.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not three base64url segments, a header that is not a JSON object, no `x5c`, or over the size limit.
        public static let invalidJWTFormat = Code(rawValue: "INVALID_JWT_FORMAT")
        /// The header's `alg` is not `ES256`.
        public static let invalidAlgorithm = Code(rawValue: "INVALID_ALGORITHM")
        /// `x5c` does not hold exactly three certificates.
        public static let invalidChainLength = Code(rawValue: "INVALID_CHAIN_LENGTH")
        /// A certificate (or a configured root) is not parseable DER, or the leaf key is not P-256.
        public static let invalidCertificate = Code(rawValue: "INVALID_CERTIFICATE")
        /// No valid path leaf → intermediate → a configured root.
        public static let chainUntrusted = Code(rawValue: "CHAIN_UNTRUSTED")
        /// A certificate in the chain is not valid at the verification time.
        public static let certificateExpired = Code(rawValue: "CERTIFICATE_EXPIRED")
        /// The leaf or intermediate lacks Apple's marker extension.
        public static let missingAppleOID = Code(rawValue: "MISSING_APPLE_OID")
        /// OCSP reports the leaf or intermediate revoked.
        public static let certificateRevoked = Code(rawValue: "CERTIFICATE_REVOKED")
        /// The ES256 signature over `header.payload` does not verify.
        public static let invalidSignature = Code(rawValue: "INVALID_SIGNATURE")
        /// bundleId or appAppleId differs from the configured app.
        public static let invalidAppIdentifier = Code(rawValue: "INVALID_APP_IDENTIFIER")
        /// The payload's environment is not one the configuration accepts.
        public static let invalidEnvironment = Code(rawValue: "INVALID_ENVIRONMENT")
        /// The payload is not the expected JSON (wrong type, too deeply nested, not JSON).
        public static let malformedPayload = Code(rawValue: "MALFORMED_PAYLOAD")
        /// A transient failure (OCSP responder unreachable or unusable): the sender should retry.
        public static let retryableVerificationFailure = Code(rawValue: "RETRYABLE_VERIFICATION_FAILURE")

        /// An app receipt that is not base64 PKCS#7 signed data with a well-formed ASN.1 payload.
        public static let invalidReceipt = Code(rawValue: "INVALID_RECEIPT")
        /// An app receipt whose PKCS#7 signature does not verify or whose signer does not chain to a receipt root.
        public static let receiptSignatureInvalid = Code(rawValue: "RECEIPT_SIGNATURE_INVALID")
        /// An app receipt for another bundle id.
        public static let receiptWrongBundle = Code(rawValue: "RECEIPT_WRONG_BUNDLE")
        /// An app receipt with more in-app records than ``AppReceipt/maxInAppPurchases``.
        public static let receiptTooLarge = Code(rawValue: "RECEIPT_TOO_LARGE")

        /// Every code the verifier produces.
        public static let all: [Code] = [
            .invalidJWTFormat, .invalidAlgorithm, .invalidChainLength, .invalidCertificate, .chainUntrusted,
            .certificateExpired, .missingAppleOID, .certificateRevoked, .invalidSignature, .invalidAppIdentifier,
            .invalidEnvironment, .malformedPayload, .retryableVerificationFailure, .invalidReceipt,
            .receiptSignatureInvalid, .receiptWrongBundle, .receiptTooLarge,
        ]
    }

    /// The stable code.
    public var code: Code
    /// What went wrong, for logs and operators. Never includes secrets; may name certificates.
    public var message: String
    /// Where the error was raised.
    public var file: String
    /// Where the error was raised.
    public var line: Int

    /// An error with `code`, explained by `message`, recording where it was raised.
    public init(_ code: Code, _ message: String = "", file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    /// True when the failure is transient and the same input may verify later (answer 5xx so Apple retries).
    public var isRetryable: Bool { code == .retryableVerificationFailure }

    public static func == (lhs: VerificationError, rhs: VerificationError) -> Bool { lhs.code == rhs.code }

    public var description: String { message.isEmpty ? code.rawValue : "\(code.rawValue): \(message)" }
}
