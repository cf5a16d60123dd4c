import AppStore
import Foundation
import JSONCoding

/// The server's writers on the ``JSONCodec`` seam: a signed text's member and the customer answer
/// (the sorted-keys writer and the reader are the seam's own, in `JSONCoding`).
extension JSONCodec {
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
}
