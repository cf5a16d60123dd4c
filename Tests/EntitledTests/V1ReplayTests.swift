import AppStore
import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Testing

@testable import EntitledServer
@testable import Storage

/// A V1 notification has no id and its facts no signed text: before schema version 6 they were
/// keyed by their JSON, so a binary whose encoder wrote other bytes applied a replay again.
@Suite struct V1ReplayTests {
    @Test("a V1 delivery stored by an older binary, under another JSON encoding, is not applied twice")
    func replayAfterUpgrade() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-v1-replay-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = "sqlite:\(folder.path)/ledger.sqlite"
        let configuration = APIHarness.configuration()
        var body = FactMapperTests.v1Body
        body.bid = APIHarness.bundleId
        body.password = "v1-shared-secret-value"
        let facts = try configuration.apps[0].facts(fromV1: body)
        #expect(facts.count == 4)

        // The ledger as a binary before version 6 left it after this delivery (`Fixtures/README.md`):
        // each fact's JSON, in that binary's encoding (pretty-printed), standing in for its signed text.
        try FileManager.default.copyItem(
            at: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/v1_replay_v5.sqlite"),
            to: folder.appendingPathComponent("ledger.sqlite"))
        var older = StoreConfiguration()
        older.migrateOnOpen = false
        var store = try await openStore(url: url, configuration: older)
        let sqlite = try #require(store as? SQLiteStore)
        #expect(try await sqlite._scalar("SELECT COUNT(*) FROM facts") == 4)
        #expect(try await sqlite._scalar("SELECT MAX(version) FROM schema_migrations") == 5)
        await store.close()

        // Upgraded, the same delivery comes again (its body re-encoded, so not the same message).
        store = try await openStore(url: url)
        let (server, _) = try await startServer(configuration: configuration, store: store, clock: VirtualClock(APIHarness.start))
        let reply = try await Loopback.send(
            port: server.port, "POST", "/v1/apple/notifications/v1", headers: ["Content-Type": "application/json"],
            body: Array(AppStoreJSON.encode(body)))
        await server.shutdown()
        let upgraded = try #require(store as? SQLiteStore)
        let count = try await upgraded._scalar("SELECT COUNT(*) FROM facts")
        await store.close()
        #expect(reply.status == 200)
        #expect(count == 4)
    }
}
