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

/// The body the App Store posts to the Get Retention Message endpoint.
public struct RealtimeRequestBody: Sendable, Hashable, Codable {
    /// A JWS whose payload is a ``DecodedRealtimeRequestBody``.
    public var signedPayload: String

    public init(signedPayload: String) { self.signedPayload = signedPayload }
}

/// The answer to a realtime request: exactly one member set (Apple ignores a body with more).
public struct RealtimeResponseBody: Sendable, Hashable, Codable {
    public var message: Message?
    public var alternateProduct: AlternateProduct?
    public var promotionalOffer: PromotionalOffer?

    public init(message: Message? = nil, alternateProduct: AlternateProduct? = nil, promotionalOffer: PromotionalOffer? = nil) {
        self.message = message
        self.alternateProduct = alternateProduct
        self.promotionalOffer = promotionalOffer
    }

    /// A text message (with or without an image).
    public struct Message: Sendable, Hashable, Codable {
        public var messageIdentifier: String
        public init(messageIdentifier: String) { self.messageIdentifier = messageIdentifier }
    }

    /// A switch-plan message suggesting `productId` (in the same subscription group).
    public struct AlternateProduct: Sendable, Hashable, Codable {
        public var messageIdentifier: String
        public var productId: String
        public init(messageIdentifier: String, productId: String) {
            self.messageIdentifier = messageIdentifier
            self.productId = productId
        }
    }

    /// A message with a promotional offer, signed as a JWS (`promotionalOfferSignatureV2`).
    public struct PromotionalOffer: Sendable, Hashable, Codable {
        public var messageIdentifier: String
        public var promotionalOfferSignatureV2: String
        public init(messageIdentifier: String, promotionalOfferSignatureV2: String) {
            self.messageIdentifier = messageIdentifier
            self.promotionalOfferSignatureV2 = promotionalOfferSignatureV2
        }
    }
}
