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
    static func hex(_ text: String) -> String { hexAndSigningInputEnd(text).hex }

    /// ``hex(_:)`` and where the signing input ends (``signingInputEnd(_:)``), from one scan of
    /// `text`: packing splits the same text there.
    static func hexAndSigningInputEnd(_ text: String) -> (hex: String, signingInputEnd: Int) {
        var text = text
        return text.withUTF8 { bytes in
            let end = signingInputEnd(bytes)
            return (Hex.encode(SHA256.hash(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[..<end])))), end)
        }
    }

    /// Where the signing input of a compact JWS ends (its second `.`), or the end of `bytes` when
    /// they are not one: exactly three segments, each non-empty base64url (`A–Z a–z 0–9 - _`).
    static func signingInputEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        // An index loop, not `enumerated()`: this runs over every signed text received (several
        // kilobytes each; a fact row keeps the answer for packing, ``FactRow/signingInputEnd``).
        var dots = 0
        var secondDot = 0
        var segmentStart = 0
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ".") {
                guard dots < 2, index > segmentStart else { return count }
                dots += 1
                secondDot = index
                segmentStart = index + 1
            } else if !(byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) && !(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                && !(byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) && byte != UInt8(ascii: "-") && byte != UInt8(ascii: "_")
            {
                return count
            }
            index += 1
        }
        guard dots == 2, segmentStart < count else { return count }
        return secondDot
    }

    /// A key as `facts.jws_sha256` stores it (schema version 38): a digest's 32 bytes, not its 64
    /// hex characters (half the row's key and half its unique index's entry). A key that is no
    /// lower-case hex digest (none this server writes) is stored as its UTF-8 bytes.
    static func stored(_ hex: String) -> [UInt8] {
        if hex.utf8.count == 64, let bytes = Hex.decode(hex.utf8), Hex.encode(bytes) == hex { return bytes }
        return Array(hex.utf8)
    }

    /// A stored key (``stored(_:)``) as hex again.
    static func hex(stored key: [UInt8]) -> String {
        key.count == 32 ? Hex.encode(key) : String(decoding: key, as: UTF8.self)
    }
}
