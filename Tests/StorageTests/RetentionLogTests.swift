import Foundation
import Testing

@testable import Storage

/// The retention-request log (`retention_requests`) on every backend.
@Suite struct RetentionLogTests {
    static func record(_ id: String, otid: String, rule: String?, at time: Int64) -> RetentionRequestRecord {
        RetentionRequestRecord(
            requestIdentifier: id, bundleId: "com.example.app", environment: "Production", originalTransactionId: otid,
            productId: "pro.monthly", locale: "en-US", ruleId: rule, answerKind: rule == nil ? nil : "message",
            messageIdentifier: rule == nil ? nil : "m", offerId: nil, alternateProductId: nil, requestedAt: time)
    }

    @Test("requests are kept once, decided, counted per rule and purged by age", arguments: Backend.all)
    func logKeepsDecidesCountsAndPurges(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let log = store
            try await log.recordRetentionRequests([
                Self.record("r1", otid: "o1", rule: "offer", at: 1000), Self.record("r2", otid: "o2", rule: "offer", at: 2000),
                Self.record("r3", otid: "o3", rule: nil, at: 3000),
            ])
            // Apple's retry of r1 is stored once.
            try await log.recordRetentionRequests([Self.record("r1", otid: "o1", rule: "offer", at: 1500)])
            let undecided = try await log.undecidedRetentionRequests(requestedBefore: 2500, limit: 10)
            #expect(undecided.map(\.requestIdentifier) == ["r1", "r2"])
            #expect(undecided.first?.ruleId == "offer" && undecided.first?.requestedAt == 1000)
            let ids = undecided.compactMap(\.id)
            try await log.decideRetentionRequests([(ids[0], "renewed"), (ids[1], nil)], checkedAt: 5000)
            // Decided ones leave the queue; the one checked again goes behind those never checked.
            #expect(try await log.undecidedRetentionRequests(requestedBefore: 10_000, limit: 10).map(\.requestIdentifier) == ["r3", "r2"])
            #expect(
                try await log.retentionRuleCounts(since: 0) == [
                    RetentionRuleCounts(bundleId: "com.example.app", ruleId: "none", requests: 1, renewed: 0, expired: 0),
                    RetentionRuleCounts(bundleId: "com.example.app", ruleId: "offer", requests: 2, renewed: 1, expired: 0),
                ])
            #expect(try await log.retentionRuleCounts(since: 1500).map(\.requests) == [1, 1])
            #expect(try await log.purgeRetentionRequests(requestedBefore: 2500) == 2)
            #expect(try await log.retentionRuleCounts(since: 0).map(\.ruleId) == ["none"])
        }
    }
}
