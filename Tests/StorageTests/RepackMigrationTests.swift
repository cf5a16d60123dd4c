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

    /// What the older database holds: messages sent, customers.
    struct Legacy {
        var texts: [String] = []
        var bodies: [[UInt8]] = []
        var customers: [String] = []
    }

    /// Writes a ledger as the schema before packing (``Schema/packedSignedTextVersion``) did, or
    /// as `version` did: V2 notifications for 12 customers, a client post, a rejected message.
    static func writeLegacy(_ database: TestDatabase, version: Int = Schema.unpackedVersion) async throws -> Legacy {
        var configuration = database.configuration()
        configuration.migrationLimit = version
        let store = try await openStore(url: database.url, configuration: configuration)
        var legacy = Legacy()
        do {
            for index in 0..<12 {
                let customer = try await store.ensureCustomer(
                    appUserId: "c-\(index)", appAccountToken: nil, projector: testProjector, now: testNow)
                legacy.customers.append(customer.appUserId)
                let (message, facts) = AppleShaped.notification(
                    uuid: "n-\(index)", otid: "o-\(index)", token: customer.appAccountToken, seed: index * 10)
                _ = try await store.ingest(message, facts: facts, claim: nil, projector: testProjector, now: testNow)
                legacy.texts += facts.compactMap(\.signed)
                legacy.bodies.append(message.body)
            }
            let client = AppleShaped.notification(uuid: "unused", otid: "o-client", token: nil, seed: 500).facts[1]
            let clientBody = Array(#"{"signedTransaction":"\#(client.signed!)"}"#.utf8)
            _ = try await store.ingest(
                ReceivedMessage(notificationUUID: nil, source: .client, body: clientBody, receivedAt: testNow), facts: [client],
                claim: Claim(appUserId: "c-0"), projector: testProjector, now: testNow)
            legacy.texts.append(client.signed!)
            legacy.bodies.append(clientBody)
            let forged = Array(#"{"signedPayload":"forged"}"#.utf8)
            _ = try await store.recordRejected(
                ReceivedMessage(notificationUUID: "forged", source: .appleV2, body: forged, receivedAt: testNow), code: "SIGNATURE_INVALID")
            legacy.bodies.append(forged)
            #expect(try await store.count("SELECT MAX(version) FROM schema_migrations") == Int64(version))
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        return legacy
    }

    /// A store reading the database as the schema `version` left it, without migrating it.
    static func legacyReader(_ database: TestDatabase, version: Int) async throws -> any LedgerStore {
        var configuration = database.configuration(migrate: false)
        configuration.migrationLimit = version
        return try await openStore(url: database.url, configuration: configuration)
    }

    /// After a rewrite: every customer answers as `before`, nothing differs from a fresh
    /// projection, and (`store` closed) a later start has nothing to rewrite.
    static func expectFinished(
        _ store: any LedgerStore, before: [String: StoredProjection], configuration: StoreConfiguration, url: String,
        events: borrowing Mutex<[[String: String]]>
    ) async throws {
        for (name, answer) in before {
            // The customer's stored state as it was is now its stored answer (schema 25), to be
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
            let legacy = try await Self.writeLegacy(database)
            var before: [String: StoredProjection] = [:]
            let reader = try await Self.legacyReader(database, version: Schema.unpackedVersion)
            for name in legacy.customers { before[name] = try await reader.projection(appUserId: name) }
            await reader.close()

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
            #expect(Set(try await halfway.signedTexts().values) == Set(legacy.texts))
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
            #expect(try await store.signedTexts().values.sorted() == legacy.texts.sorted())
            #expect(
                try await store.bodies().values.sorted { $0.lexicographicallyPrecedes($1) }
                    == legacy.bodies.sorted { $0.lexicographicallyPrecedes($1) })
            try await Self.expectFinished(store, before: before, configuration: configuration, url: database.url, events: events)
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }
}
