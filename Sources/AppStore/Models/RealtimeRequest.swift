/// The decoded payload of a Retention Messaging realtime request (a JWS the App Store sends to ask which
/// message to show a customer who is about to cancel).
public struct DecodedRealtimeRequestBody: Sendable, Hashable, Codable {
    public var originalTransactionId: String?
    public var appAppleId: Int64?
    public var productId: String?
    /// The customer's locale, e.g. `en-US`.
    public var userLocale: String?
    public var requestIdentifier: String?
    public var environment: AppStoreEnvironment?
    @EpochMilliseconds public var signedDate: Int64?

    /// Every field defaults to nil (absent).
    public init(
        originalTransactionId: String? = nil,
        appAppleId: Int64? = nil,
        productId: String? = nil,
        userLocale: String? = nil,
        requestIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedDate: Int64? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.signedDate = signedDate
    }
}

extension DecodedRealtimeRequestBody: VerifiablePayload {
    public var verificationSignedDate: Int64? { signedDate }
    public var verificationEnvironment: AppStoreEnvironment? { environment }
    /// Realtime requests carry no bundle identifier.
    public var verificationBundleId: String? { nil }
    public var verificationAppAppleId: Int64? { appAppleId }
}
