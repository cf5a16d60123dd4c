import AppStore
import HTTPServer
import JSONCoding
import Synchronization

/// Part of ``ProjectionCache``: encoded customer bodies for answers the projection does not hold
/// ready (another environment, or a state that changed with time), reused while a customer's
/// answer is unchanged: only `serverTime` differs between two reads, so it is spliced into the
/// cached bytes instead of encoding the whole body again.
///
/// An entry is used only when the body about to be sent equals the cached one in every field but
/// `serverTime`, so the cache can never serve a stale answer.
final class EncodedBodyCache: Sendable {
    private struct Entry {
        var body: CustomerBody
        var rendered: RenderedCustomer
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let limit: Int

    init(limit: Int = 50_000) { self.limit = limit }

    /// The JSON bytes of `body`, written with `codec` when not cached.
    func bytes(for body: CustomerBody, codec: JSONCodec) throws -> [UInt8] {
        var key = body
        key.serverTime = 0
        if let hit = entries.withLock({ $0[body.appUserId] }), hit.body == key {
            return hit.rendered.body(serverTime: body.serverTime)
        }
        // Only the bytes are used here, never the stored header: any scope will do.
        guard let rendered = RenderedCustomer(body: key, scope: key.environment, codec: codec) else { return try codec.encodeAnswer(body) }
        entries.withLock { cache in
            // Full: drop an arbitrary entry (hash order), keeping the rest warm.
            if cache.count >= limit { cache.remove(at: cache.startIndex) }
            cache[body.appUserId] = Entry(body: key, rendered: rendered)
        }
        return rendered.body(serverTime: body.serverTime)
    }
}
