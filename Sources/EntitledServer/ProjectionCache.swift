import AppStore
import Entitlements

/// The projection path's speed-ups, behind one seam with one switch (``enabled``):
///
/// - the customer's answer rendered into their stored projection (``RenderedCustomer``), so that a
///   read sends stored bytes without evaluating; a document of an older ``RenderedCustomer/formatVersion``
///   is re-rendered on read and stored again;
/// - encoded answers reused between reads while unchanged (``EncodedBodyCache``).
///
/// Off, projections store no answer (every read evaluates the facts) and every answer is encoded,
/// all with ``codec``. The answers are the same bytes either way: a differential test compares two
/// servers, one with it off (`ENTITLED_FAST_PATHS=off` for a whole process, see ``FastPaths``).
public final class ProjectionCache: Sendable {
    /// Whether the two speed-ups are used.
    public let enabled: Bool
    /// Encodes and decodes everything the projection path reads and writes.
    public let codec: JSONCodec
    private let bodies: EncodedBodyCache

    public init(enabled: Bool = true, codec: JSONCodec = JSONCodec()) {
        self.enabled = enabled
        self.codec = codec
        bodies = EncodedBodyCache()
    }

    // MARK: Facts

    /// The engine fact a ledger payload holds; nil when it is not one.
    func fact(_ payload: String) -> Fact? {
        try? codec.decode(Fact.self, from: Array(payload.utf8))
    }

    /// A fact's ledger payload: the sorted-keys JSON (whose bytes must never change).
    func payload(_ fact: Fact) -> String {
        (try? codec.encodeSorted(fact)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    // MARK: Stored answers

    /// The state document a projection stores for `body`, the answer for `scope`: its rendered
    /// answer, or nothing when off.
    func document(for body: CustomerBody, scope: String) -> [UInt8] {
        guard enabled else { return [] }
        // Not renderable (it always is): an empty document sends reads to the slow path.
        return RenderedCustomer(body: body, scope: scope, codec: codec)?.document ?? []
    }

    /// What a stored state document is good for.
    enum StoredAnswer: Equatable {
        /// An answer in this binary's format.
        case current(RenderedCustomer)
        /// No answer, or one of an older format: render it again (and store it).
        case outdated
        /// Nothing to use or redo (the cache is off, or a newer binary's format).
        case unusable
    }

    func storedAnswer(_ document: [UInt8]) -> StoredAnswer {
        guard enabled else { return .unusable }
        // The hot read: a current answer is parsed once, as before there were versions.
        if let answer = RenderedCustomer(document: document) { return .current(answer) }
        if document.isEmpty { return .outdated }
        guard let version = RenderedCustomer.formatVersion(of: document), version < RenderedCustomer.formatVersion
        else { return .unusable }
        return .outdated
    }

    // MARK: Encoded answers

    /// The JSON bytes of `body`, reused from the last read of the same answer when on.
    func bytes(for body: CustomerBody) throws -> [UInt8] {
        if enabled { return try bodies.bytes(for: body, codec: codec) }
        return try codec.encodeAnswer(body)
    }
}
