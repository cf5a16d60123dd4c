import EntitledConfig
import Entitlements
import EntitledServer
import Foundation
import Storage
import Testing

/// `entitled check` and `entitled backup` as an operator runs them.
@Suite struct BackupCheckCLITests {
    /// The projector `entitled check` recomputes with when given no configuration.
    static var serverProjector: EngineProjector {
        EngineProjector(
            policy: FactMapper.policy(for: Configuration()),
            cache: FastPaths(environment: ProcessInfo.processInfo.environment).projectionCache())
    }

    @Test func checkListsTheCustomerWhoseProjectionDiffersAndBackupCopiesIt() async throws {
        let folder = try DatabaseFileServeTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("entitled.sqlite").path
        var store = try await openStore(url: "sqlite:\(path)")
        _ = try await store.ensureCustomer(appUserId: "clean", appAccountToken: nil, projector: Self.serverProjector, now: 1_000)
        await store.close()
        let sound = try await DatabaseFileServeTests.run(["check", "--database", "sqlite:\(path)"])
        #expect(sound.status == 0, "\(sound.stdout) \(sound.stderr)")
        #expect(sound.stdout.contains("projections: 1 customer(s) recomputed, 0 differ"), "\(sound.stdout)")

        // A projection the engine would not compute: an entitlement row no fact grants.
        store = try await openStore(url: "sqlite:\(path)")
        _ = try await store.ensureCustomer(
            appUserId: "drifted", appAccountToken: nil, projector: GrantingProjector(base: Self.serverProjector), now: 1_000)
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

    /// The server's projector plus an active entitlement nothing grants.
    struct GrantingProjector: Projector {
        var base: EngineProjector
        func project(customer: CustomerRecord, facts: [StoredFact], now: Int64) throws -> CustomerProjection {
            var projection = try base.project(customer: customer, facts: facts, now: now)
            projection.entitlements.append(
                EntitlementRow(
                    entitlement: "pro", status: "active", active: true, productId: "p", originalTransactionId: "o",
                    expiresAt: nil, graceUntil: nil, willRenew: true, environment: "Production"))
            return projection
        }
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

/// Which stored answers `entitled check` compares byte for byte with a recomputed one.
@Suite struct ComparableDocumentTests {
    static let current = RenderedCustomer(
        body: CustomerBody(
            customer: CustomerRecord(id: 1, appUserId: "a", appAccountToken: "t", createdAt: 0),
            state: evaluate(facts: [], policy: Policy(), now: 0, environment: .production), now: 0), scope: "Production+Sandbox")!.document

    @Test(arguments: [
        (document: current, cache: true, comparable: true),
        (document: Array("entitled-answer/0 Production - 10\n{}".utf8), cache: true, comparable: false),
        (document: [], cache: true, comparable: false),
        (document: Array(#"{"tampered":true}"#.utf8), cache: true, comparable: true),
        (document: [], cache: false, comparable: true),
        (document: current, cache: false, comparable: false),
    ])
    func comparable(document: [UInt8], cache: Bool, comparable: Bool) {
        let projector = EngineProjector(policy: Policy(), cache: ProjectionCache(enabled: cache))
        #expect(projector.isComparable(stateDocument: document) == comparable)
    }
}
