import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import EntitledServer
import Foundation
import Storage
import Testing

/// `entitled check` and `entitled backup` as an operator runs them.
@Suite struct BackupCheckCLITests {
    /// The projector `entitled check` recomputes with when given no configuration.
    static func serverProjector(_ store: any LedgerStore) -> FactLedger {
        FactLedger(
            store: store, configuration: Configuration(),
            cache: FastPaths(environment: ProcessInfo.processInfo.environment).projectionCache())
    }

    @Test func checkListsTheCustomerWhoseProjectionDiffersAndBackupCopiesIt() async throws {
        let folder = try CLI.writableFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("entitled.sqlite").path
        var store = try await openStore(url: "sqlite:\(path)")
        _ = try await store.ensureCustomer(appUserId: "clean", appAccountToken: nil, projector: Self.serverProjector(store).projector, now: 1_000)
        await store.close()
        let sound = try await DatabaseFileServeTests.run(["check", "--database", "sqlite:\(path)"])
        #expect(sound.status == 0, "\(sound.stdout) \(sound.stderr)")
        #expect(sound.stdout.contains("projections: 1 customer(s) recomputed, 0 differ"), "\(sound.stdout)")

        // A projection the server would not compute: a product its configuration does not know
        // granting `pro`, in the rows (and, with the projection cache on, the stored answer).
        store = try await openStore(url: "sqlite:\(path)")
        let drifted = Self.drifted(Self.serverProjector(store))
        _ = try await store.ensureCustomer(appUserId: "drifted", appAccountToken: nil, projector: drifted, now: 1_000)
        let purchase = TransactionFact(
            transactionId: "t1", originalTransactionId: "o1", productId: "p", purchaseDate: 1_000, expiresDate: 1_000 + 86_400_000,
            productType: .autoRenewable, signedDate: 1_000, environment: .production)
        _ = try await store.ingest(
            ReceivedMessage(notificationUUID: "n1", source: .simulator, body: Array("n1".utf8), receivedAt: 1_000),
            facts: [(.transaction(purchase), "jws.t1")], claim: Claim(appUserId: "drifted", behaviour: .transfer),
            projector: drifted, now: 1_000)
        await store.close()
        let found = try await DatabaseFileServeTests.run(["check", "--database", "sqlite:\(path)"])
        #expect(found.status == 1)
        #expect(found.stdout.contains("  differs: drifted\n"), "\(found.stdout)")
        #expect(!found.stdout.contains("differs: clean"), "\(found.stdout)")

        let copy = folder.appendingPathComponent("copy.sqlite").path
        let backup = try await DatabaseFileServeTests.run(["backup", "--database", "sqlite:\(path)", "--to", copy])
        #expect(backup.status == 0, "\(backup.stdout) \(backup.stderr)")
        #expect(backup.stdout.contains("copied to \(copy)"), "\(backup.stdout)")
        let again = try await DatabaseFileServeTests.run(["backup", "--database", "sqlite:\(path)", "--to", copy])
        #expect(again.status == 1)
        #expect(again.stdout.contains("already exists"), "\(again.stdout)")
        let copied = try await DatabaseFileServeTests.run(["check", "--database", "sqlite:\(copy)"])
        #expect(copied.stdout.hasSuffix(found.stdout.split(separator: "\n", maxSplits: 1)[1] + ""), "\(copied.stdout)")
    }

    /// The server's projector with a policy that grants `pro` for product `p`.
    static func drifted(_ base: FactLedger) -> Projector {
        var projector = base.projector
        projector.policy.products["p"] = ProductPolicy(type: .autoRenewable, entitlements: ["pro"])
        return projector
    }

    @Test func backupOfPostgreSQLSaysToUsePgDumpWithoutConnecting() async throws {
        let outcome = try await DatabaseFileServeTests.run([
            "backup", "--database", "postgres://nobody:secret@127.0.0.1:1/none", "--to", "/tmp/never-written.sqlite",
        ])
        #expect(outcome.status == 1)
        #expect(outcome.stdout.contains("pg_dump"), "\(outcome.stdout)")
        #expect(!outcome.stdout.contains("secret"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/never-written.sqlite"))
    }
}
