import AppStore
import AppStoreSimulator
import EntitledServer
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
        ("alice", [], 1), ("alice,1000,extra", [], 1), (",1000", [], 1), ("alice,10/00", [], 1), (#"{"appUserId":"a"}"#, [], 1),
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

    @Test func customersWhoBoughtBeforeTheServerAreLinkedAndASecondRunChangesNothing() async throws {
        try await ReconcileScenarioTests.withWorld { world in
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
            let snapshot = await world.simulator.snapshot()
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
}

final class ProgressLog: Sendable {
    private let reports = Mutex<[CustomerImport.Report]>([])
    func note(_ report: CustomerImport.Report) { reports.withLock { $0.append(report) } }
    var count: Int { reports.withLock { $0.count } }
}
