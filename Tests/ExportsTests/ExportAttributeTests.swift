import Foundation
import Storage
import Testing

@testable import EntitledServer
@testable import Exports

/// The `customers` table of scheduled exports carries the customer's attributes (SQLite, and
/// PostgreSQL with `ENTITLED_TEST_POSTGRES`): set or removed, they bring the customer into the
/// next run's window, and every column loads back as the ledger holds it.
@Suite(.serialized) struct ExportAttributeTests {
    static let cases: [(ExportBackend, ExportFormat)] = ExportBackend.all.flatMap { backend in ExportFormat.allCases.map { (backend, $0) } }

    @Test("customers rows carry the attributes, an attribute change alone exports the customer again, and every column loads back", arguments: cases)
    func attributesInCustomers(backend: ExportBackend, format: ExportFormat) async throws {
        try await ExportHarness.with(backend, .file) { harness in
            var changed: [String: Int64] = [:]
            for user in ["u0", "u1", "u2"] {
                try await harness.buy(user, otid: "o-\(user)", tid: "t-\(user)")
                changed[user] = harness.clock.nowMilliseconds()
                harness.clock.advance(milliseconds: 1000)
            }
            // A value with a comma, quotes and a line break: CSV quotes it, JSON escapes it twice.
            try await Self.set(harness, "u0", ["$email": "ana@example.com", "note": "a, \"b\"\nc"])
            changed["u0"] = harness.clock.nowMilliseconds()
            harness.clock.advance(milliseconds: 10 * 60_000)
            let export = harness.export(format: format)
            let first = try await export.runOnce()
            let firstRows = try await ScheduledExportTests.rows(harness, first, .customers, format)
            #expect(firstRows.map { $0["app_user_id"] } == ["u0", "u1", "u2"])
            try await Self.expectLedger(harness, firstRows, changed: changed)
            #expect(firstRows.first?["attributes"] == #"{"$email":"ana@example.com","note":"a, \"b\"\nc"}"#)
            #expect(firstRows.dropFirst().allSatisfy { $0["attributes"] == "{}" })

            // Attribute writes only, no purchase: u0 loses every attribute (a removal leaves no
            // row to date it), u1 gains one; u2 is untouched and not exported again.
            harness.clock.advance(milliseconds: 3_600_000)
            try await Self.set(harness, "u0", ["$email": nil, "note": nil])
            changed["u0"] = harness.clock.nowMilliseconds()
            harness.clock.advance(milliseconds: 1000)
            try await Self.set(harness, "u1", ["plan_hint": "team"])
            changed["u1"] = harness.clock.nowMilliseconds()
            harness.clock.set(milliseconds: ExportHarness.start + 24 * ScheduledExportTests.hour + 11 * 60_000)
            let second = try await export.runOnce()
            let secondRows = try await ScheduledExportTests.rows(harness, second, .customers, format)
            #expect(secondRows.map { $0["app_user_id"] } == ["u0", "u1"])
            try await Self.expectLedger(harness, secondRows, changed: changed)
            #expect(secondRows.map { $0["attributes"] } == ["{}", #"{"plan_hint":"team"}"#])
            #expect(try await ScheduledExportTests.rows(harness, second, .transactions, format).isEmpty)
        }
    }

    static func set(_ harness: ExportHarness, _ user: String, _ changes: [String: String?]) async throws {
        let written = try await harness.store.setAttributes(appUserId: user, changes: changes, maxCount: 50, now: harness.clock.nowMilliseconds())
        guard case .stored = written else {
            Issue.record("attributes of \(user) not stored: \(written)")
            return
        }
    }

    /// Every column of each exported customer row, loaded back, is what the ledger holds;
    /// `updated_at` is the customer's last change (its answer computed or its attributes written).
    static func expectLedger(_ harness: ExportHarness, _ rows: [[String: String]], changed: [String: Int64]) async throws {
        for row in rows {
            let user = try #require(row["app_user_id"])
            let record = try #require(try await harness.store.customer(appUserId: user))
            #expect(Set(row.keys) == Set(ExportTables.customers.map(\.name)), "\(user): every column, none null")
            #expect(row["app_account_token"] == record.appAccountToken)
            #expect(try row["created_at"].map(ExportFiles.milliseconds) == record.createdAt)
            #expect(try row["updated_at"].map(ExportFiles.milliseconds) == changed[user], "\(user)")
            #expect(row["active_entitlements"] == "pro")
            #expect(row["projection_failed"] == "false")
            let attributes = try JSONDecoder().decode([String: String].self, from: Data(try #require(row["attributes"]).utf8))
            let stored = try #require(try await harness.store.attributes(appUserId: user))
            #expect(attributes == Dictionary(uniqueKeysWithValues: stored.map { ($0.name, $0.value) }), "\(user)")
        }
    }
}
