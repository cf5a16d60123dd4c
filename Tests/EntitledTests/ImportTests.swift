import AppStore
import AppStoreSimulator
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Storage
import Synchronization
import Testing

/// `entitled import` against the fake App Store Server API: customers who bought before the server
/// existed are linked to their purchases; a second run changes nothing.
@Suite(.serialized) struct ImportTests {
    @Test(arguments: [
        ("alice,1000", [CustomerImport.Line(number: 1, appUserId: "alice", transactionId: "1000")], 0),
        (#"{"appUserId":"bob","transactionId":"2000"}"#, [CustomerImport.Line(number: 1, appUserId: "bob", transactionId: "2000")], 0),
        ("# comment\n\n carol , 3000 \n", [CustomerImport.Line(number: 3, appUserId: "carol", transactionId: "3000")], 0),
        // Three fields are a Google Play line: appUserId,productId,purchaseToken.
        ("alice,premium,tok.1", [CustomerImport.Line(number: 1, appUserId: "alice", transactionId: "tok.1", productId: "premium")], 0),
        ("alice", [], 1), ("alice,1000,extra,more", [], 1), (",1000", [], 1), ("alice,10/00", [], 1), (#"{"appUserId":"a"}"#, [], 1),
    ] as [(String, [CustomerImport.Line], Int)])
    func parsesCSVAndJSONLines(text: String, lines: [CustomerImport.Line], failures: Int) {
        let parsed = CustomerImport.parse(Array(text.utf8))
        #expect(parsed.lines == lines)
        #expect(parsed.failures.count == failures)
    }

    /// An id that is not UTF-8 is refused with its line, never imported as U+FFFD.
    @Test func aLineThatIsNotUTF8IsRefused() {
        let input = Array("alice,1000\n".utf8) + [0x62, 0xFF, 0x62] + Array(",2000\n".utf8) + [0xC0, 0xAF] + Array(",3000".utf8)
        let parsed = CustomerImport.parse(input)
        #expect(parsed.lines == [CustomerImport.Line(number: 1, appUserId: "alice", transactionId: "1000")])
        #expect(parsed.failures == ["line 2: not UTF-8", "line 3: not UTF-8"])
    }

    /// Each customer subscribes and renews while the server hears nothing; the store's state after.
    static func boughtBeforeTheServer(_ world: ReconcileWorld) async throws -> StateSnapshot {
        await world.transport.set(down: true)
        for id in ReconcileWorld.customers {
            try await world.act("customer") { $0.customer = id }
            try await world.act("purchase") {
                $0.customer = id
                $0.product = "pro.monthly"
            }
        }
        _ = try await world.simulator.advance(by: ISODuration("P1M8D")!)  // a renewal each, never delivered
        await world.transport.set(down: false)
        return await world.simulator.snapshot()
    }

    @Test func customersWhoBoughtBeforeTheServerAreLinkedAndASecondRunChangesNothing() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            let snapshot = try await Self.boughtBeforeTheServer(world)
            let firsts = snapshot.subscriptions.map(\.originalTransactionId)
            #expect(firsts.count == 3)
            let text = """
                alice,\(firsts[0])
                {"appUserId": "bob", "transactionId": "\(firsts[1])"}
                carol,\(firsts[2])
                dave,999999
                """
            let (lines, unreadable) = CustomerImport.parse(Array(text.utf8))
            #expect(unreadable.isEmpty)
            let progress = ProgressLog()
            let first = await world.importer.run(lines) { progress.note($0) }
            #expect(first.lines == 4 && first.imported == 3 && first.failed == 1 && first.transactions == 6, "\(first)")
            #expect(first.failures.first?.hasPrefix("line 4: APPLE_NOT_FOUND") == true, "\(first.failures)")
            #expect(progress.count == 4)
            for id in ReconcileWorld.customers {
                let answer = try await world.answer(id)
                let pro = (answer["entitlements"] as? [String: Any])?["pro"] as? [String: Any]
                #expect(pro?["active"] as? Bool == true, "\(id): \(answer)")
            }
            let facts = try await world.store.facts(appUserId: "alice").count
            let second = await world.importer.run(lines)
            #expect(second == first)
            #expect(try await world.store.facts(appUserId: "alice").count == facts)
        }
    }

    /// Leaving RevenueCat: its transaction export (semicolon delimited, renewals as rows of their
    /// own, other stores mixed in) imports the App Store customers, who then have their answers
    /// under the ids RevenueCat knew them by; a second run changes nothing.
    @Test func aRevenueCatExportsCustomersAnswerUnderTheirRevenueCatIds() async throws {
        try await ReconcileScenarioTests.withWorld { world in
            let snapshot = try await Self.boughtBeforeTheServer(world)
            let owners = Dictionary(uniqueKeysWithValues: snapshot.subscriptions.map { ($0.originalTransactionId, $0.customerId) })
            // RevenueCat's (original, last seen) ids: alice was anonymous until she logged in, bob
            // was named from the start, carol never logged in.
            let revenueCat = [
                "alice": ("$RCAnonymousID:a11ce", "alice"), "bob": ("bob", "bob"),
                "carol": ("$RCAnonymousID:ca401", "$RCAnonymousID:ca401"),
            ]
            var rows = ["rc_original_app_user_id;rc_last_seen_app_user_id_alias;product_identifier;store;store_transaction_id;original_store_transaction_id;price_in_usd"]
            for transaction in snapshot.transactions {
                let first = try #require(transaction.originalTransactionId)
                let owner = try #require(owners[first])
                let (original, lastSeen) = try #require(revenueCat[owner])
                let id = try #require(transaction.transactionId)
                rows.append("\(original);\(lastSeen);pro.monthly;app_store;\(id);\(first);9.99")
            }
            rows.append("bob;bob;pro_monthly;play_store;GPA.3344-1;GPA.3344-1;9.99")
            rows.append("bob;bob;pro_monthly;stripe;sub_1;sub_1;9.99")
            let export = try RevenueCatExport.parse(Array(rows.joined(separator: "\n").utf8))
            #expect(export.rowErrors.isEmpty)
            #expect(export.summary.appStoreRows == 6 && export.summary.transactions == 3 && export.summary.customers == 3)
            #expect(export.summary.skipped == ["play_store": 1, "stripe": 1])

            let first = await world.importer.run(export.lines)
            #expect(first.imported == 3 && first.transactions == 6 && first.aliases == 1 && first.failed == 0, "\(first)")
            for id in ["alice", "$RCAnonymousID:a11ce", "bob", "$RCAnonymousID:ca401"] {
                let answer = try await world.answer(id)
                let pro = (answer["entitlements"] as? [String: Any])?["pro"] as? [String: Any]
                #expect(pro?["active"] as? Bool == true, "\(id): \(answer)")
            }
            let anonymous = try await world.answer("$RCAnonymousID:a11ce")
            let ids = Set([anonymous["appUserId"] as? String].compactMap { $0} + (anonymous["aliases"] as? [String] ?? []))
            #expect(ids == ["alice", "$RCAnonymousID:a11ce"], "one customer under both ids: \(anonymous)")
            #expect(try await world.store.customer(appUserId: "carol") == nil, "imported under RevenueCat's id, not the store's")

            let facts = try await world.store.facts(appUserId: "alice").count
            let second = await world.importer.run(export.lines)
            #expect(second.imported == 3 && second.transactions == 6 && second.aliases == 0 && second.failed == 0, "\(second)")
            #expect(try await world.store.facts(appUserId: "alice").count == facts)
        }
    }
}

final class ProgressLog: Sendable {
    private let reports = Mutex<[CustomerImport.Report]>([])
    func note(_ report: CustomerImport.Report) { reports.withLock { $0.append(report) } }
    var count: Int { reports.withLock { $0.count } }
}
