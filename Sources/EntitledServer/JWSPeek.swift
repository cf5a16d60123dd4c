import AppStore
import EntitledCrypto
import Foundation
import JSONCoding

/// Reads a JWS payload *without* verifying it — only to pick the configured app whose trust
/// settings the verifier then checks it against. Nothing read here is trusted.
enum JWSPeek {
    static func payload<T: Decodable>(_ type: T.Type, _ jws: String, codec: JSONCodec) -> T? {
        // Unpadded base64url only, as in a JWS.
        guard let middle = CompactJWS.unverifiedPayloadSegment(of: jws), !middle.contains(0x3D),
            let bytes = middle.withUnsafeBytes({ Base64.decode(utf8: $0, url: true) })
        else { return nil }
        return try? AppStoreJSON.decode(type, from: Data(bytes), codec: codec)
    }

    /// Just the bundleId a V2 notification claims (from `data`, `summary`, `externalPurchaseToken`
    /// or `appData`), decoding nothing else: it only picks the app whose verifier then checks everything.
    static func notificationBundleId(_ jws: String, codec: JSONCodec) -> String?? {
        struct Holder: Decodable { var bundleId: String? }
        struct Envelope: Decodable {
            var data: Holder?
            var summary: Holder?
            var externalPurchaseToken: Holder?
            var appData: Holder?
        }
        guard let envelope = payload(Envelope.self, jws, codec: codec) else { return nil }
        return .some(
            envelope.data?.bundleId ?? envelope.summary?.bundleId ?? envelope.externalPurchaseToken?.bundleId
                ?? envelope.appData?.bundleId)
    }
}
