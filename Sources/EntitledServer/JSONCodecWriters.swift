import AppStore
import Foundation
import HTTPServer

/// The writing half of the ``JSONCodec`` seam: the writers live here, beside the server's JSON
/// string escaper, while the reader lives with Apple's models.
extension JSONCodec {
    /// `value` as `JSONEncoder` with `.sortedKeys` writes it (a stored fact's payload, whose bytes
    /// must never change): with the fast paths by ``SortedJSONEncoder`` where it can.
    func encodeSorted(_ value: some Encodable) throws -> [UInt8] {
        if fastPaths, let bytes = try? SortedJSONEncoder.encode(value) { return bytes }
        return Array(try Self.sortedEncoder.encode(value))
    }

    /// `{"key":"value"}` as ``encodeSorted(_:)`` writes it. With the fast paths, a `value` known
    /// to hold nothing JSON escapes (`plain`: a JWS its verification found bare,
    /// ``AppStore/CompactJWS/isBare``, is base64url, `=` and two dots) is copied as it is rather
    /// than scanned by the escaper — an accepted notification's body is 13 KB of it. `key` is a
    /// member name of this code's, which needs no escaping either.
    func encodeMember(_ key: String, _ value: String, plain: Bool) throws -> [UInt8] {
        guard fastPaths, plain else { return try encodeSorted([key: value]) }
        var bytes = Array("{\"\(key)\":\"".utf8)
        bytes.reserveCapacity(bytes.count + value.utf8.count + 2)
        bytes += value.utf8
        bytes += "\"}".utf8
        return bytes
    }

    /// A customer answer as `JSONEncoder.entitledDefault` writes it: with the fast paths by
    /// ``AnswerJSON``.
    func encodeAnswer(_ body: CustomerBody) throws -> [UInt8] {
        if fastPaths { return AnswerJSON.encode(body) }
        return Array(try JSONEncoder.entitledDefault.encode(body))
    }

    // Never mutated after creation, so one instance serves every thread.
    private static let sortedEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
}
