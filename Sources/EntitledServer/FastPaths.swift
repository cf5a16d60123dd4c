import AppStore
import JSONCoding

/// The one switch for the server's measured fast paths (docs/operations.md, "Benchmarks"): the
/// ``JSONCodec``'s own readers and writers, the ``ProjectionCache`` and the offerings read's held
/// answers (``OfferingAnswerCache``, on with the codec's switch). Read once by the
/// composition root; every component gets its seam from here, none reads the environment.
///
/// `ENTITLED_FAST_PATHS=off` turns them all off (Foundation's JSON, no stored answers, no reuse): the
/// answers stay the same bytes, only slower: Foundation is the reference the fast paths are
/// tested against (differential tests on generated inputs).
public struct FastPaths: Sendable, Equatable {
    /// The environment variable the composition root reads.
    public static let environmentVariable = "ENTITLED_FAST_PATHS"

    /// Whether the fast paths are used.
    public var enabled: Bool

    public init(enabled: Bool = true) { self.enabled = enabled }

    /// From a process environment: `off` turns the fast paths off; absent or anything else leaves them on.
    public init(environment: [String: String]) {
        enabled = environment[Self.environmentVariable] != "off"
    }

    /// The JSON codec seam with this switch.
    public var codec: JSONCodec { JSONCodec(fastPaths: enabled) }

    /// A projection cache with this switch, to share between the ledger and the API.
    public func projectionCache() -> ProjectionCache { ProjectionCache(enabled: enabled, codec: codec) }
}
