import Foundation

/// The one seam for the JSON fast paths: every decode of a signed payload or a stored fact, and
/// every encode of a stored fact or a customer answer, goes through a `JSONCodec`.
///
/// With ``fastPaths`` on (the default) it uses the project's own readers and writers, measured in
/// `entitled bench api`/`bench verify` (docs/operations.md): ``TapeJSONDecoder`` here, and in
/// `EntitledServer` the sorted-keys fact writer and the answer writer (its extension of this type).
/// Off, it uses Foundation's `JSONDecoder`/`JSONEncoder` alone. Both give the same values and the
/// same bytes (the fast paths' tests and the fuzzer hold them to it): off is the reference the
/// differential tests compare the fast paths with (`ENTITLED_FAST_PATHS=off` for a whole process).
public struct JSONCodec: Sendable, Equatable {
    /// Whether the fast readers and writers are used; off means Foundation only.
    public var fastPaths: Bool

    public init(fastPaths: Bool = true) { self.fastPaths = fastPaths }

    /// Decodes `type` from `bytes`. Errors are Foundation's either way (the fast path hands
    /// anything unusual, errors included, to `JSONDecoder`).
    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        if fastPaths { return try TapeJSONDecoder.decode(type, from: bytes, fallback: Self.decoder) }
        return try Self.decoder.decode(type, from: Data(bytes))
    }

    // Never mutated after creation, so one instance serves every thread.
    static let decoder = JSONDecoder()
}
