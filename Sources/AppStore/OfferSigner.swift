import EntitledCrypto
import Foundation

/// Signs subscription offers with an app's in-app purchase key, in the forms StoreKit accepts.
///
/// - v1 (StoreKit 1 `SKPaymentDiscount`, StoreKit 2 `.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`):
///   ECDSA P-256 SHA-256 over ``v1Message(_:)``, DER, base64.
/// - JWS (StoreKit 2's compact-JWS offers): ``ES256JWT`` with the claims Apple's signature creators
///   write: `iss`, `iat` (seconds), `aud`, `bid`, `nonce`, then the offer's own; no `exp`.
public struct OfferSigner: Sendable {
    /// The app (`appBundleId` / `bid`), key id (`keyIdentifier` / `kid`), issuer (`iss`) and key.
    public let credentials: ServerAPICredentials
    private var bundleId: String { credentials.bundleId }
    private var keyId: String { credentials.keyId }
    private var issuerId: String { credentials.issuerId }
    private var key: P256PrivateKey { credentials.privateKey }

    public init(credentials: ServerAPICredentials) { self.credentials = credentials }

    /// What a v1 signature signs.
    public struct V1Fields: Sendable, Equatable {
        public var productId: String
        public var offerId: String
        public var appAccountToken: UUID
        public var nonce: UUID
        /// Milliseconds since 1970.
        public var timestamp: Int64

        public init(productId: String, offerId: String, appAccountToken: UUID, nonce: UUID, timestamp: Int64) {
            self.productId = productId
            self.offerId = offerId
            self.appAccountToken = appAccountToken
            self.nonce = nonce
            self.timestamp = timestamp
        }
    }

    /// A v1 promotional-offer signature, as the app hands it to StoreKit.
    public struct V1Signature: Sendable, Equatable {
        public var keyId: String
        /// Lowercase UUID.
        public var nonce: String
        public var timestamp: Int64
        /// Base64 of the DER ECDSA signature.
        public var signature: String
    }

    /// `appBundleId ⁣ keyIdentifier ⁣ productIdentifier ⁣ offerIdentifier ⁣ appAccountToken ⁣ nonce ⁣
    /// timestamp`, joined by U+2063 (INVISIBLE SEPARATOR), the token and nonce lowercase.
    public func v1Message(_ fields: V1Fields) -> String {
        [
            bundleId, keyId, fields.productId, fields.offerId, fields.appAccountToken.uuidString.lowercased(),
            fields.nonce.uuidString.lowercased(), String(fields.timestamp),
        ].joined(separator: "\u{2063}")
    }

    /// The v1 signature of `fields`.
    public func promotionalV1(_ fields: V1Fields) throws(CryptoError) -> V1Signature {
        let der = try key.signature(der: Array(v1Message(fields).utf8))
        return V1Signature(
            keyId: keyId, nonce: fields.nonce.uuidString.lowercased(), timestamp: fields.timestamp, signature: Base64.encode(der))
    }

    /// A promotional offer as a compact JWS (`aud` `promotional-offer`); `transactionId` is any of
    /// the customer's transactions, when they have one.
    public func promotionalJWS(
        productId: String, offerId: String, transactionId: String?, nonce: UUID, issuedAtSeconds: Int64
    ) throws(CryptoError) -> String {
        try ES256JWT.sign(
            claims: Claims(
                iss: issuerId, iat: issuedAtSeconds, aud: "promotional-offer", bid: bundleId, nonce: nonce.uuidString.lowercased(),
                productId: productId, offerIdentifier: offerId, transactionId: transactionId),
            keyId: keyId, key: key)
    }

    /// The server's introductory-offer eligibility decision as a compact JWS (`aud`
    /// `introductory-offer-eligibility`).
    public func introductoryEligibilityJWS(
        productId: String, allowIntroductoryOffer: Bool, transactionId: String?, nonce: UUID, issuedAtSeconds: Int64
    ) throws(CryptoError) -> String {
        try ES256JWT.sign(
            claims: Claims(
                iss: issuerId, iat: issuedAtSeconds, aud: "introductory-offer-eligibility", bid: bundleId,
                nonce: nonce.uuidString.lowercased(), productId: productId, allowIntroductoryOffer: allowIntroductoryOffer,
                transactionId: transactionId),
            keyId: keyId, key: key)
    }

    /// Every offer JWS's claims; the absent optionals are left out (each audience has its own).
    struct Claims: Encodable {
        var iss: String
        var iat: Int64
        var aud: String
        var bid: String
        var nonce: String
        var productId: String
        var offerIdentifier: String?
        var allowIntroductoryOffer: Bool?
        var transactionId: String?
    }
}
