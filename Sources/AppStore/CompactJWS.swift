import EntitledCrypto
import Foundation
import JSONCoding
import Synchronization

/// Size and nesting limits applied before any JSON is decoded.
public struct JWSLimits: Sendable, Equatable {
    /// The longest compact JWS accepted, in bytes. Apple's notifications with their nested signed
    /// fields are around 15 KB.
    public var maxTokenBytes: Int
    /// The deepest JSON nesting accepted in the header or payload.
    public var maxJSONDepth: Int

    /// Defaults: 64 KiB per token, nesting depth 32.
    public init(maxTokenBytes: Int = 64 * 1024, maxJSONDepth: Int = 32) {
        self.maxTokenBytes = maxTokenBytes
        self.maxJSONDepth = maxJSONDepth
    }
}

/// What a JWS header says, decoded once: the JSON, plus the `x5c` entries as DER and the chain-cache
/// digest of leaf ‖ intermediate. A pure function of the header segment's bytes, which is what
/// lets ``HeaderMemo`` reuse it.
final class DecodedHeader: Sendable {
    let json: StrictJSONValue
    /// `x5c` entries as DER (nil entries failed to decode); nil when `x5c` is not an array of strings.
    let certificateDER: [[UInt8]?]?
    /// SHA-256 of leaf DER ‖ intermediate DER, when there are at least two decodable entries.
    let chainDigest: [UInt8]?

    init(json: StrictJSONValue) {
        self.json = json
        if case .array(let entries) = json["x5c"] {
            var decoded: [[UInt8]?]? = []
            for entry in entries {
                guard case .string(let text) = entry else {
                    decoded = nil
                    break
                }
                decoded?.append(Base64.decode(text).flatMap { $0.isEmpty ? nil : $0 })
            }
            certificateDER = decoded
        } else {
            certificateDER = nil
        }
        if let der = certificateDER, der.count >= 2, let leaf = der[0], let intermediate = der[1] {
            chainDigest = SHA256.hash(concatenating: [leaf, intermediate])
        } else {
            chainDigest = nil
        }
    }
}

/// Remembers the last few decoded headers by their exact base64url bytes.
///
/// Apple signs every payload of a period with the same leaf, so a notification and its nested
/// transaction and renewal info, and the notifications after it, carry byte-identical headers.
/// Recognizing the bytes (one `memcmp`) skips the header's base64 and JSON decoding and the `x5c`
/// decoding and hashing on the warm path. Bytes that differ in any way are decoded afresh.
final class HeaderMemo: Sendable {
    private struct State {
        var entries: [(segment: [UInt8], header: DecodedHeader)] = []
        /// The slot the next new header replaces once full (round robin).
        var next = 0
    }
    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int = 8) { self.capacity = capacity }

    func header(for segment: UnsafeRawBufferPointer) -> DecodedHeader? {
        state.withLock { state in
            for entry in state.entries where entry.segment.count == segment.count {
                let same = entry.segment.withUnsafeBytes { memcmp($0.baseAddress!, segment.baseAddress!, segment.count) == 0 }
                if same { return entry.header }
            }
            return nil
        }
    }

    func remember(_ header: DecodedHeader, for segment: UnsafeRawBufferPointer) {
        // Headers are small (a few KB); an oversized one is not worth keeping.
        guard segment.count <= 16 * 1024 else { return }
        let copy = Array(segment)
        state.withLock { state in
            if state.entries.count < capacity {
                state.entries.append((copy, header))
            } else {
                state.entries[state.next] = (copy, header)
                state.next = (state.next + 1) % capacity
            }
        }
    }
}

/// A compact JWS split and decoded, but not verified.
///
/// Parsing checks only the shape: three base64url segments, a JSON object header, a payload within
/// the nesting limit. Nothing here is trusted yet.
public struct CompactJWS: Sendable {
    let decodedHeader: DecodedHeader
    /// The decoded header JSON.
    public var header: StrictJSONValue { decodedHeader.json }
    /// The decoded payload bytes (JSON).
    public var payload: [UInt8]
    /// The decoded signature bytes (64 for ES256).
    public var signature: [UInt8]
    /// The ASCII bytes of `header.payload`, which the signature covers.
    public var signingInput: [UInt8]
    /// Whether the token was its three segments alone, no whitespace trimmed around them. Parsed,
    /// such a token holds nothing but base64url characters, `=` and two dots (every segment is
    /// decoded strictly), so it is its own JSON string.
    public var isBare: Bool

    /// The header's `alg`, if it is a string.
    public var algorithm: String? {
        if case .string(let alg) = header["alg"] { alg } else { nil }
    }

    /// The header's `x5c` entries: nil when absent or not an array of strings.
    public var certificateChain: [String]? {
        guard case .array(let entries) = header["x5c"] else { return nil }
        var result: [String] = []
        result.reserveCapacity(entries.count)
        for entry in entries {
            guard case .string(let text) = entry else { return nil }
            result.append(text)
        }
        return result
    }

    /// Splits and decodes `token`.
    /// - Throws: `INVALID_JWT_FORMAT` for shape errors and oversize input, `MALFORMED_PAYLOAD` when the
    ///   payload nests deeper than the limit.
    public static func parse(_ token: String, limits: JWSLimits = JWSLimits()) throws(VerificationError) -> CompactJWS {
        try parse(token, limits: limits, memo: nil)
    }

    static func parse(_ token: String, limits: JWSLimits, memo: HeaderMemo?) throws(VerificationError) -> CompactJWS {
        var token = token
        // withUTF8 only rethrows untyped errors, so carry the typed one out in a Result.
        let result = token.withUTF8 { bytes -> Result<CompactJWS, VerificationError> in
            do throws(VerificationError) {
                return .success(try parse(utf8: UnsafeRawBufferPointer(bytes), limits: limits, memo: memo))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The byte form of ``parse(_:limits:)``.
    public static func parse(utf8 bytes: UnsafeRawBufferPointer, limits: JWSLimits = JWSLimits()) throws(VerificationError)
        -> CompactJWS
    {
        try parse(utf8: bytes, limits: limits, memo: nil)
    }

    static func parse(utf8 bytes: UnsafeRawBufferPointer, limits: JWSLimits, memo: HeaderMemo?) throws(VerificationError)
        -> CompactJWS
    {
        guard bytes.count <= limits.maxTokenBytes else {
            throw VerificationError(.invalidJWTFormat, "token is \(bytes.count) bytes, over the \(limits.maxTokenBytes) limit")
        }
        guard let (start, first, second, end) = segments(bytes) else {
            throw VerificationError(.invalidJWTFormat, "not three dot-separated segments")
        }
        let headerSegment = UnsafeRawBufferPointer(rebasing: bytes[start..<first])
        let payloadSegment = UnsafeRawBufferPointer(rebasing: bytes[(first + 1)..<second])
        let signatureSegment = UnsafeRawBufferPointer(rebasing: bytes[(second + 1)..<end])
        guard !headerSegment.isEmpty, !payloadSegment.isEmpty else {
            throw VerificationError(.invalidJWTFormat, "empty header or payload segment")
        }

        let decodedHeader: DecodedHeader
        if let known = memo?.header(for: headerSegment) {
            decodedHeader = known
        } else {
            guard let headerBytes = Base64.decode(utf8: headerSegment, url: true) else {
                throw VerificationError(.invalidJWTFormat, "header is not base64url")
            }
            guard let json = StrictJSONReader.parse(headerBytes, depthLimit: min(limits.maxJSONDepth, 8)), case .object = json else {
                throw VerificationError(.invalidJWTFormat, "header is not a JSON object")
            }
            decodedHeader = DecodedHeader(json: json)
            memo?.remember(decodedHeader, for: headerSegment)
        }
        guard let payload = Base64.decode(utf8: payloadSegment, url: true),
            let signature = Base64.decode(utf8: signatureSegment, url: true)
        else { throw VerificationError(.invalidJWTFormat, "a segment is not base64url") }
        guard JSONNestingScan.nestingDepth(of: payload, limit: limits.maxJSONDepth) != nil else {
            throw VerificationError(.malformedPayload, "payload nests deeper than \(limits.maxJSONDepth)")
        }
        guard let firstByte = payload.first(where: { !isSpace($0) }), firstByte == UInt8(ascii: "{") else {
            throw VerificationError(.malformedPayload, "payload is not a JSON object")
        }
        let signingInput = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<second]))
        return CompactJWS(
            decodedHeader: decodedHeader, payload: payload, signature: signature, signingInput: signingInput,
            isBare: start == 0 && end == bytes.count)
    }

    /// Where the three segments are: `start..<first` header, `first+1..<second` payload,
    /// `second+1..<end` signature, surrounding whitespace (a trailing newline from a file) trimmed.
    /// Nil unless there are exactly two dots.
    static func segments(_ bytes: UnsafeRawBufferPointer) -> (start: Int, first: Int, second: Int, end: Int)? {
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        guard let base = bytes.baseAddress, start < end else { return nil }
        // memchr rather than a byte loop: tokens are kilobytes and this runs for every one.
        func dot(after index: Int) -> Int? {
            guard index < end, let found = memchr(base + index, Int32(UInt8(ascii: ".")), end - index) else { return nil }
            return UnsafeRawPointer(found) - base
        }
        guard let first = dot(after: start), let second = dot(after: first + 1), dot(after: second + 1) == nil else {
            return nil
        }
        return (start, first, second, end)
    }

    /// The payload segment's base64url text, unchecked and unverified: for routing a token (which
    /// app's verifier to use) before verification, never for trusting its contents.
    public static func unverifiedPayloadSegment(of token: String) -> [UInt8]? {
        var token = token
        return token.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            guard let (_, first, second, _) = segments(bytes) else { return nil }
            return Array(bytes[(first + 1)..<second])
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
