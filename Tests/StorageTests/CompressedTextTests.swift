import AppStoreTesting
import EntitledCrypto
import Testing

@testable import Storage

/// The ledger's stored JSON: compressed with zstd and dictionary 2 (a fact's JSON and its signed
/// text's literals together), read back byte for byte; rows older versions deflated with zlib and
/// dictionary 1 still read; a corrupt row is a typed error with a bounded allocation, never a crash.
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

    /// Generated texts: JSON-like ones built from Apple's member names and random values, and
    /// random bytes, of random lengths (a seeded generator: each seed the same texts every run).
    static func generated(seed: UInt64) -> [[UInt8]] {
        var random = SplitMix64(seed: seed)
        let names = ["transactionId", "productId", "expiresDate", "price", "currency", "storefront", "signedDate", "x"]
        func int(below bound: Int) -> Int { Int.random(in: 0..<bound, using: &random) }
        func json() -> [UInt8] {
            let members = (0..<int(below: 30)).map { _ in
                let name = names[int(below: names.count)]
                let value = int(below: 2) == 0 ? "\(int(below: 1 << 40))" : "\"v\(int(below: 100_000))\""
                return "\"\(name)\":\(value)"
            }
            return Array("{\(members.joined(separator: ","))}".utf8)
        }
        func bytes() -> [UInt8] { (0..<int(below: 3000)).map { _ in UInt8(truncatingIfNeeded: int(below: 256)) } }
        return (0..<1 + int(below: 2)).map { _ in int(below: 3) == 0 ? bytes() : json() }
    }

    @Test("one text or two come back byte for byte", arguments: 0..<40)
    func roundTrip(seed: UInt64) throws {
        let texts = Self.generated(seed: seed)
        let stored = try CompressedText.encode(texts)
        #expect(stored.first == UInt8(LedgerDictionary.current))
        #expect(try CompressedText.decode(stored[...]) == texts)
        // Incompressible text costs a few bytes of header, never more.
        #expect(stored.count <= texts.reduce(0) { $0 + $1.count } + 16)
    }

    @Test("the edge texts come back byte for byte", arguments: [[[UInt8]()], [[], []], [transaction, []], [[], transaction], [Array(repeating: 0xFF, count: 5000)]])
    func edges(texts: [[UInt8]]) throws {
        #expect(try CompressedText.decode(try CompressedText.encode(texts)[...]) == texts)
    }

    @Test("Apple's JSON shrinks to well under a third with the dictionary")
    func ratio() throws {
        let stored = try CompressedText.encode([Self.transaction])
        #expect(stored.count * 3 < Self.transaction.count, "\(stored.count) of \(Self.transaction.count) bytes")
    }

    @Test("more texts than a row holds, or none, are refused")
    func textCount() {
        #expect(throws: StorageError(.invalidArgument, nil)) { try CompressedText.encode([]) }
        #expect(throws: StorageError(.invalidArgument, nil)) { try CompressedText.encode([[1], [2], [3]]) }
    }

    /// A transaction's JSON as schema 16 stored it (`Fixtures/ingest_v17`): dictionary 1, zlib.
    static let storedByVersion16: [UInt8] = Hex.decode(
        "01b402232af1a1f8dcd0c2c0c8d8d8c8c20004480a867c03220322393f572fb522311758bbe801c5490c1743734b4b73130398037106129a3af4102b31c0156600")!

    @Test("rows older versions deflated with dictionary 1 still read")
    func zlibRows() throws {
        let json = try CompressedText.decode(Self.storedByVersion16[...])
        #expect(json.count == 1)
        #expect(String(decoding: json[0], as: UTF8.self).hasPrefix(#"{"fact":{"environment":"Production","expiresDate":1802332800000,"#))
        #expect(String(decoding: json[0], as: UTF8.self).hasSuffix(#""transactionId":"t0"},"kind":"transaction"}"#))
        let context = Array(#"{"fact":{"transactionId":"2000000812345678"}}"#.utf8)
        for (text, context) in [(Self.transaction, context), (Self.transaction, []), ([], [])] {
            #expect(try CompressedText.decode(try CompressedText.deflated(text, context: context)[...], context: context) == [text])
        }
        // The stored-as-is layout (dictionary 0) of the same versions.
        #expect(try CompressedText.decode([0, 5] + Array("short".utf8)) == [Array("short".utf8)])
    }

    /// Each a stored row damaged one way.
    static func damaged() throws -> [(String, [UInt8])] {
        let good = try CompressedText.encode([Self.transaction])
        // The dictionary id, the count, the length (two bytes here), the frame.
        let frame = good[4...]
        func header(_ lengths: [Int], id: UInt8 = UInt8(LedgerDictionary.current)) -> [UInt8] {
            var out = [id]
            Varint.write(UInt64(lengths.count), to: &out)
            for length in lengths { Varint.write(UInt64(length), to: &out) }
            return out
        }
        var flipped = good
        flipped[good.count / 2] ^= 0x5A
        let count = Self.transaction.count
        let zlib = try CompressedText.deflated(Self.transaction)
        return [
            ("empty", []), ("truncated", Array(good.prefix(good.count - 5))), ("flipped bits", flipped),
            ("stored length too long", header([count + 1]) + frame), ("stored length too short", header([count - 1]) + frame),
            ("split differently", header([10, count - 10]) + frame), ("length above the limit", header([CompressedText.maxLength + 1]) + frame),
            ("lengths above the limit together", header([CompressedText.maxLength, 1]) + frame),
            ("no texts", header([]) + frame), ("three texts", header([count, 0, 0]) + frame),
            ("unknown dictionary", [9] + good[1...]), ("trailing bytes", good + [0, 1, 2]),
            ("a second frame after it", good + frame), ("frame only half there", header([count]) + frame.prefix(frame.count / 2)),
            ("raw text of another length", [0, 10] + Array("short".utf8)), ("varint that never ends", Array(repeating: 0xFF, count: 12)),
            ("dictionary 1 truncated", Array(zlib.dropLast(4))),
            ("dictionary 1 context missing", try CompressedText.deflated(Self.transaction, context: Array("2000000812345678 com.example.app".utf8))),
        ]
    }

    @Test("a damaged row is DATA_CORRUPT", arguments: try damaged())
    func corrupt(name: String, stored: [UInt8]) {
        #expect(throws: StorageError(.corrupt, nil), "\(name)") {
            let texts = try CompressedText.decode(stored[...])
            // A change that still decompresses to the right length must not go unnoticed either.
            if texts != [Self.transaction] { throw StorageError(.corrupt, "different text") }
        }
    }

    @Test("a frame that decompresses to far more than its row says is refused, not inflated")
    func bomb() throws {
        // 4 MiB of one byte: a frame of a few hundred bytes.
        let frame = try LedgerDictionary.zstd.get().compress(Array(repeating: 0x41, count: 4 << 20))
        #expect(frame.count < 1000)
        for claimed in [0, 100, CompressedText.maxLength] where claimed != 4 << 20 {
            var stored: [UInt8] = [UInt8(LedgerDictionary.current), 1]
            Varint.write(UInt64(claimed), to: &stored)
            // The output buffer is the claimed size: the frame stops there, a DATA_CORRUPT error.
            #expect(throws: StorageError(.corrupt, nil)) { try CompressedText.decode((stored + frame)[...]) }
        }
    }

    static let parts: [StoredPart] = [
        .literal(Array(#"{"signedPayload":""#.utf8)),
        .jws(
            header: 7, payload: [.literal(transaction), .reference(kind: "renewal", key: Array(repeating: 3, count: 32), signature: [1, 2])],
            signature: Array(repeating: 9, count: 64)),
        .literal(Array(#""}"#.utf8)),
        .reference(kind: "notification", key: Array(repeating: 4, count: 32), signature: nil),
    ]
    static let json = #"{"fact":{"originalTransactionId":"2000000812345678"}}"#

    @Test("signed text in format 3 is rebuilt from its parts and its fact's literals; damaged, it is DATA_CORRUPT")
    func format() throws {
        let stored = SignedTextFormat.encode(Self.parts, literalsWithFact: true)
        #expect(stored.first == SignedTextFormat.literalsWithFact)
        let payload = try FactPayload.encode(Self.json, literals: SignedTextFormat.literals(Self.parts))
        let texts = try FactPayload.texts(payload: "", packed: payload)
        #expect(texts.json == Array(Self.json.utf8))
        #expect(try FactPayload.bytes(payload: "", packed: payload) == Array(Self.json.utf8))
        #expect(try SignedTextFormat.decode(stored, context: texts) == Self.parts)
        let inline = SignedTextFormat.encode(Self.parts, literalsWithFact: false)
        #expect(try SignedTextFormat.decode(inline, context: .none) == Self.parts)
        #expect(stored.count + payload.count + 300 < inline.count + Self.json.utf8.count, "\(stored.count) + \(payload.count) compressed, \(inline.count) inline")
        for damaged in [Array(stored.prefix(stored.count - 1)), stored + [0], [9] + stored.dropFirst(), Array(stored.prefix(9))] {
            #expect(throws: StorageError(.corrupt, nil)) { try SignedTextFormat.decode(damaged, context: texts) }
        }
        // Without its fact's literals, or with too few, it cannot be rebuilt.
        #expect(throws: StorageError(.corrupt, nil)) { try SignedTextFormat.decode(stored, context: .none) }
        var short = texts
        short.literals?.removeLast()
        #expect(throws: StorageError(.corrupt, nil)) { try SignedTextFormat.decode(stored, context: short) }
    }

    @Test("signed text in format 2 (literals deflated with the fact's JSON) still reads")
    func formatTwo() throws {
        let literals = SignedTextFormat.literals(Self.parts)
        let json = Array(Self.json.utf8)
        // Format 2 is format 3's structure after the format byte and the deflated literals.
        var stored: [UInt8] = [SignedTextFormat.compressed]
        Varint.writeBytes(try CompressedText.deflated(literals, context: json), to: &stored)
        stored += SignedTextFormat.encode(Self.parts, literalsWithFact: true).dropFirst()
        #expect(try SignedTextFormat.decode(stored, context: FactTexts(json: json)) == Self.parts)
        // Read without the row's JSON, the literals do not inflate to themselves.
        #expect(throws: StorageError(.corrupt, nil)) {
            if try SignedTextFormat.decode(stored, context: .none) != Self.parts { throw StorageError(.corrupt, "different parts") }
        }
    }
}
