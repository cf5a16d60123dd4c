import AppStore
import Entitlements
import JSONCoding
import Storage

/// The projection path's speed-ups, behind one seam with one switch (``enabled``):
///
/// - the customer's answer rendered from their stored state (``RenderedCustomer``) and stored
///   beside it, so that a read sends stored bytes without evaluating; none, or one of another
///   ``RenderedCustomer/formatVersion``, is rendered on read and stored;
/// - encoded answers reused between reads while unchanged (``EncodedBodyCache``).
///
/// Off, no answer is stored (every read evaluates the facts) and every answer is encoded,
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

    // MARK: Stored answers

    /// The answer to store beside a customer's state: its rendering for the environments the
    /// state merges; nil when off (every read then evaluates) or the state is none this binary
    /// reads (one stored before storage kept its own encoding).
    func answer(rendering document: [UInt8]) -> RenderedCustomer? {
        guard enabled, !document.isEmpty,
            let stored = try? codec.decode(CustomerDocument.self, from: document)
        else { return nil }
        let body = CustomerBody(customer: stored.customer, state: stored.state, now: 0)
        return RenderedCustomer(
            body: body, scope: EvaluationContext.scope(stored.environments ?? [stored.state.environment]),
            audience: CustomerAudience(stored.state), codec: codec)
    }

    /// What a stored answer is good for.
    enum StoredAnswer: Equatable {
        /// An answer in this binary's format.
        case current(RenderedCustomer)
        /// No answer, or one of an older format: render it again from the stored state (and
        /// store it).
        case outdated
        /// Nothing to use or redo: the cache is off, or the answer is a newer binary's (left to
        /// it: two binaries sharing a database must not overwrite each other's on every read).
        case unusable
    }

    func storedAnswer(_ answer: [UInt8]?) -> StoredAnswer {
        guard enabled else { return .unusable }
        guard let answer else { return .outdated }
        // The hot read: a current answer is parsed once, as before there were versions.
        if let rendered = RenderedCustomer(document: answer) { return .current(rendered) }
        if let version = RenderedCustomer.formatVersion(of: answer), version > RenderedCustomer.formatVersion { return .unusable }
        return .outdated
    }

    /// ``storedAnswer(_:)``'s current answer, its head alone (``RenderedCustomer/Head``) and
    /// where its body starts; nil for every other case.
    func storedHead(_ answer: [UInt8]?) -> (head: RenderedCustomer.Head, bodyStart: Int)? {
        guard enabled, let answer else { return nil }
        return RenderedCustomer.Head.read(answer)
    }

    // MARK: Encoded answers

    /// The JSON bytes of `body`, reused from the last read of the same answer when on.
    func bytes(for body: CustomerBody) throws -> [UInt8] {
        if enabled { return try bodies.bytes(for: body, codec: codec) }
        return try codec.encodeAnswer(body)
    }
}
