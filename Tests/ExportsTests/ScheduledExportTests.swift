import Entitlements
import Foundation
import Storage
import Testing

@testable import EntitledServer
@testable import Exports

/// Scheduled exports from a real store (SQLite, and PostgreSQL with `ENTITLED_TEST_POSTGRES`) to a
/// folder and to a moto S3 server: incremental by the watermark, redone after a failure without a
/// loss or a duplicate, once per interval with several servers, and loadable back.
@Suite(.serialized) struct ScheduledExportTests {
    static let hour: Int64 = 3_600_000
    static let cases: [(ExportBackend, ExportTarget, ExportFormat)] = ExportBackend.all.flatMap { backend in
        ExportTarget.all.flatMap { target in ExportFormat.allCases.map { (backend, target, $0) } }
    }

    /// The rows of every file a committed run stored for `table`.
    static func rows(_ harness: ExportHarness, _ result: ExportRunResult, _ table: ExportTable, _ format: ExportFormat) async throws
        -> [[String: String]]
    {
        guard case .committed(_, let keys, _) = result else {
            Issue.record("the run did not commit")
            return []
        }
        guard let key = keys[table] else { return [] }
        return try ExportFiles.rows(try await harness.read(key), format)
    }

    @Test("the first run exports everything, the next only what changed; the rows load back as the ledger holds them", arguments: cases)
    func incremental(backend: ExportBackend, target: ExportTarget, format: ExportFormat) async throws {
        try await ExportHarness.with(backend, target) { harness in
            for index in 0..<3 { try await harness.buy("u\(index)", otid: "o\(index)", tid: "t\(index)1") }
            harness.clock.advance(milliseconds: 10 * 60_000)
            let export = harness.export(format: format)
            let first = try await export.runOnce()
            let through = ExportHarness.start + 5 * 60_000
            guard case .committed(through, let keys, let counts) = first else {
                Issue.record("expected a committed run through \(through), got \(first)")
                return
            }
            #expect(keys[.transactions] == "transactions/2027-01-15/part-0-\(through).\(format.rawValue)")
            #expect(counts[.customers] == 3 && counts[.subscriptions] == 3 && counts[.transactions] == 3)
            #expect((counts[.events] ?? 0) > 0)
            let customers = try await Self.rows(harness, first, .customers, format)
            #expect(customers.map { $0["app_user_id"] } == ["u0", "u1", "u2"])
            #expect(customers.allSatisfy { $0["active_entitlements"] == "pro" && $0["projection_failed"] == "false" })
            let subscriptions = try await Self.rows(harness, first, .subscriptions, format)
            #expect(subscriptions.map { $0["original_transaction_id"] } == ["o0", "o1", "o2"])
            #expect(subscriptions.allSatisfy { $0["status"] == "active" && $0["environment"] == "Production" })
            try await Self.expectLedger(harness, subscriptions, updatedAt: ExportHarness.start)

            // Re-import: every exported transaction is the ledger's, field for field.
            let ledger = try await harness.ledgerTransactions(["u0", "u1", "u2"])
            let exported = try await Self.rows(harness, first, .transactions, format)
            #expect(try exported.map(ExportFiles.transaction).sorted { $0.transactionId < $1.transactionId } == ledger.values.sorted { $0.transactionId < $1.transactionId })
            #expect(exported.map { $0["app_user_id"] } == ["u0", "u1", "u2"])

            // Not due again within the interval, whatever changed.
            try await harness.buy("u0", otid: "o0", tid: "t02")
            harness.clock.advance(milliseconds: Self.hour)
            #expect(try await export.runOnce() == .notDue)
            try await harness.buy("u3", otid: "o3", tid: "t31")

            harness.clock.set(milliseconds: ExportHarness.start + 24 * Self.hour + 11 * 60_000)
            let second = try await export.runOnce()
            guard case .committed(let end, let nextKeys, _) = second else {
                Issue.record("expected the second run to commit, got \(second)")
                return
            }
            #expect(nextKeys[.transactions] == "transactions/2027-01-16/part-\(through)-\(end).\(format.rawValue)")
            #expect(try await Self.rows(harness, second, .transactions, format).compactMap { $0["transaction_id"] } == ["t02", "t31"])
            #expect(try await Self.rows(harness, second, .customers, format).compactMap { $0["app_user_id"] } == ["u0", "u3"])
            #expect(try await Self.rows(harness, second, .subscriptions, format).compactMap { $0["original_transaction_id"] } == ["o0", "o3"])
            // The events of both runs are the outbox's, each once.
            let events = try await Self.rows(harness, first, .events, format) + Self.rows(harness, second, .events, format)
            let outbox = try await harness.store.events(after: 0, limit: 1000)
            #expect(events.compactMap { $0["event_id"] } == outbox.map(\.id))
            #expect(events.compactMap { $0["sequence"] } == outbox.map { String($0.sequence) })
            // Loaded back, every event row is the outbox's event, column by column.
            for (row, event) in zip(events, outbox) {
                #expect(row["type"] == event.type && row["app_user_id"] == event.appUserId && row["app_account_token"] == event.appAccountToken)
                #expect(row["environment"] == event.environment && row["bundle_id"] == event.bundleId && row["product_id"] == event.productId)
                #expect(row["original_transaction_id"] == event.originalTransactionId)
                #expect((row["entitlements"] ?? "").split(separator: " ").map(String.init) == event.entitlements)
                #expect(try JSONDecoder().decode([String: String].self, from: Data(try #require(row["details"]).utf8)) == event.details)
                #expect(row["cause"] == event.cause)
                let occurredAt: Int64? = try row["occurred_at"].map(ExportFiles.milliseconds)
                let recordedAt: Int64? = try row["recorded_at"].map(ExportFiles.milliseconds)
                #expect(occurredAt == event.occurredAt)
                #expect(recordedAt == event.recordedAt)
            }
        }
    }

    @Test("a failed upload is redone over the same window: nothing lost, nothing twice", arguments: ExportBackend.all, ExportTarget.all)
    func failedUploadIsRedone(backend: ExportBackend, target: ExportTarget) async throws {
        try await ExportHarness.with(backend, target) { harness in
            for index in 0..<3 { try await harness.buy("u\(index)", otid: "o\(index)", tid: "t\(index)1") }
            harness.clock.advance(milliseconds: 10 * 60_000)
            // The second file (subscriptions) fails after the first (customers) was stored.
            let flaky = FlakySink(harness.sink(), failing: 2)
            await #expect(throws: ExportRunError.self) { try await harness.export(sink: flaky).runOnce() }
            let failed = try #require(try await harness.store.exportStatuses(now: harness.clock.nowMilliseconds()).first)
            #expect(failed.watermark == nil && failed.failures == 1 && failed.lastError?.contains("EXPORT_UNAVAILABLE") == true)
            #expect(!failed.running)

            // A purchase after the failed run's window: it belongs to a later run, not to the redo.
            try await harness.buy("u3", otid: "o3", tid: "t31")
            #expect(try await harness.export(sink: flaky).runOnce() == .notDue)
            harness.clock.advance(milliseconds: 5 * 60_000)
            let redo = try await harness.export(sink: flaky).runOnce()
            guard case .committed(let through, let keys, _) = redo else {
                Issue.record("expected the redo to commit, got \(redo)")
                return
            }
            #expect(through == ExportHarness.start + 5 * 60_000)
            // Every key the failed run wrote is one the redo wrote again: it replaced it, added nothing.
            let attempted = flaky.calls.withLock { $0 }
            #expect(Set(attempted).isSubset(of: Set(keys.values)))
            #expect(try await Self.rows(harness, redo, .transactions, .csv).compactMap { $0["transaction_id"] } == ["t01", "t11", "t21"])
            if target == .file {
                let stored = try FileManager.default.subpathsOfDirectory(atPath: harness.folder.path).filter { $0.hasSuffix(".csv") }
                #expect(Set(stored) == Set(keys.values))
            }

            harness.clock.advance(milliseconds: 24 * Self.hour)
            let next = try await harness.export(sink: flaky).runOnce()
            #expect(try await Self.rows(harness, next, .transactions, .csv).compactMap { $0["transaction_id"] } == ["t31"])
        }
    }

    @Test("two servers on one database export once per interval", arguments: ExportBackend.all)
    func twoServersOncePerInterval(backend: ExportBackend) async throws {
        try await ExportHarness.with(backend, .file) { harness in
            // The second server: on PostgreSQL its own store (connections) on the same database; a
            // SQLite file has one server.
            let other = backend == .postgres ? try await openStore(url: harness.database.url, configuration: harness.database.options) : harness.store
            let a = harness.export(owner: "a")
            let b = harness.export(store: other, owner: "b")
            var commits: [Int64] = []
            var exported: [String] = []
            for step in 0..<50 {
                try await harness.buy("u\(step % 4)", otid: "o\(step % 4)", tid: "t\(step)")
                harness.clock.advance(milliseconds: Self.hour)
                async let first = a.runOnce()
                async let second = b.runOnce()
                for result in [try await first, try await second] {
                    guard case .committed(let through, _, _) = result else { continue }
                    commits.append(through)
                    exported += try await Self.rows(harness, result, .transactions, .csv).compactMap { $0["transaction_id"] }
                }
            }
            if backend == .postgres { await other.close() }
            let start = ExportHarness.start
            #expect(commits == [start + Self.hour - 5 * 60_000, start + 25 * Self.hour - 5 * 60_000, start + 49 * Self.hour - 5 * 60_000])
            // Each transaction up to the last window's end once, in ledger order.
            #expect(exported == (0..<49).map { "t\($0)" })
        }
    }

    @Test("a run that outlives its lease neither commits nor records a failure over the run that took over", arguments: ExportBackend.all)
    func lostLease(backend: ExportBackend) async throws {
        try await ExportHarness.with(backend, .file) { harness in
            try await harness.buy("u0", otid: "o0", tid: "t01")
            harness.clock.advance(milliseconds: 10 * 60_000)
            let taker = harness.export(owner: "b")
            // While the first run stores its first file, its lease runs out and another server redoes the run.
            let hook = HookSink(harness.sink()) {
                harness.clock.advance(milliseconds: ScheduledExport.leaseMilliseconds + 60_000)
                let taken = try await taker.runOnce()
                #expect(taken != .notDue)
            }
            await #expect(throws: ExportRunError.self) { try await harness.export(sink: hook, owner: "a").runOnce() }
            let status = try #require(try await harness.store.exportStatuses(now: harness.clock.nowMilliseconds()).first)
            #expect(status.watermark == ExportHarness.start + 5 * 60_000)
            #expect(status.failures == 0 && status.lastError == nil && !status.running)
        }
    }

    /// Every column of each exported subscription row, loaded back, is what the ledger holds;
    /// `updated_at` is when its owner's answer was computed.
    static func expectLedger(_ harness: ExportHarness, _ rows: [[String: String]], updatedAt: Int64) async throws {
        for row in rows {
            let otid = try #require(row["original_transaction_id"])
            let owned = try #require(try await harness.store.subscription(originalTransactionId: otid))
            let stored = owned.subscription
            #expect(Set(row.keys).union(["subscription_group_id", "expires_at", "grace_until"]) == Set(ExportTables.subscriptions.map(\.name)))
            #expect(row["app_user_id"] == owned.appUserId)
            #expect(row["product_id"] == stored.productId)
            #expect(row["subscription_group_id"] == stored.group)
            #expect(row["environment"] == stored.environment)
            #expect(row["status"] == stored.status)
            #expect(try row["expires_at"].map(ExportFiles.milliseconds) == stored.expiresAt)
            #expect(try row["grace_until"].map(ExportFiles.milliseconds) == stored.graceUntil)
            #expect(row["auto_renew"] == (stored.autoRenew ? "true" : "false"))
            #expect(try row["updated_at"].map(ExportFiles.milliseconds) == updatedAt)
        }
    }

    @Test func theDocumentationListsEveryColumn() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/exports.md"), encoding: .utf8)
        for (table, columns) in ExportTables.documentation {
            let section = try #require(page.components(separatedBy: "### `\(table.rawValue)`").dropFirst().first, "no section for \(table)")
            let listed = section.components(separatedBy: "\n### ")[0].split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("| `") else { return nil }
                return String(line.dropFirst(3).prefix { $0 != "`" })
            }
            #expect(listed == columns.map(\.name), "docs/exports.md, \(table)")
        }
    }
}
