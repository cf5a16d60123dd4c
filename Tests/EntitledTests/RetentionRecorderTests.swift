import Foundation
import Storage
import Synchronization
import Testing

@testable import EntitledServer

/// The recorder keeps Apple waiting for no write: records are queued, written in batches, kept
/// through a storage failure, and bounded in memory.
@Suite struct RetentionRecorderTests {
    /// A log that fails while `down` and keeps what it was given.
    final class Log: RetentionLog {
        let state = Mutex<(down: Bool, batches: [[String]])>((false, []))
        func recordRetentionRequests(_ records: [RetentionRequestRecord]) async throws {
            try state.withLock { state in
                if state.down { throw StorageError(.unavailable, "down") }
                state.batches.append(records.map(\.requestIdentifier))
            }
        }
        func undecidedRetentionRequests(requestedBefore: Int64, limit: Int) async throws -> [RetentionRequestRecord] { [] }
        func decideRetentionRequests(_ decisions: [(id: Int64, outcome: String?)], checkedAt: Int64) async throws {}
        func retentionRuleCounts(since: Int64) async throws -> [RetentionRuleCounts] { [] }
        func purgeRetentionRequests(requestedBefore: Int64) async throws -> Int { 0 }
    }

    static func record(_ id: String) -> RetentionRequestRecord {
        RetentionRequestRecord(
            requestIdentifier: id, bundleId: "com.example.app", environment: "Production", originalTransactionId: "o1", productId: nil,
            locale: nil, ruleId: nil, answerKind: nil, messageIdentifier: nil, offerId: nil, alternateProductId: nil, requestedAt: 0)
    }

    @Test func recordsAreWrittenInOneBatchAndSurviveAFailedWrite() async throws {
        let log = Log()
        let recorder = RetentionRecorder(log: log, delay: .seconds(3600), maxPending: 3)
        log.state.withLock { $0.down = true }
        for id in ["a", "b"] { await recorder.add(Self.record(id)) }
        await recorder.flush()
        #expect(log.state.withLock { $0.batches }.isEmpty)
        // Back up: the queued records and the new one go in one write, oldest first.
        log.state.withLock { $0.down = false }
        await recorder.add(Self.record("c"))
        await recorder.flush()
        #expect(log.state.withLock { $0.batches } == [["a", "b", "c"]])
    }

    @Test func theQueueIsBounded() async throws {
        let log = Log()
        let recorder = RetentionRecorder(log: log, delay: .seconds(3600), maxPending: 2)
        for id in ["a", "b", "c"] { await recorder.add(Self.record(id)) }
        #expect(await recorder.dropped == 1)
        await recorder.flush()
        #expect(log.state.withLock { $0.batches } == [["a", "b"]])
    }
}
