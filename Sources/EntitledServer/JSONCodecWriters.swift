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
