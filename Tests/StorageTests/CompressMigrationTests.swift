import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// Schema version 16 on a database written by version 15: every fact's JSON compressed and its
/// signed text rewritten in the current format (its literals compressed with the JSON), in batches; every text and answer the same, and a rewrite
/// killed half-way goes on where it stopped.
@Suite("Schema 16: the ledger's JSON compressed in place")
struct CompressMigrationTests {
    typealias Legacy = RepackMigrationTests.Legacy
    struct Killed: Error {}

    @Test("every text and answer survives; a rewrite killed half-way continues", arguments: Backend.durable)
    func migrate(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        do {
            try await database.restore(.ledgerV15)
            let before = try await RepackMigrationTests.answers(database)
            let reader = try await database.open(migrate: false)
            let plain = try await reader.count("SELECT SUM(LENGTH(payload)) + SUM(COALESCE(LENGTH(signed_packed), 0)) FROM facts")
            await reader.close()

            // Killed in the third batch (of 5 rows each): two batches committed.
            let events = Mutex<[[String: String]]>([])
            var configuration = database.configuration()
            configuration.repackBatch = 5
            configuration.log = { event, fields in if event == "ledger repack" { events.withLock { $0.append(fields) } } }
            let batches = Atomic<Int>(0)
            configuration.repackFault = { phase, _ in
                #expect(phase == "compress facts")
                if batches.add(1, ordering: .relaxed).newValue == 3 { throw Killed() }
            }
            await #expect(throws: (any Error).self) { _ = try await openStore(url: database.url, configuration: configuration) }
            #expect(events.withLock { $0.map { $0["rows"] } } == ["5", "10"])
            let halfway = try await database.open(migrate: false)
            #expect(try await halfway.count("SELECT COUNT(*) FROM facts WHERE payload_packed IS NOT NULL") == 10)
            #expect(try await halfway.count("SELECT COUNT(*) FROM facts WHERE payload_packed IS NULL") > 0)
            // Half-way, both layouts read alike (a customer's facts are read from both).
            #expect(Set(try await halfway.signedTexts().values) == Set(Legacy.texts))
            var facts: [String: [StoredFact]] = [:]
            for name in Legacy.customers { facts[name] = try await halfway.facts(appUserId: name) }
            let decoded: [Fact] = facts.values.flatMap { $0.compactMap(\.fact) }
            #expect(Set(decoded).count == 3 * Legacy.customers.count + 1)
            await halfway.close()

            // Restarted: on from the third batch, not from the start.
            events.withLock { $0.removeAll() }
            configuration.repackFault = nil
            let store = try await openStore(url: database.url, configuration: configuration)
            #expect(events.withLock { $0.first?["table"] == "compress facts" && $0.first?["at id"] == "15" })

            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE payload_packed IS NULL OR payload <> ''") == 0)
            // The JSON and the signed texts' literals, compressed together (signatures stay as they are).
            let compressed = try await store.count("SELECT SUM(LENGTH(payload_packed)) + SUM(COALESCE(LENGTH(signed_packed), 0)) FROM facts")
            #expect(compressed * 2 < plain, "\(compressed) bytes compressed of \(plain)")
            #expect(try await store.signedTexts().values.sorted() == Legacy.texts.sorted())
            #expect(
                try await store.bodies().values.sorted { $0.lexicographicallyPrecedes($1) }
                    == Legacy.bodies.sorted { $0.lexicographicallyPrecedes($1) })
            for name in Legacy.customers { #expect(try await store.facts(appUserId: name) == facts[name]) }
            // New ingests after the rewrite read alike with the rewritten rows.
            let (message, newFacts) = AppleShaped.notification(uuid: "n-new", otid: "o-new", token: nil, seed: 900)
            _ = try await store.ingest(message, facts: newFacts, claim: nil, projector: testProjector, now: testNow)
            #expect(try await store.signedTexts().values.sorted() == (Legacy.texts + newFacts.compactMap(\.signed)).sorted())
            try await RepackMigrationTests.expectFinished(store, before: before, configuration: configuration, url: database.url, events: events)
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }
}
