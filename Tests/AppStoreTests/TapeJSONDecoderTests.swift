@testable import AppStore
@testable import JSONCoding
import AppStoreTesting
import Foundation
import Testing

/// `TapeJSONDecoder` must give `JSONDecoder`'s answer for every input: its fast path may only
/// return a value Foundation returns too, and it must really take that path for Apple's payloads.
@Suite("TapeJSONDecoder: JSONDecoder's answers, faster")
struct TapeJSONDecoderTests {
    /// Decodes with both; fails the test when the fast path answers differently from Foundation.
    /// Returns whether the fast path answered.
    @discardableResult
    static func compare<T: Decodable & Equatable>(_ type: T.Type, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let foundation = Result { try JSONDecoder().decode(type, from: Data(bytes)) }
        let combined = Result { try TapeJSONDecoder.decode(type, from: bytes, fallback: JSONDecoder()) }
        switch (foundation, combined) {
        case (.success(let a), .success(let b)):
            #expect(a == b, "\(T.self): \(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        case (.failure, .failure):
            // The combined decoder's error is Foundation's own (Foundation does not always report
            // the same field twice for one input, so the texts are not compared).
            break
        default:
            Issue.record("\(T.self): one decoder failed: \(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        }
        guard let fast = TapeJSONDecoder.decodeWithoutFallback(type, from: bytes) else { return false }
        #expect((try? foundation.get()) == fast, "fast path: \(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        return true
    }

    /// Every model file of Apple's libraries, read as each payload type the server decodes.
    static func compareAll(_ bytes: [UInt8]) -> Int {
        var fast = 0
        if compare(ResponseBodyV2DecodedPayload.self, bytes) { fast += 1 }
        if compare(JWSTransactionDecodedPayload.self, bytes) { fast += 1 }
        if compare(JWSRenewalInfoDecodedPayload.self, bytes) { fast += 1 }
        if compare(AppTransaction.self, bytes) { fast += 1 }
        if compare(ResponseBodyV2.self, bytes) { fast += 1 }
        if compare(ResponseBodyV1.self, bytes) { fast += 1 }
        if compare(HistoryResponse.self, bytes) { fast += 1 }
        if compare(StatusResponse.self, bytes) { fast += 1 }
        if compare(DecodedRealtimeRequestBody.self, bytes) { fast += 1 }
        if compare(RawJSON.self, bytes) { fast += 1 }
        return fast
    }

    static func modelFiles() throws -> [URL] {
        let directories = [AppleFixtures.pythonResources, AppleFixtures.swiftResources].map { $0.appendingPathComponent("models") }
        return try directories.flatMap { directory in
            try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "json" }
        }.sorted { $0.path < $1.path }
    }

    // The long loops yield: tests share Swift's two pool threads with the servers other tests run,
    // and a loop that held one for seconds made those servers' answers time out under CI's load.
    @Test(.enabled(if: AppleTestData.suitesRun)) func appleModelFilesDecodeAsFoundationDecodesThem() async throws {
        let files = try Self.modelFiles()
        #expect(files.count > 100)
        var fast = 0
        for file in files {
            fast += Self.compareAll([UInt8](try Data(contentsOf: file)))
            await Task.yield()
        }
        #expect(fast > files.count, "the fast path answered only \(fast) times")
    }

    /// The payloads of every notification take the fast path (else the speed is gone unnoticed).
    @Test(.enabled(if: AppleTestData.suitesRun), arguments: [
        ("signedNotification", "ResponseBodyV2DecodedPayload"), ("signedSummaryNotification", "ResponseBodyV2DecodedPayload"),
        ("signedTransaction", "JWSTransactionDecodedPayload"), ("signedRenewalInfo", "JWSRenewalInfoDecodedPayload"),
        ("appTransaction", "AppTransaction"),
    ])
    func signedPayloadsTakeTheFastPath(file: String, type: String) throws {
        let bytes = [UInt8](try AppleFixtures.model(file))
        let decoded: Bool =
            switch type {
            case "ResponseBodyV2DecodedPayload": TapeJSONDecoder.decodeWithoutFallback(ResponseBodyV2DecodedPayload.self, from: bytes) != nil
            case "JWSTransactionDecodedPayload": TapeJSONDecoder.decodeWithoutFallback(JWSTransactionDecodedPayload.self, from: bytes) != nil
            case "JWSRenewalInfoDecodedPayload": TapeJSONDecoder.decodeWithoutFallback(JWSRenewalInfoDecodedPayload.self, from: bytes) != nil
            default: TapeJSONDecoder.decodeWithoutFallback(AppTransaction.self, from: bytes) != nil
            }
        #expect(decoded)
    }

    /// Inputs at the edges of the fast path; each must end as Foundation ends it.
    @Test(arguments: [
        #"{"transactionId":"t1","purchaseDate":1697679936049.7297}"#,
        #"{"transactionId":"t1","purchaseDate":1697679936049.9999}"#,
        #"{"transactionId":"t1","purchaseDate":1697679936049.999999999999999999999999999999999999999}"#,
        #"{"transactionId":"t1","purchaseDate":-1697679936049.000000000000000000000000000000000000001}"#,
        #"{"transactionId":"t1","purchaseDate":-1.5}"#,
        #"{"transactionId":"t1","purchaseDate":-0}"#,
        #"{"transactionId":"t1","purchaseDate":-0.0}"#,
        #"{"transactionId":"t1","purchaseDate":1.6976799360497297e12}"#,
        #"{"transactionId":"t1","purchaseDate":1E3}"#,
        #"{"transactionId":"t1","purchaseDate":99999999999999999999}"#,
        #"{"transactionId":"t1","purchaseDate":9223372036854775807}"#,
        #"{"transactionId":"t1","purchaseDate":-9223372036854775808}"#,
        #"{"transactionId":"t1","purchaseDate":"1697679936049"}"#,
        #"{"transactionId":"t1","purchaseDate":null}"#,
        #"{"transactionId":"t1","price":1.0}"#,
        #"{"transactionId":"t1","price":1e2}"#,
        #"{"transactionId":"t1","price":-0}"#,
        #"{"transactionId":"t1","price":01}"#,
        #"{"transactionId":"t1","price":9223372036854775808}"#,
        #"{"transactionId":"t1","quantity":true}"#,
        #"{"transactionId":"a\"b\\c\/d\b\f\n\r\t"}"#,
        #"{"transactionId":"\u00e9\u4e2d\ud83d\ude00"}"#,
        #"{"transactionId":"\ud83d"}"#,
        #"{"transactionId":"\ude00x"}"#,
        #"{"transactionId":"\u0000"}"#,
        #"{"transactionId":"é中😀"}"#,
        #"{"transactionId":"t1","transactionId":"t2"}"#,
        #"{"transactionId":"t1","transaction\u0049d":"t2"}"#,
        #"{"transaction\u0049d":"t2"}"#,
        #"{"transactionİd":"t2"}"#,
        #"{"transactionId":"t1","type":"Auto-Renewable Subscription","inAppOwnershipType":"SOMETHING_NEW"}"#,
        #"{"transactionId":"t1","offerType":1,"offerDiscountType":"FREE_TRIAL"}"#,
        #"{"transactionId":"t1","offerType":"1"}"#,
        #"{"transactionId":"t1","advancedCommerceInfo":{"a":[1,2.5,"x",null,true,{"b":{}}]}}"#,
        #"  {"transactionId" : "t1" , "storefront" : "USA" }  "#,
        #"{"transactionId":"t1"} x"#,
        #"{"transactionId":"t1",}"#,
        #"{"transactionId":"t1""#,
        #"{"transactionId":"t1\u12"}"#,
        #"{"transactionId":"t1\x"}"#,
        "{\"transactionId\":\"t1\u{1}\"}",
        #"{"transactionId":"t1"}"# + "\u{0}",
        #"[]"#,
        #"null"#,
        #""#,
        #"{"transactionId":{"nested":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}"#,
    ])
    func edgeCasesEndAsFoundationEndsThem(json: String) {
        Self.compare(JWSTransactionDecodedPayload.self, Array(json.utf8))
        Self.compare(RawJSON.self, Array(json.utf8))
    }

    @Test func invalidUTF8EndsAsFoundationEndsIt() {
        for bytes: [UInt8] in [
            Array(#"{"transactionId":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8),
            Array(#"{"transactionId":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),
            Array(#"{"transactionId":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
        ] {
            Self.compare(JWSTransactionDecodedPayload.self, bytes)
        }
    }

    /// Apple's payloads with seeded random damage: wherever the fast path answers, it answers
    /// Foundation's value; and it answers often enough for this to mean something.
    @Test(.enabled(if: AppleTestData.suitesRun)) func damagedPayloadsDecodeAsFoundationDecodesThem() async throws {
        var generator = SplitMix64(seed: 0x7A9E)
        let sources = try ["signedNotification", "signedTransaction", "signedRenewalInfo", "appTransaction", "signedSummaryNotification"]
            .map { [UInt8](try AppleFixtures.model($0)) }
        let alphabet = Array(#"0123456789.-+eE"\{}[]:,ntfu \#u{e9}"#.utf8) + [0x80, 0xC3, 0x00, 0x1F]
        var fast = 0
        let rounds = 600
        for round in 0..<rounds {
            await Task.yield()
            var bytes = sources[round % sources.count]
            for _ in 0..<(1 + Int(generator.next() % 3)) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                default: bytes.remove(at: position)
                }
            }
            if Self.compareAll(bytes) > 0 { fast += 1 }
        }
        #expect(fast > rounds / 5, "the fast path answered \(fast) of \(rounds) damaged payloads")
    }
}
