import Entitlements
import Foundation
import Testing

@testable import Storage

/// V1 notifications and receipt data have no signed text: the server keys them on
/// `Fact.identity`, so that a delivery replayed after the encoder changed is still a replay.
@Suite("Unsigned facts are keyed by their identity, not their JSON")
struct UnsignedFactIdentityTests {
    static let facts: [Fact] = [
        .v1Notification(
            V1NotificationFact(
                type: V1NotificationType(rawValue: "DID_RENEW"), date: testNow, originalTransactionId: "o1",
                transactionId: "t2", productId: "com.example.pro", autoRenewStatus: true)),
        .receiptEntry(
            ReceiptEntryFact(
                transactionId: "t2", originalTransactionId: "o1", productId: "com.example.pro", purchaseDate: testNow,
                expiresDate: testNow + day, receiptDate: testNow)),
        .pendingRenewal(
            PendingRenewalFact(
                originalTransactionId: "o1", productId: "com.example.pro", autoRenewStatus: true, receiptDate: testNow)),
    ]

    /// Today's encoding of a fact, and an older binary's (any other bytes for the same fact).
    static func json(_ fact: Fact, old: Bool) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = old ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
        return String(decoding: try encoder.encode(fact), as: UTF8.self)
    }

    /// The server of an older binary: the same facts, other JSON bytes.
    static var olderEncoder: Projector {
        var projector = testProjector
        projector.factCoding.encode = { (try? UnsignedFactIdentityTests.json($0, old: true)) ?? "" }
        return projector
    }

    @Test("an identity names the fact's fields, not its JSON; signed facts have none")
    func identity() throws {
        for fact in Self.facts {
            let reencoded = try JSONDecoder().decode(Fact.self, from: Data(try Self.json(fact, old: true).utf8))
            #expect(reencoded.identity == fact.identity)
            #expect(fact.identity != nil)
        }
        // Every field that states something is part of it.
        guard case .receiptEntry(var entry) = Self.facts[1] else { return }
        let before = Fact.receiptEntry(entry).identity
        entry.cancellationDate = testNow + 1
        #expect(Fact.receiptEntry(entry).identity != before)
        // A string cannot run into the next part.
        let a = Fact.v1Notification(V1NotificationFact(type: V1NotificationType(rawValue: "A|1"), date: 1, productId: "p"))
        let b = Fact.v1Notification(V1NotificationFact(type: V1NotificationType(rawValue: "A"), date: 1, productId: "1|p"))
        #expect(a.identity != b.identity)
        #expect(Fact.appTransaction(AppTransactionFact(originalPurchaseDate: 1, signedDate: 1)).identity == nil)
    }

    @Test("the same facts under another encoding are replays", arguments: Backend.all)
    func replay(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let first = try await store.ingest(
                Fixture.batch(facts: Self.facts.map { ($0, nil) }, source: .appleV1), projector: testProjector, now: testNow)
            #expect(first.insertedFacts == 3)
            let replay = try await store.ingest(
                Fixture.batch(facts: Self.facts.map { ($0, nil) }, source: .appleV1), projector: Self.olderEncoder, now: testNow)
            #expect(replay.insertedFacts == 0)
            #expect(replay.replayedFacts == 3)
            #expect(try await store.rows("facts") == 3)
        }
    }

    @Test("version 6 rekeys facts stored under their JSON; a replay afterwards applies nothing twice", arguments: Backend.durable)
    func migrationRekeys(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        defer { Task { await database.destroy() } }
        // A database as a binary before version 6 left it: these facts keyed by their (older)
        // JSON, and a row that is not an engine fact, which the migration leaves alone.
        try await database.restore(.factsV5)
        let foreign = #"{"kind":"other"}"#
        let store = try await database.open()
        do {
            #expect(try await store.count("SELECT MAX(version) FROM schema_migrations") == Int64(Schema.latestVersion))
            for fact in Self.facts {
                let key = FactDigest.hex(try #require(fact.identity))
                #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE jws_sha256 = \(FactDigest.stored(key))") == 1)
            }
            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE jws_sha256 = \(FactDigest.stored(FactDigest.hex(foreign)))") == 1)
            // The same delivery, as this binary stores it, changes nothing.
            let replay = try await store.ingest(
                Fixture.batch(facts: Self.facts.map { ($0, nil) }, source: .appleV1), projector: testProjector, now: testNow)
            #expect(replay.insertedFacts == 0)
            #expect(try await store.rows("facts") == 4)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
