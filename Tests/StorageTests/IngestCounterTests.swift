import Entitlements
import Foundation
import Testing

@testable import Storage

/// The ingest counters (schema version 19) on every backend: written in the ingest's own
/// transaction, read by the console's health without looking at a message, and seeded from the
/// messages already stored when a database reaches version 19.
@Suite struct IngestCounterTests {
    static let hour: Int64 = 3_600_000

    static func health(_ store: any LedgerStore, since: Int64 = testNow - 24 * hour) async throws -> IngestHealth {
        try await store.ingestHealth(since: since, now: testNow)
    }

    static func rejected(_ store: any LedgerStore, at receivedAt: Int64, code: String) async throws {
        _ = try await store.recordRejected(
            ReceivedMessage(notificationUUID: nil, source: .appleV2, body: Array("forged".utf8), receivedAt: receivedAt), code: code)
    }

    @Test("counted with the message or not at all", arguments: Backend.all)
    func sameTransaction(_ backend: Backend) async throws {
        let faults = FaultSwitch()
        try await withStore(backend, fault: faults.injector) { store, _ in
            let fact = Fixture.transaction(otid: "o1", tid: "t1", expires: testNow + 30 * 86_400_000, signed: testNow)
            faults.arm(.afterProjections)
            await #expect(throws: StorageError.self) {
                _ = try await store.ingest(Fixture.batch(uuid: "n1", facts: [fact]), projector: testProjector, now: testNow)
            }
            #expect(try await store.rows("ingest_hourly") == 0)
            #expect(try await store.rows("ingest_latest") == 0)
            faults.arm(nil)
            _ = try await store.ingest(Fixture.batch(uuid: "n1", facts: [fact]), projector: testProjector, now: testNow)
            // A repeated notificationUUID is a duplicate: not stored, not counted.
            _ = try await store.ingest(Fixture.batch(uuid: "n1", facts: [fact]), projector: testProjector, now: testNow)
            try await Self.rejected(store, at: testNow, code: "SIGNATURE_INVALID")
            try await Self.rejected(store, at: testNow + Self.hour, code: "SIGNATURE_INVALID")
            try await Self.rejected(store, at: testNow + Self.hour, code: "MALFORMED_PAYLOAD")

            let health = try await Self.health(store)
            let hour = testNow / Self.hour
            #expect(health.hours.map { [$0.hour, $0.accepted, $0.rejected] } == [[hour, 1, 1], [hour + 1, 0, 2]])
            #expect(health.rejections.map { "\($0.code)=\($0.count)" } == ["SIGNATURE_INVALID=2", "MALFORMED_PAYLOAD=1"])
            #expect(health.latest.map { "\($0.bundleId) \($0.environment) \($0.receivedAt)" } == ["com.example Production \(testNow)"])
            #expect(try await Self.health(store, since: testNow + Self.hour).hours.map(\.hour) == [hour + 1])
        }
    }

    /// A database written before version 19 gets counters from its last 48 hours of messages: the
    /// fixture holds messages received 72 h, 2 h and 0 h before `testNow` and one rejected at `testNow`.
    @Test("seeded from the stored messages", arguments: Backend.durable)
    func seededByTheMigration(_ backend: Backend) async throws {
        let database = try TestDatabase(backend)
        try await database.restore(.ingestV17)
        let after = try await openStore(url: database.url, configuration: database.configuration())
        do {
            let health = try await Self.health(after, since: testNow - 96 * Self.hour)
            // The message 72 hours before the newest is outside the seeded 48 hours.
            #expect(health.hours.map { [$0.accepted, $0.rejected] } == [[1, 0], [1, 1]])
            #expect(health.rejections.map { "\($0.code)=\($0.count)" } == ["SIGNATURE_INVALID=1"])
            #expect(health.latest.map(\.receivedAt) == [testNow])
        } catch {
            await after.close()
            await database.destroy()
            throw error
        }
        await after.close()
        await database.destroy()
    }
}
