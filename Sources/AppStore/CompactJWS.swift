import EntitledCrypto

/// Size and nesting limits applied before any JSON is decoded.
public struct JWSLimits: Sendable, Equatable {
    /// The longest compact JWS accepted, in bytes. Apple's notifications with their nested signed
    /// fields are around 15 KB.
    public var maxTokenBytes: Int
    /// The deepest JSON nesting accepted in the header or payload.
    public var maxJSONDepth: Int

    public init(maxTokenBytes: Int = 64 * 1024, maxJSONDepth: Int = 32) {
        self.maxTokenBytes = maxTokenBytes
        self.maxJSONDepth = maxJSONDepth
    }
}

/// A compact JWS split and decoded, but not verified.
///
/// Parsing checks only the shape: three base64url segments, a JSON object header, a payload within
/// the nesting limit. Nothing here is trusted yet.
public struct CompactJWS: Sendable {
    /// The decoded header JSON.
    public var header: JSONValue
    /// The decoded payload bytes (JSON).
    public var payload: [UInt8]
    /// The decoded signature bytes (64 for ES256).
    public var signature: [UInt8]
    /// The ASCII bytes of `header.payload`, which the signature covers.
    public var signingInput: [UInt8]

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
        var token = token
        // withUTF8 only rethrows untyped errors, so carry the typed one out in a Result.
        let result = token.withUTF8 { bytes -> Result<CompactJWS, VerificationError> in
            do throws(VerificationError) {
                return .success(try parse(utf8: UnsafeRawBufferPointer(bytes), limits: limits))
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
        guard bytes.count <= limits.maxTokenBytes else {
            throw VerificationError(.invalidJWTFormat, "token is \(bytes.count) bytes, over the \(limits.maxTokenBytes) limit")
        }
        // Tolerate surrounding whitespace (a trailing newline from a file), nothing else.
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        var dots: [Int] = []
        for index in start..<end where bytes[index] == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > 2 { break }
        }
        guard dots.count == 2 else { throw VerificationError(.invalidJWTFormat, "not three dot-separated segments") }
        let headerRange = start..<dots[0]
        let payloadRange = (dots[0] + 1)..<dots[1]
        let signatureRange = (dots[1] + 1)..<end
        guard !headerRange.isEmpty, !payloadRange.isEmpty else {
            throw VerificationError(.invalidJWTFormat, "empty header or payload segment")
        }
        guard let headerBytes = Base64.decode(utf8: UnsafeRawBufferPointer(rebasing: bytes[headerRange]), url: true),
            let payload = Base64.decode(utf8: UnsafeRawBufferPointer(rebasing: bytes[payloadRange]), url: true),
            let signature = Base64.decode(utf8: UnsafeRawBufferPointer(rebasing: bytes[signatureRange]), url: true)
        else { throw VerificationError(.invalidJWTFormat, "a segment is not base64url") }
        guard let header = JSONReader.parse(headerBytes, depthLimit: min(limits.maxJSONDepth, 8)),
            case .object = header
        else { throw VerificationError(.invalidJWTFormat, "header is not a JSON object") }
        guard JSONScan.nestingDepth(of: payload, limit: limits.maxJSONDepth) != nil else {
            throw VerificationError(.malformedPayload, "payload nests deeper than \(limits.maxJSONDepth)")
        }
        guard let first = payload.first(where: { !isSpace($0) }), first == UInt8(ascii: "{") else {
            throw VerificationError(.malformedPayload, "payload is not a JSON object")
        }
        let signingInput = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<dots[1]]))
        return CompactJWS(header: header, payload: payload, signature: signature, signingInput: signingInput)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
