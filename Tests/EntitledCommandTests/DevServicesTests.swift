@testable import EntitledTestSupport
import Foundation
import Testing

/// `entitled dev` runs the background services `serve` runs (one list, built by the composition
/// root): the backfill and acknowledgement jobs its ingest enqueues for the seeded purchases get done.
@Suite struct DevServicesTests {
    static func jobs(_ port: Int, status: String) async throws -> [[String: Any]] {
        let reply = try await DevDashboardTests.dev(port, "GET", "/v1/jobs?status=\(status)")
        #expect(reply.status == 200)
        return reply.json["jobs"] as? [[String: Any]] ?? []
    }

    @Test func devRunsTheBackfillJobsItsIngestEnqueues() async throws {
        let dev = try await DevDashboardTests.start()
        defer { dev.terminate() }
        // Each seeded purchase is the first the ledger hears of its subscription: a backfill job.
        let settled = try await eventually(within: .seconds(30)) {
            let pending = try await Self.jobs(dev.port, status: "pending")
            let running = try await Self.jobs(dev.port, status: "running")
            let done = try await Self.jobs(dev.port, status: "done")
            return pending.isEmpty && running.isEmpty && !done.isEmpty
        }
        #expect(settled, "the seeded purchases' backfill jobs are run")
        let done = try await Self.jobs(dev.port, status: "done")
        #expect(done.count >= 5, "one per seeded subscription")
        // And Gina's Google Play purchase is acknowledged at the fake Google.
        #expect(done.allSatisfy { ["backfill", "playAcknowledge"].contains($0["kind"] as? String) && $0["lastError"] is NSNull })
        #expect(done.contains { $0["kind"] as? String == "playAcknowledge" })
        #expect(try await Self.jobs(dev.port, status: "failed").isEmpty)
    }
}
