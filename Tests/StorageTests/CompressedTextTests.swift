import Testing

@testable import Storage

/// The ledger's stored JSON (schema version 16): deflated with the preset dictionary, read back
/// byte for byte, and a corrupt row is a typed error with a bounded allocation, never a crash.
@Suite("Compressed ledger JSON")
struct CompressedTextTests {
    static let transaction = Array(
        #"""
        {"transactionId":"2000000812345678","originalTransactionId":"2000000812345678","webOrderLineItemId":"2000000098765432",\#
        "bundleId":"com.example.app","productId":"com.example.app.pro.monthly","subscriptionGroupIdentifier":"21345678",\#
        "purchaseDate":1767225600000,"originalPurchaseDate":1767225600000,"expiresDate":1769904000000,"quantity":1,\#
        "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":1767225600000,\#
        "environment":"Production","transactionReason":"PURCHASE","storefront":"USA","storefrontId":"143441","price":9990,\#
        "currency":"USD","appTransactionId":"704000012345678"}
        """#.utf8)

    @Test(
        "texts come back byte for byte",
        arguments: [
            ([UInt8](), [UInt8]()), (transaction, []), (Array("{}".utf8), []), (Array(repeating: 0xFF, count: 5000), []),
            (transaction, Array(#"{"fact":{"transactionId":"2000000812345678"}}"#.utf8)),
            ((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }, []),
        ])
    func roundTrip(text: [UInt8], context: [UInt8]) throws {
        let stored = try CompressedText.encode(text, context: context)
        #expect(try CompressedText.decode(stored[...], context: context) == text)
        // Never larger than the text and a few bytes of header: incompressible text is stored as is.
        #expect(stored.count <= text.count + 6)
    }

    @Test("Apple's JSON shrinks to well under half with the dictionary")
    func ratio() throws {
        let stored = try CompressedText.encode(Self.transaction)
        #expect(stored.first == UInt8(LedgerDictionary.current))
        #expect(stored.count * 3 < Self.transaction.count, "\(stored.count) of \(Self.transaction.count) bytes")
    }

    /// Each a stored row damaged one way.
    static func damaged() throws -> [(String, [UInt8])] {
        let good = try CompressedText.encode(Self.transaction)
        var flipped = good
        flipped[good.count / 2] ^= 0x5A
        // The dictionary id, the length (two bytes here), the stream.
        let stream = good[3...]
        func header(_ length: Int) -> [UInt8] {
            var out = [good[0]]
            Varint.write(UInt64(length), to: &out)
            return out
        }
        let longer = header(Self.transaction.count + 1) + stream
        let shorter = header(Self.transaction.count - 1) + stream
        let huge = header(CompressedText.maxLength + 1) + stream
        return [
            ("empty", []), ("truncated", Array(good.prefix(good.count - 5))), ("flipped bits", flipped),
            ("stored length too long", longer), ("stored length too short", shorter), ("length above the limit", huge),
            ("unknown dictionary", [9] + good[1...]), ("trailing bytes", good + [0, 1, 2]),
            ("raw text of another length", [0, 10] + Array("short".utf8)), ("varint that never ends", Array(repeating: 0xFF, count: 12)),
            ("context missing", try CompressedText.encode(Self.transaction, context: Array("2000000812345678 com.example.app".utf8))),
        ]
    }

    @Test("a damaged row is DATA_CORRUPT", arguments: try damaged())
    func corrupt(name: String, stored: [UInt8]) {
        #expect(throws: StorageError(.corrupt, nil), "\(name)") {
            let text = try CompressedText.decode(stored[...])
            // A change that still inflates to the right length must not go unnoticed either.
            if text != Self.transaction { throw StorageError(.corrupt, "different text") }
        }
    }

    @Test("signed text in format 2 is rebuilt from its parts; damaged, it is DATA_CORRUPT")
    func format() throws {
        let parts: [StoredPart] = [
            .literal(Array(#"{"signedPayload":""#.utf8)),
            .jws(header: 7, payload: [.literal(Self.transaction), .reference(kind: "renewal", key: Array(repeating: 3, count: 32), signature: [1, 2])], signature: Array(repeating: 9, count: 64)),
            .literal(Array(#""}"#.utf8)),
            .reference(kind: "notification", key: Array(repeating: 4, count: 32), signature: nil),
        ]
        let context = Array(#"{"fact":{"originalTransactionId":"2000000812345678"}}"#.utf8)
        let stored = SignedTextFormat.encode(parts, literals: try SignedTextFormat.compressedLiterals(parts, context: context))
        #expect(stored.first == SignedTextFormat.compressed)
        #expect(try SignedTextFormat.decode(stored, context: context) == parts)
        let inline = SignedTextFormat.encode(parts, literals: nil)
        #expect(try SignedTextFormat.decode(inline, context: []) == parts)
        #expect(stored.count + 300 < inline.count, "\(stored.count) compressed, \(inline.count) inline")
        for damaged in [Array(stored.prefix(stored.count - 1)), stored + [0], [3] + stored.dropFirst(), Array(stored.prefix(9))] {
            #expect(throws: StorageError(.corrupt, nil)) { try SignedTextFormat.decode(damaged, context: context) }
        }
        // Read without the row's JSON, the literals do not inflate to themselves.
        #expect(throws: StorageError(.corrupt, nil)) {
            if try SignedTextFormat.decode(stored, context: []) != parts { throw StorageError(.corrupt, "different parts") }
        }
    }
}
