import Entitlements
import Foundation
import JSONCoding
import Testing

@testable import Storage

/// A fact's ledger text is written once and read by every later binary, so Storage's own coders
/// must keep writing the bytes the ledger already holds, with the fast paths and without.
@Suite("Fact texts keep their stored bytes")
struct FactTextTests {
    static let codecs = [JSONCodec(fastPaths: true), JSONCodec(fastPaths: false)]

    /// The fact texts of the fixture databases' `facts` rows, as their `pg_dump` holds them
    /// (`facts_v5` is left out: its texts are pretty-printed on purpose).
    static func fixtureTexts() throws -> [String] {
        var texts: [String] = []
        for fixture in [LedgerFixture.ledgerV13, .ledgerV15, .factsV3] {
            let dump = try String(contentsOf: LedgerFixture.folder.appendingPathComponent("\(fixture.rawValue).sql"), encoding: .utf8)
            for line in dump.split(separator: "\n") where line.hasPrefix("INSERT INTO \(fixture.dumpedSchema).facts VALUES") {
                // The payload is the row's one quoted value that is a JSON object (the others are
                // hex digests, compact JWS and ids); facts hold no apostrophes.
                for match in line.matches(of: /'(\{"[^']*\})'/) { texts.append(String(match.output.1)) }
            }
        }
        return texts
    }

    @Test("every fact text in the fixture databases decodes and encodes again to the same bytes", arguments: codecs)
    func fixtureFactsRoundTrip(codec: JSONCodec) throws {
        let texts = try Self.fixtureTexts()
        // ledger_v13 and ledger_v15 hold 19 facts each, facts_v3 three.
        #expect(texts.count == 41)
        let projector = Projector(policy: testProjector.policy, codec: codec)
        for text in texts {
            let fact = try #require(projector.decode(text), "\(text)")
            #expect(projector.encode(fact) == text)
        }
    }

    /// A fact whose text needs every escape Foundation writes: a slash (`\/`), quotes, a control
    /// character, non-ASCII.
    static let fact = Fact.transaction(
        TransactionFact(
            transactionId: "t/1", originalTransactionId: "o\"1", productId: "com.example.pro\u{1}", purchaseDate: testNow,
            expiresDate: testNow + day, productType: .autoRenewable, appAccountToken: "jürgen", signedDate: testNow))

    /// The bytes the ledger has stored for ``fact`` since it kept facts as text: `JSONEncoder`'s
    /// sorted keys, written out here so that no change to either coder can move them.
    static let storedText =
        #"{"fact":{"appAccountToken":"jürgen","environment":"Production","expiresDate":1800086400000,"#
        + #""isUpgraded":false,"originalTransactionId":"o\"1","ownership":"purchased","#
        + #""productId":"com.example.pro\u0001","productType":"autoRenewable","purchaseDate":1800000000000,"#
        + #""quantity":1,"signedDate":1800000000000,"transactionId":"t\/1"},"kind":"transaction"}"#

    @Test("a known fact is stored as the same bytes, and they read back as the fact", arguments: codecs)
    func knownFact(codec: JSONCodec) throws {
        let projector = Projector(policy: testProjector.policy, codec: codec)
        #expect(projector.encode(Self.fact) == Self.storedText)
        #expect(projector.decode(Self.storedText) == Self.fact)
        // Foundation, the reference, writes the same.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(Self.fact), as: UTF8.self) == Self.storedText)
    }

    @Test("a store reads the texts one codec wrote with the other", arguments: Backend.all, codecs)
    func storeRoundTrip(backend: Backend, writer: JSONCodec) async throws {
        let reader = try #require(Self.codecs.first { $0 != writer })
        try await withStore(backend) { store, _ in
            let writing = Projector(policy: testProjector.policy, codec: writer)
            let token = "00000000-0000-4000-8000-0000000000aa"
            _ = try await store.ensureCustomer(appUserId: "jürgen", appAccountToken: token, projector: writing, now: testNow)
            let fact = Fixture.transaction(otid: "o/1", tid: "t\"1", expires: testNow + day, signed: testNow, token: token)
            _ = try await store.ingest(Fixture.batch(facts: [fact]), projector: writing, now: testNow)
            let stored = try await store.facts(appUserId: "jürgen", projector: Projector(policy: testProjector.policy, codec: reader))
            #expect(stored.map(\.fact) == [fact.0])
        }
    }
}
