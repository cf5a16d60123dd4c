import Entitlements
import Testing

@testable import Storage

/// Events' answers stored compressed (``EventAnswer``, schema version 42): the bytes read are the
/// bytes written, whichever layout the row has, so the feed and the webhooks deliver the same
/// events.
@Suite struct EventAnswerTests {
    static let answers: [[UInt8]] = [
        [],
        Array(#"{"appUserId":"u1","entitlements":{}}"#.utf8),
        Array(#"{"appUserId":"ü-ñ-😀","note":"\"quoted\" \\ slash"}"#.utf8),
        Array((#"{"appUserId":"u2","subscriptions":["# + (0..<40).map { #"{"originalTransactionId":"2000000\#($0)","productId":"com.example.pro","status":"active"}"# }.joined(separator: ",") + "]}").utf8),
    ]

    @Test("an answer reads back byte for byte, compressed or as stored before", arguments: answers)
    func roundTrip(answer: [UInt8]) throws {
        let packed = try EventAnswer.encode(answer)
        #expect(try EventAnswer.bytes(answer: "", packed: packed) == answer)
        #expect(try EventAnswer.bytes(answer: String(decoding: answer, as: UTF8.self), packed: nil) == answer)
        if answer.count > 200 { #expect(packed.count * 2 < answer.count) }
    }

    @Test("a damaged compressed answer is a typed error, not a crash")
    func damaged() throws {
        var packed = try EventAnswer.encode(Self.answers[3])
        packed.removeLast(4)
        #expect(throws: StorageError.self) { try EventAnswer.bytes(answer: "", packed: packed) }
    }

    /// A database at schema 41 (each answer as text, no `answer_packed`) migrates: every answer is
    /// compressed, and every event reads exactly as before.
    @Test("schema 42 compresses stored answers; every event reads the same", arguments: Backend.durable)
    func migrate(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        do {
            let store = try await database.open()
            for batch in EventOutboxTests().lifecycle() { _ = try await store.ingest(batch, projector: testProjector, now: testNow) }
            _ = try await store.appendEvent(
                OutboxEvent(
                    sequence: 0, id: "test-event", type: "test", appUserId: nil, appAccountToken: nil, environment: nil, bundleId: nil,
                    productId: nil, originalTransactionId: nil, entitlements: [], details: [:], cause: "{}", occurredAt: testNow,
                    recordedAt: testNow, answer: Self.answers[2]))
            let before = try await store.events(after: 0, limit: 100)
            #expect(before.count > 1)
            #expect(before.contains { $0.answer == Self.answers[2] })
            #expect(try await store.count("SELECT COUNT(*) FROM events WHERE answer <> '' OR answer_packed IS NULL") == 0)
            // The rows as schema 41 wrote them.
            let backed = try #require(store as? any SessionBackedStore)
            for event in before {
                let text = String(decoding: event.answer, as: UTF8.self)
                _ = try await backed.write { session in
                    try session.query("UPDATE events SET answer = \(text), answer_packed = NULL WHERE seq = \(event.sequence)")
                }
            }
            try await store.raw("ALTER TABLE events DROP COLUMN answer_packed")
            try await store.raw("DELETE FROM schema_migrations WHERE version = 42")
            await store.close()

            let migrated = try await database.open()
            #expect(try await migrated.count("SELECT COUNT(*) FROM events WHERE answer <> '' OR answer_packed IS NULL") == 0)
            #expect(try await migrated.events(after: 0, limit: 100) == before)
            await migrated.close()
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }
}
