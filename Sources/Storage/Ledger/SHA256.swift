import EntitledCrypto

/// The digest that keys facts: a fact is unique by its kind and the SHA-256 of its signed text.
enum FactDigest {
    /// Lower-case hex SHA-256 of `text`'s UTF-8 bytes (OpenSSL, through EntitledCrypto).
    static func hex(_ text: String) -> String {
        var text = text
        return text.withUTF8 { Hex.encode(SHA256.hash(UnsafeRawBufferPointer($0))) }
    }
}
