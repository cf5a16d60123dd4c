import Foundation

/// The one seam for the JSON fast paths: every decode of a signed payload or a stored fact, and
/// every encode of a stored fact or a customer answer, goes through a `JSONCodec`.
///
/// With ``fastPaths`` on (the default) it uses this module's own reader and writer, measured in
/// `entitled bench api`/`bench verify` (docs/operations.md): ``TapeJSONDecoder`` and
/// ``SortedJSONEncoder`` (the server adds its answer writer as an extension of this type). Off,
/// it uses Foundation's `JSONDecoder`/`JSONEncoder` alone. Both give the same values and the same
/// bytes (the fast paths' tests and the fuzzer hold them to it): off is the reference the
/// differential tests compare the fast paths with (`ENTITLED_FAST_PATHS=off` for a whole process).
public struct JSONCodec: Sendable, Equatable {
    /// Whether the fast reader and writer are used; off means Foundation only.
    public var fastPaths: Bool

    public init(fastPaths: Bool = true) { self.fastPaths = fastPaths }

    /// Decodes `type` from `bytes`. Errors are Foundation's either way (the fast path hands
    /// anything unusual, errors included, to `JSONDecoder`).
    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        if fastPaths { return try TapeJSONDecoder.decode(type, from: bytes, fallback: Self.decoder) }
        return try Self.decoder.decode(type, from: Data(bytes))
    }

    /// `value` as `JSONEncoder` with `.sortedKeys` writes it (a stored fact's text, whose bytes
    /// must never change): with the fast paths by ``SortedJSONEncoder`` where it can.
    /// `escapingSlashes` false: as `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes`.
    public func encodeSorted(_ value: some Encodable, escapingSlashes: Bool = true) throws -> [UInt8] {
        if fastPaths, let bytes = try? SortedJSONEncoder.encode(value, escapingSlashes: escapingSlashes) { return bytes }
        return Array(try (escapingSlashes ? Self.sortedEncoder : Self.sortedUnescapedEncoder).encode(value))
    }

    // Never mutated after creation, so one instance serves every thread.
    package static let decoder = JSONDecoder()
    private static let sortedEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
    private static let sortedUnescapedEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
