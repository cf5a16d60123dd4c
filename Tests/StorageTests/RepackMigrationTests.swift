import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// Schema version 14 on a database written before it: every row repacked in batches, each
/// text still exactly what was received, every answer unchanged, and a rewrite killed half-way
/// goes on where it stopped.
@Suite("Schema 14: a ledger of the older layout repacked in place")
struct RepackMigrationTests {
    struct Killed: Error {}

    /// What the fixture ledgers `ledger_v13` and `ledger_v15` were written from: V2 notifications
    /// for 6 customers (each created first, with its token), a client post claimed by `c-0`, a
    /// rejected message.
    enum Legacy {
        static let customers = (0..<6).map { "c-\($0)" }
        static func token(_ index: Int) -> String { "00000000-0000-4000-8000-0000000000" + (index < 10 ? "0\(index)" : "\(index)") }
        static let notifications = (0..<6).map {
            AppleShaped.notification(uuid: "n-\($0)", otid: "o-\($0)", token: token($0), seed: $0 * 10)
        }
        static let client = AppleShaped.notification(uuid: "unused", otid: "o-client", token: nil, seed: 500).facts[1]
        static let clientBody = Array(#"{"signedTransaction":"\#(client.signed!)"}"#.utf8)
        static let forged = Array(#"{"signedPayload":"forged"}"#.utf8)
        /// Every fact's signed text, as received.
        static let texts = notifications.flatMap { $0.facts.compactMap(\.signed) } + [client.signed!]
        /// Every message's body, as received.
        static let bodies = notifications.map(\.message.body) + [clientBody, forged]

        /// Writes it through `store`.
        static func write(_ store: any LedgerStore) async throws {
            for (index, (message, facts)) in notifications.enumerated() {
                _ = try await store.ensureCustomer(appUserId: customers[index], appAccountToken: token(index), projector: testProjector, now: testNow)
                _ = try await store.ingest(message, facts: facts, claim: nil, projector: testProjector, now: testNow)
            }
            _ = try await store.ingest(
                ReceivedMessage(notificationUUID: nil, source: .client, body: clientBody, receivedAt: testNow), facts: [client],
                claim: Claim(appUserId: "c-0"), projector: testProjector, now: testNow)
            _ = try await store.recordRejected(
                ReceivedMessage(notificationUUID: "forged", source: .appleV2, body: forged, receivedAt: testNow), code: "SIGNATURE_INVALID")
        }
    }

    /// Each customer's answer in a database not yet migrated.
    static func answers(_ database: TestDatabase) async throws -> [String: StoredProjection] {
        let reader = try await database.open(migrate: false)
        var before: [String: StoredProjection] = [:]
        do {
            for name in Legacy.customers { before[name] = try await reader.projectionBeforeAnswers(appUserId: name) }
        } catch {
            await reader.close()
            throw error
        }
        await reader.close()
        #expect(before.count == Legacy.customers.count)
        return before
    }

    /// After a rewrite: every customer answers as `before`, nothing differs from a fresh
    /// projection, and (`store` closed) a later start has nothing to rewrite.
    static func expectFinished(
        _ store: any LedgerStore, before: [String: StoredProjection], configuration: StoreConfiguration, url: String,
        events: borrowing Mutex<[[String: String]]>
    ) async throws {
        for (name, answer) in before {
            // The customer's stored state as it was is now its stored answer (schema 26), to be
            // written again in storage's encoding by its next projection; nothing else changed.
            var moved = answer
            moved.answer = answer.document.isEmpty ? nil : answer.document
            moved.projection.state = []
            #expect(try await store.projection(appUserId: name) == moved)
        }
        let report = try await store.compareProjections(projector: testProjector)
        #expect(report.differences == 0 && report.failedCustomers.isEmpty)
        await store.close()
        events.withLock { $0.removeAll() }
        let again = try await openStore(url: url, configuration: configuration)
        #expect(events.withLock { $0.isEmpty })
        await again.close()
    }

    @Test("every text and answer survives; a rewrite killed half-way continues", arguments: Backend.durable)
    func migrate(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        do {
            try await database.restore(.ledgerV13)
            let before = try await Self.answers(database)

            // Killed in the facts' third batch (of 5 rows each): two batches committed.
            let events = Mutex<[[String: String]]>([])
            var configuration = database.configuration()
            configuration.repackBatch = 5
            configuration.log = { event, fields in if event == "ledger repack" { events.withLock { $0.append(fields) } } }
            let batches = Atomic<Int>(0)
            configuration.repackFault = { _, _ in
                if batches.add(1, ordering: .relaxed).newValue == 3 { throw Killed() }
            }
            await #expect(throws: (any Error).self) { _ = try await openStore(url: database.url, configuration: configuration) }
            #expect(events.withLock { $0.map { $0["rows"] } } == ["5", "10"])
            let halfway = try await database.open(migrate: false)
            #expect(try await halfway.count("SELECT COUNT(*) FROM facts WHERE signed_packed IS NOT NULL") > 0)
            #expect(try await halfway.count("SELECT COUNT(*) FROM facts WHERE signed_packed IS NULL") > 0)
            // Half-way, both layouts read alike.
            #expect(Set(try await halfway.signedTexts().values) == Set(Legacy.texts))
            await halfway.close()

            // Restarted: on from the third batch, not from the start.
            events.withLock { $0.removeAll() }
            configuration.repackFault = nil
            let store = try await openStore(url: database.url, configuration: configuration)
            let resumed = events.withLock { $0 }
            #expect(resumed.first?["table"] == "facts" && resumed.first?["at id"] == "15")
            #expect(resumed.contains { $0["table"] == "notifications" })

            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE signed_packed IS NULL OR jws <> ''") == 0)
            #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE body_packed IS NULL") == 1)  // the rejected one
            #expect(try await store.rows("jws_headers") == 1)
            #expect(try await store.signedTexts().values.sorted() == Legacy.texts.sorted())
            #expect(
                try await store.bodies().values.sorted { $0.lexicographicallyPrecedes($1) }
                    == Legacy.bodies.sorted { $0.lexicographicallyPrecedes($1) })
            try await Self.expectFinished(store, before: before, configuration: configuration, url: database.url, events: events)
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }
}
