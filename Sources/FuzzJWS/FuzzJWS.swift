import AppStore
import EntitledCrypto
import Foundation
import FuzzSupport
import JSONCoding

/// One fuzz input through the parsing path the verifier runs before any signature check: JWS
/// splitting and base64url, the header reader, the nesting scan, `JSONDecoder` on the payload, and
/// DER parsing of whatever `x5c` holds. Any input must end in a value or a typed error, never a crash;
/// and wherever `TapeJSONDecoder` answers, it must answer what `JSONDecoder` answers.
func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    _ = JSONNestingScan.nestingDepth(of: bytes, limit: 32)
    let raw = Array(bytes)
    agree(JWSTransactionDecodedPayload.self, raw)
    agree(ResponseBodyV2DecodedPayload.self, raw)
    agree(RawJSON.self, raw)
    _ = StrictJSONReader.parse(bytes, depthLimit: 16)
    _ = Base64.decode(utf8: bytes, url: true)
    _ = Base64.decode(utf8: bytes, url: false)
    guard let jws = try? CompactJWS.parse(utf8: bytes) else { return }
    _ = jws.algorithm
    if let chain = jws.certificateChain {
        for entry in chain.prefix(4) {
            if let der = Base64.decode(entry) { _ = try? X509Certificate(der: der) }
        }
    }
    _ = try? JSONDecoder().decode(FuzzPayload.self, from: Data(jws.payload))
    agree(FuzzPayload.self, jws.payload)
    agree(JWSTransactionDecodedPayload.self, jws.payload)
    agree(JWSRenewalInfoDecodedPayload.self, jws.payload)
    agree(ResponseBodyV2DecodedPayload.self, jws.payload)
    _ = ECDSASignature.rawFromDER(jws.signature)
    _ = ECDSASignature.derFromRaw(jws.signature)
}

/// Crashes (a finding) when the fast decoder answers and Foundation answers otherwise.
func agree<T: Decodable & Equatable>(_ type: T.Type, _ bytes: [UInt8]) {
    guard let fast = TapeJSONDecoder.decodeWithoutFallback(type, from: bytes) else { return }
    guard let foundation = try? JSONDecoder().decode(type, from: Data(bytes)), foundation == fast else {
        fatalError("TapeJSONDecoder and JSONDecoder disagree on \(T.self)")
    }
}

/// A payload shape with the kinds of fields the real models have (strings, integers, nesting).
private struct FuzzPayload: Decodable, Equatable {
    struct Inner: Decodable, Equatable {
        var environment: String?
        var bundleId: String?
        var appAppleId: Int64?
        var signedTransactionInfo: String?
    }
    var notificationType: String?
    var signedDate: Int64?
    var price: Double?
    var data: Inner?
    var items: [Inner]?
}

@main
enum FuzzJWSMain {
    static func main() { FuzzMain.run("FuzzJWS", fuzzOne) }
}
