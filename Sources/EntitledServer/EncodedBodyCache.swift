import Foundation
import HTTPServer
import Synchronization

/// Encoded customer bodies, reused while a customer's answer is unchanged: only `serverTime`
/// differs between two reads, so it is spliced into the cached bytes instead of encoding the
/// whole body again (encoding is the dearest part of the hot read).
///
/// An entry is used only when the body about to be sent equals the cached one in every field but
/// `serverTime`, so the cache can never serve a stale answer.
final class EncodedBodyCache: Sendable {
    private struct Entry {
        var body: CustomerBody
        var prefix: [UInt8]
        var suffix: [UInt8]
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let limit: Int

    init(limit: Int = 50_000) { self.limit = limit }

    /// The JSON bytes of `body`.
    func bytes(for body: CustomerBody) throws -> [UInt8] {
        var key = body
        key.serverTime = 0
        let time = Array(ISO8601.format(milliseconds: body.serverTime).utf8)
        if let hit = entries.withLock({ $0[body.appUserId] }), hit.body == key {
            return hit.prefix + time + hit.suffix
        }
        let encoded = Array(try JSONEncoder.entitledDefault.encode(key))
        // With serverTime 0 the value is the epoch's 24 characters right after its key.
        let marker = Array(#""serverTime":"1970-01-01T00:00:00.000Z""#.utf8)
        guard let start = Self.find(marker, in: encoded) else { return Array(try JSONEncoder.entitledDefault.encode(body)) }
        let valueStart = start + marker.count - 25
        let valueEnd = valueStart + 24
        let entry = Entry(body: key, prefix: Array(encoded[..<valueStart]), suffix: Array(encoded[valueEnd...]))
        entries.withLock { cache in
            // Full: drop an arbitrary entry (hash order), keeping the rest warm.
            if cache.count >= limit { cache.remove(at: cache.startIndex) }
            cache[body.appUserId] = entry
        }
        return entry.prefix + time + entry.suffix
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0] && haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}
