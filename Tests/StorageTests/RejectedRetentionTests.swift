import EntitledCrypto
import Foundation
import Testing

@testable import Storage

/// Rejected messages cannot fill the disk: a bounded prefix of each body is kept (with the whole
/// body's digest and size), and the records are purged after the retention.
@Suite("Rejected messages are bounded and purged")
struct RejectedRetentionTests {
    static func rejected(bytes: Int, at receivedAt: Int64) -> ReceivedMessage {
        ReceivedMessage(
            notificationUUID: String(repeating: "u", count: 10_000), source: .appleV2,
            body: (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31) }, receivedAt: receivedAt)
    }

    @Test("a rejected body is stored as a 4 KiB prefix with its SHA-256 and size", arguments: Backend.all)
    func boundedBody(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let message = Self.rejected(bytes: 255_000, at: testNow)
            let id = try await store.recordRejected(message, code: "INVALID_SIGNATURE")
            #expect(try await store.count("SELECT LENGTH(body) FROM notifications WHERE id = \(id)") == 4096)
            #expect(try await store.count("SELECT body_size FROM notifications WHERE id = \(id)") == 255_000)
            let digest = Hex.encode(SHA256.hash(message.body))
            #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE id = \(id) AND body_sha256 = \(digest)") == 1)
            #expect(try await store.count("SELECT LENGTH(claimed_uuid) FROM notifications WHERE id = \(id)") == 256)
            // A small body is kept whole.
            let small = try await store.recordRejected(Self.rejected(bytes: 100, at: testNow), code: "INVALID_SIGNATURE")
            #expect(try await store.count("SELECT LENGTH(body) FROM notifications WHERE id = \(small)") == 100)
            // 400 forged 255 KB bodies (the reported attack) now take ~1.6 MB, not 100 MiB.
            #expect(try await store.count("SELECT SUM(LENGTH(body)) FROM notifications") <= 2 * 4096)
        }
    }

    @Test("a post without a UUID whose facts are all replays leaves no row", arguments: Backend.all)
    func replayedClientPost(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let fact = Fixture.transaction(otid: "o1", tid: "t1", expires: testNow + day, signed: testNow)
            let first = try await store.ingest(Fixture.batch(uuid: nil, facts: [fact], source: .client), projector: testProjector, now: testNow)
            #expect(first.notificationID != nil)
            for _ in 0..<3 {
                let again = try await store.ingest(Fixture.batch(uuid: nil, facts: [fact], source: .client), projector: testProjector, now: testNow)
                #expect(again.status == .accepted)
                #expect(again.notificationID == nil)
                #expect(again.replayedFacts == 1)
            }
            #expect(try await store.rows("notifications") == 1)
        }
    }

    @Test("the purge deletes old rejected records only", arguments: Backend.all)
    func purge(backend: Backend) async throws {
        let cutoff = testNow - 30 * day
        // The accepted purchase is unlinked, so projected: the final rebuild looks at its instant.
        try await withStore(backend, now: cutoff - day) { store, _ in
            let old = try await store.recordRejected(Self.rejected(bytes: 10, at: cutoff - 1), code: "INVALID_SIGNATURE")
            let recent = try await store.recordRejected(Self.rejected(bytes: 10, at: cutoff), code: "INVALID_SIGNATURE")
            let accepted = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "o1", tid: "t1", expires: testNow, signed: cutoff - day)], receivedAt: cutoff - day),
                projector: testProjector, now: cutoff - day)
            #expect(try await store.purgeRejected(receivedBefore: cutoff) == 1)
            #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE id = \(old)") == 0)
            #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE id = \(recent)") == 1)
            #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE id = \(accepted.notificationID ?? -1)") == 1)
            #expect(try await store.purgeRejected(receivedBefore: cutoff) == 0)
        }
    }

    @Test("the purge works through more rejected records than one chunk", arguments: [Backend.sqliteFile])
    func purgeChunks(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            for index in 0..<2_100 {
                try await store.recordRejected(Self.rejected(bytes: 1, at: testNow - Int64(index)), code: "X")
            }
            #expect(try await store.purgeRejected(receivedBefore: testNow + 1) == 2_100)
            #expect(try await store.rows("notifications") == 0)
        }
    }
}
