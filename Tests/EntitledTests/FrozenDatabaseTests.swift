import AppStore
import AppStoreTesting
@testable import EntitledTestSupport
import Foundation
import Testing

@testable import Storage

/// A frozen PostgreSQL (its backend stopped with SIGSTOP) costs a request the statement timeout:
/// a POST answers 503 `STORAGE_UNAVAILABLE` with `Retry-After`, `/readyz` 503, both quickly.
@Suite struct FrozenDatabaseTests {
    static var postgresURL: String? {
        let value = ProcessInfo.processInfo.environment["ENTITLED_TEST_POSTGRES"] ?? ""
        return value.isEmpty ? nil : value
    }

    /// Stops the backend serving the store's only connection; a watchdog resumes it after 30 s
    /// so that a hang fails the test instead of hanging it.
    static func freeze(_ store: any LedgerStore) async throws -> @Sendable () -> Void {
        let pid = pid_t(try await (try #require(store as? PostgresStore))._scalar("SELECT pg_backend_pid()"))
        kill(pid, SIGSTOP)
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(30))
            kill(pid, SIGCONT)
        }
        return {
            watchdog.cancel()
            kill(pid, SIGCONT)
        }
    }

    @Test(.enabled(if: postgresURL != nil || !(ProcessInfo.processInfo.environment["CI"] ?? "").isEmpty))
    func aFrozenDatabaseAnswers503Quickly() async throws {
        var options = StoreConfiguration()
        options.postgresSchema = "frozen_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        options.postgresConnections = 1
        options.postgresStatementTimeoutMilliseconds = 300
        options.postgresConnectTimeoutSeconds = 2
        let store = try await openStore(url: try #require(Self.postgresURL), configuration: options)
        let configuration = try SignedAPITests.configuration(trusting: TestSigning.ca)
        let (server, _) = try await startServer(configuration: configuration, store: store, clock: VirtualClock(APIHarness.start))
        do {
            try await check(port: server.port, store: store)
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
        try? await (store as? PostgresStore)?._execute("DROP SCHEMA IF EXISTS \"\(options.postgresSchema!)\" CASCADE")
        await store.close()
    }

    func check(port: Int, store: any LedgerStore) async throws {
        #expect(try await Loopback.send(port: port, "GET", "/readyz").status == 200)

        var thaw = try await Self.freeze(store)
        var start = ContinuousClock.now
        let ready = try await Loopback.send(port: port, "GET", "/readyz")
        var waited = ContinuousClock.now - start
        thaw()
        #expect(ready.status == 503)
        #expect(waited < .seconds(8), "/readyz took \(waited)")

        thaw = try await Self.freeze(store)
        let transaction = Apple.transaction(tid: "t1", purchase: APIHarness.start - 86_400_000, expires: APIHarness.start + 86_400_000)
        start = ContinuousClock.now
        let posted = try await Loopback.send(
            port: port, "POST", "/v1/customers/u1/transactions", headers: ["Authorization": APIHarness.writer],
            body: Array(#"{"signedTransaction":"\#(try TestSigning.ca.signer.sign(transaction))"}"#.utf8))
        waited = ContinuousClock.now - start
        thaw()
        #expect(posted.status == 503)
        #expect(posted.code == "STORAGE_UNAVAILABLE")
        #expect(posted.headers["retry-after"] != nil || posted.headers["Retry-After"] != nil)
        #expect(waited < .seconds(8), "the POST took \(waited)")
        // Thawed, or on a new connection: the server answers again.
        #expect(try await Loopback.send(port: port, "GET", "/readyz").status == 200)
    }
}
