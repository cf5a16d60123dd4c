import AppStore
import EntitledCrypto
import Foundation
import JSONCoding

/// Compact RS256 JWTs: signing (a service account's assertion, a fake Google's tokens) and the
/// strict parsing that ``PushVerifier`` builds on.
public enum RS256JWT {
    /// The longest token accepted: Google's push tokens are about 1 KB.
    public static let maximumBytes = 8 * 1024

    /// `claims` signed with `key`, header `{"alg":"RS256","kid":…,"typ":"JWT"}` (`kid` omitted when nil).
    public static func sign(claims: some Encodable, keyId: String?, key: RSAPrivateKey) throws(CryptoError) -> String {
        let header = PlayJSON.encode(Header(alg: "RS256", kid: keyId, typ: "JWT"))
        let payload = PlayJSON.encode(claims)
        guard !header.isEmpty, !payload.isEmpty else { throw CryptoError(.invalidInput, "cannot encode the JWT") }
        let signingInput = Base64.urlEncode(header) + "." + Base64.urlEncode(payload)
        let signature = try key.rs256Signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64.urlEncode(signature)
    }

    struct Header: Encodable {
        var alg: String
        var kid: String?
        var typ: String
    }

    /// A token split into its parts, JSON read strictly (a duplicate member is refused, so a claim
    /// cannot mean one thing here and another elsewhere); not yet verified.
    public struct Parsed: Sendable {
        public var header: StrictJSONValue
        public var claims: StrictJSONValue
        /// `base64url(header) + "." + base64url(claims)`, what the signature covers.
        public var signingInput: [UInt8]
        public var signature: [UInt8]

        /// A string member of the header.
        public func headerString(_ name: String) -> String? {
            if case .string(let value)? = header[name] { return value }
            return nil
        }

        /// A string member of the claims.
        public func claimString(_ name: String) -> String? {
            if case .string(let value)? = claims[name] { return value }
            return nil
        }

        /// An integer member of the claims (NumericDate); nil when absent, fractional or out of range.
        public func claimInteger(_ name: String) -> Int64? {
            guard case .number(let text)? = claims[name], text.utf8.count <= 19 else { return nil }
            return Int64(text)
        }
    }

    /// Splits and decodes `token`; ``GooglePlayError/Code/malformedToken`` unless it is three
    /// base64url segments holding a JSON-object header and claims.
    public static func parse(_ token: String) throws(GooglePlayError) -> Parsed {
        let bytes = Array(token.utf8)
        guard bytes.count <= maximumBytes else { throw GooglePlayError(.malformedToken, "token longer than \(maximumBytes) bytes") }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw GooglePlayError(.malformedToken, "not a compact JWS of three segments")
        }
        func decode(_ part: ArraySlice<UInt8>) -> [UInt8]? {
            Array(part).withUnsafeBytes { Base64.decode(utf8: $0, url: true) }
        }
        guard let headerBytes = decode(parts[0]), let claimBytes = decode(parts[1]), let signature = decode(parts[2]) else {
            throw GooglePlayError(.malformedToken, "a segment is not base64url")
        }
        guard let header = StrictJSONReader.parse(headerBytes, depthLimit: 4), case .object = header,
            let claims = StrictJSONReader.parse(claimBytes, depthLimit: 8), case .object = claims
        else { throw GooglePlayError(.malformedToken, "header or claims are not a JSON object") }
        return Parsed(
            header: header, claims: claims, signingInput: Array(bytes[0..<(parts[0].count + 1 + parts[1].count)]), signature: signature)
    }
}
