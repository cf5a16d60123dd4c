import Entitlements
import Foundation
import Testing

@testable import Storage

/// A signed fact is one fact whatever signature encoding it arrives with: its key is the digest of
/// the JWS signing input (`header.payload`), not of the whole text.
@Suite("Fact identity is the signed content")
struct FactIdentityTests {
    /// A JWS-shaped text: base64url header and payload, and the given signature segment.
    static func jws(payload: String, signature: String) -> String {
        func base64url(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return base64url(#"{"alg":"ES256"}"#) + "." + base64url(payload) + "." + signature
    }

    static func fact(tid: String, signature: String, token: String? = nil) -> SignedFact {
        let fact = Fact.transaction(
            TransactionFact(
                transactionId: tid, originalTransactionId: "o1", productId: "com.example.pro", purchaseDate: testNow,
                expiresDate: testNow + day, productType: .autoRenewable, appAccountToken: token, signedDate: testNow))
        return (fact, jws(payload: testProjector.encode(fact), signature: signature))
    }

    @Test("the key of a compact JWS leaves the signature out; other text is hashed whole", arguments: [
        ("aGVhZA.cGF5bG9hZA.c2lnMQ", "aGVhZA.cGF5bG9hZA.c2lnMg", true),
        ("aGVhZA.cGF5bG9hZA.c2lnMQ", "aGVhZA.cGF5bG9hZB.c2lnMQ", false),
        (#"{"price":1.5,"x":"a.b"}"#, #"{"price":1.5,"x":"a.c"}"#, false),
    ])
    func key(a: String, b: String, same: Bool) {
        #expect((FactDigest.hex(a) == FactDigest.hex(b)) == same)
    }

    @Test("the signing input is what a JWS is keyed by; anything else is keyed whole")
    func signingInput() {
        #expect(FactDigest.hex("aGVhZA.cGF5bG9hZA.c2ln") == FactDigest.hex("aGVhZA.cGF5bG9hZA.other"))
        #expect(FactDigest.hex("aGVhZA.cGF5bG9hZA.c2ln") == FactDigest.hex("aGVhZA.cGF5bG9hZA") )
        // Not a compact JWS: hashed whole (a fourth segment, an empty one, a character outside base64url).
        for text in ["a.b.c.d", "a..c", "a.b.", "a.b+.c", "a.b.c="] {
            let whole = FactDigest.hex(text)
            #expect(whole != FactDigest.hex(String(text.dropLast())), "\(text)")
        }
    }

    @Test("a fact under another signature encoding is a replay", arguments: Backend.all)
    func twinIsReplay(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let first = try await store.ingest(Fixture.batch(facts: [Self.fact(tid: "t1", signature: "c2lnMQ")]), projector: testProjector, now: testNow)
            #expect(first.insertedFacts == 1)
            let twin = try await store.ingest(Fixture.batch(facts: [Self.fact(tid: "t1", signature: "c2lnMg")]), projector: testProjector, now: testNow)
            #expect(twin.insertedFacts == 0)
            #expect(twin.replayedFacts == 1)
            #expect(try await store.rows("facts") == 1)
        }
    }

    @Test("version 4 rekeys stored facts; a replay afterwards applies nothing twice", arguments: Backend.durable)
    func migrationRekeys(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        defer { Task { await database.destroy() } }
        let token = "00000000-0000-4000-8000-0000000000aa"
        // A database as a binary before version 4 left it: alice's facts o1/t1 and o1/t2 keyed by
        // digests of the whole text, and a twin of t1 (another signature) that the old key let in.
        try await database.restore(.factsV3)
        let original = Self.fact(tid: "t1", signature: "c2lnMQ", token: token)
        let twin = Self.fact(tid: "t1", signature: "c2lnMg", token: token)
        let other = Self.fact(tid: "t2", signature: "c2lnMw", token: token)
        let store = try await database.open()
        do {
            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE jws_sha256 = \(FactDigest.stored(FactDigest.hex(original.signed!)))") == 1)
            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE jws_sha256 = \(FactDigest.stored(FactDigest.hex(other.signed!)))") == 1)
            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE jws_sha256 = \(FactDigest.stored("old-twin"))") == 1)
            // Every text seen before, and the original's own twin encodings, are replays now.
            let third = Self.fact(tid: "t1", signature: "c2lnNA", token: token)
            for fact in [original, twin, other, third] {
                let result = try await store.ingest(Fixture.batch(facts: [fact]), projector: testProjector, now: testNow)
                #expect(result.insertedFacts == 0, "\(fact.signed ?? "")")
            }
            #expect(try await store.rows("facts") == 3)
            #expect(try await store.count("SELECT MAX(version) FROM schema_migrations") == Int64(Schema.latestVersion))
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
