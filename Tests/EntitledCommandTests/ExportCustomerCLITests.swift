import AppStore
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Storage
import Testing

/// `entitled export-customer` as an operator runs it.
@Suite struct ExportCustomerCLITests {
    @Test func printsTheExportOfEveryIdAndFailsForAnUnknownOne() async throws {
        let folder = try CLI.writableFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = "sqlite:" + folder.appendingPathComponent("entitled.sqlite").path
        let store = try await openStore(url: url)
        let ledger = BackupCheckCLITests.serverProjector(store)
        _ = try await ledger.addAlias("cli-alias", to: "cli-main", actor: "ops", now: 1_000)
        await store.close()

        let exported = try await DatabaseFileServeTests.run(["export-customer", "cli-alias", "--database", url])
        #expect(exported.status == 0, "\(exported.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(exported.stdout.utf8)) as? [String: Any])
        #expect(json["appUserId"] as? String == "cli-alias")
        let customers = (json["tables"] as? [String: [[String: Any]]])?["customers"] ?? []
        #expect(Set(customers.compactMap { $0["app_user_id"] as? String }) == ["cli-main", "cli-alias"])

        let unknown = try await DatabaseFileServeTests.run(["export-customer", "nobody", "--database", url])
        #expect(unknown.status == 1 && unknown.stderr.contains("no customer nobody"))
        let usage = try await DatabaseFileServeTests.run(["export-customer", "--database", url])
        #expect(usage.status == 2)
    }
}
