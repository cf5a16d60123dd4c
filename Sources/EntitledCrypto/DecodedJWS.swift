/// A compact JWS's text with its payload and signature segments base64url-decoded, as the parser
/// that split it decoded them (the verifier's, `AppStore.CompactJWS`).
///
/// Verification decodes every segment anyway; the decoded bytes travel on with the verified value
/// so that whoever needs them again takes them instead of decoding the text a second time: the
/// ledger stores a signed text as its header, its decoded payload and its decoded signature
/// (`Storage`'s packed layout), and an accepted body is written around a bare text as it is.
public struct DecodedJWS: Sendable, Hashable {
    /// The text as received, surrounding whitespace included.
    public let text: String
    /// The payload segment, base64url-decoded.
    public let payload: [UInt8]
    /// The signature segment, base64url-decoded.
    public let signature: [UInt8]
    /// Whether `text` is the three segments alone, without whitespace around them. Its segments
    /// decoded, such a text holds nothing but base64url characters, `=` and two dots: it is its
    /// own JSON string, with nothing to escape.
    public let isBare: Bool

    /// Made only where the segments were decoded, within this package: `payload` and `signature`
    /// are what `Base64.decode(utf8:url: true)` gives for the segments of `text`, which those
    /// taking them rely on (the ledger rebuilds stored text from them byte for byte).
    package init(text: String, payload: [UInt8], signature: [UInt8], isBare: Bool) {
        self.text = text
        self.payload = payload
        self.signature = signature
        self.isBare = isBare
    }
}
