import JSONCoding
import Storage
import Synchronization

/// `GET /v1/customers/{appUserId}/offerings`' answers on the poll thread, reused: every input of the
/// answer but the customer's id is its key — the paywall's version (every change of an offering,
/// the current one, the targeting rules or the experiments moves it), the customer's
/// ``CustomerAudience`` line as stored with their rendered answer (so a change of their state is
/// a new key), what the app asked and the attributes read — and the answer is held without its
/// `appUserId`, which a read writes in front. Customers of the same audience share one entry, so a
/// few entries serve every customer, and a hit decodes, chooses and encodes nothing.
///
/// Exact by construction: an entry is found only by the very inputs it was written from, so it
/// cannot serve a stale answer; one no longer asked for is dropped when the cache is full.
final class OfferingAnswerCache: Sendable {
    /// Everything the answer is written from besides the customer's id.
    struct Key: Hashable, Sendable {
        var paywallVersion: Int64
        /// The stored ``CustomerAudience`` line (``RenderedCustomer/audienceLine``), byte for byte.
        var audience: [UInt8]
        var asked: CustomerOfferings.Asked
        /// The customer's attributes when a targeting rule reads them, else empty.
        var attributes: [CustomerAttribute]

        /// The audience line hashed as one run of bytes: `[UInt8]`'s own hashing feeds the hasher
        /// a byte at a time, the larger part of a hit's cost. Equality still compares every byte.
        func hash(into hasher: inout Hasher) {
            hasher.combine(paywallVersion)
            hasher.combine(audience.count)
            audience.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(asked)
            hasher.combine(attributes)
        }
    }

    /// The answer's bytes after `{"appUserId":"…"` (keys are sorted: `appUserId` comes first).
    private let tails = Mutex<[Key: [UInt8]]>([:])
    /// At most this many answers are held (distinct audiences, queries and attribute sets).
    private let limit: Int

    init(limit: Int = 10_000) { self.limit = limit }

    /// How many answers are held.
    var count: Int { tails.withLock { $0.count } }

    private static let head = Array(#"{"appUserId":"#.utf8)

    /// The answer for `appUserId` and `key`: from the held entry, else from `render` (nil: no
    /// answer now), which is then held.
    func bytes(appUserId: String, key: Key, render: () throws -> [UInt8]?) rethrows -> [UInt8]? {
        if let tail = tails.withLock({ $0[key] }) {
            var bytes: [UInt8] = []
            // One allocation unless the id needs escaping.
            bytes.reserveCapacity(Self.head.count + appUserId.utf8.count + 2 + tail.count)
            bytes += Self.head
            JSONWriter.appendQuoted(appUserId, to: &bytes)
            bytes += tail
            return bytes
        }
        guard let body = try render() else { return nil }
        var prefix = Self.head
        JSONWriter.appendQuoted(appUserId, to: &prefix)
        // Held only when the answer starts as expected (it always does: sorted keys).
        guard body.count > prefix.count, body.starts(with: prefix) else { return body }
        let tail = Array(body[prefix.count...])
        tails.withLock { held in
            // Full: drop an arbitrary entry (hash order), keeping the rest warm.
            if held.count >= limit { held.remove(at: held.startIndex) }
            held[key] = tail
        }
        return body
    }
}
