import EntitledCrypto
import Foundation

/// JWTs signed with an in-app purchase key, as Apple's own signature creators and the Server API
/// expect them: header `{"alg":"ES256","kid":…,"typ":"JWT"}`, the claims as JSON (sorted keys,
/// absent optionals omitted), ES256 raw r‖s signature, all base64url without padding.
/// (`AppStoreTesting.JWSSigner` writes Apple's own `x5c` form, for tests.)
public enum ES256JWT {
    /// `claims` signed with `key` under key id `keyId`.
    public static func sign(claims: some Encodable, keyId: String, key: P256PrivateKey) throws(CryptoError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header: Data
        let payload: Data
        do {
            header = try encoder.encode(Header(alg: "ES256", kid: keyId, typ: "JWT"))
            payload = try encoder.encode(claims)
        } catch {
            throw CryptoError(.invalidInput, "cannot encode the JWS: \(error)")
        }
        let signingInput = Base64.urlEncode(header) + "." + Base64.urlEncode(payload)
        let signature = try key.es256Signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64.urlEncode(signature)
    }

    struct Header: Encodable {
        var alg: String
        var kid: String
        var typ: String
    }
}

/// The identity an app uses with an in-app purchase key (App Store Connect › Users and Access ›
/// Integrations › In-App Purchase): at the App Store Server API and for subscription-offer signatures.
public struct ServerAPICredentials: Sendable {
    /// The app's bundle identifier (`bid` claim).
    public var bundleId: String
    /// The key id (`kid` header), e.g. `ABC123DEFG`.
    public var keyId: String
    /// The issuer id (`iss` claim), a UUID.
    public var issuerId: String
    /// The `.p8` key (PKCS#8 PEM, P-256).
    public var privateKey: P256PrivateKey

    public init(bundleId: String, keyId: String, issuerId: String, privateKey: P256PrivateKey) {
        self.bundleId = bundleId
        self.keyId = keyId
        self.issuerId = issuerId
        self.privateKey = privateKey
    }
}
