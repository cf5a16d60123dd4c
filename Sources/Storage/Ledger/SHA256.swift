import EntitledCrypto

/// The digest that keys facts: a fact is unique by its kind and the SHA-256 of what was signed.
///
/// For a compact JWS (`header.payload.signature`, three base64url segments) that is the JWS
/// signing input, `header.payload`: the signature is left out because one signed content has more
/// than one valid signature encoding (ECDSA's `(r, n−s)` verifies as well as `(r, s)`, and Apple's
/// signatures are not guaranteed low-S), and the same signed content must be one fact whatever
/// signature it arrives with. Any other text (V1 facts' canonical JSON, receipts) is hashed whole.
enum FactDigest {
    /// Lower-case hex SHA-256 of the signing input of `text` when it is a compact JWS, else of
    /// all of `text`'s UTF-8 bytes (OpenSSL, through EntitledCrypto).
    static func hex(_ text: String) -> String {
        var text = text
        return text.withUTF8 { bytes in
            let signed = UnsafeBufferPointer(rebasing: bytes[..<signingInputEnd(bytes)])
            return Hex.encode(SHA256.hash(UnsafeRawBufferPointer(signed)))
        }
    }

    /// Where the signing input of a compact JWS ends (its second `.`), or the end of `bytes` when
    /// they are not one: exactly three segments, each non-empty base64url (`A–Z a–z 0–9 - _`).
    static func signingInputEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var dots = 0
        var secondDot = 0
        var segmentStart = 0
        for (index, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "."):
                guard dots < 2, index > segmentStart else { return bytes.count }
                dots += 1
                secondDot = index
                segmentStart = index + 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                continue
            default:
                return bytes.count
            }
        }
        guard dots == 2, segmentStart < bytes.count else { return bytes.count }
        return secondDot
    }
}
