import Foundation
import Testing

@testable import Storage

/// A PostgreSQL that does not answer (frozen with SIGSTOP, a statement that runs too long, a host
/// that accepts the TCP connection and says nothing) costs a request the configured timeout, not
/// forever: the store fails with `STORAGE_UNAVAILABLE`.
@Suite("PostgreSQL timeouts")
struct PostgresTimeoutTests {
    static func elapsed(since start: ContinuousClock.Instant) -> Duration { ContinuousClock.now - start }

    /// Resumes a stopped process when dropped or after `limit`, whichever comes first, so that a
    /// test of a hang ends (and fails) instead of hanging itself.
    final class Frozen: Sendable {
        let pid: pid_t
        let watchdog: Task<Void, Never>

        init(_ pid: pid_t, limit: Duration = .seconds(30)) {
            self.pid = pid
            kill(pid, SIGSTOP)
            watchdog = Task {
                try? await Task.sleep(for: limit)
                kill(pid, SIGCONT)
            }
        }

        func thaw() {
            watchdog.cancel()
            kill(pid, SIGCONT)
        }
    }

    static func openTimed(_ database: TestDatabase, statementTimeout: Int) async throws -> any LedgerStore {
        var configuration = database.configuration()
        configuration.postgresConnections = 1
        configuration.postgresStatementTimeoutMilliseconds = statementTimeout
        configuration.postgresConnectTimeoutSeconds = 2
        return try await openStore(url: database.url, configuration: configuration)
    }

    @Test("a statement longer than the statement timeout is cancelled and reported unavailable", arguments: Backend.postgresOnly)
    func statementTimeout(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await Self.openTimed(database, statementTimeout: 300)
        let start = ContinuousClock.now
        await #expect(throws: StorageError(.unavailable)) { try await store.raw("SELECT pg_sleep(30)") }
        #expect(Self.elapsed(since: start) < .seconds(8))
        try await store.ping()  // the session is still fine
        await store.close()
        await database.destroy()
    }

    @Test("a frozen backend fails the call after the timeout; the next call reconnects", arguments: Backend.postgresOnly)
    func frozenBackend(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await Self.openTimed(database, statementTimeout: 300)
        let pid = pid_t(try await store.count("SELECT pg_backend_pid()"))
        let frozen = Frozen(pid)
        let start = ContinuousClock.now
        await #expect(throws: StorageError(.unavailable)) { try await store.ping() }
        let waited = Self.elapsed(since: start)
        frozen.thaw()
        #expect(waited < .seconds(8), "a frozen server held the call for \(waited)")
        try await store.ping()
        #expect(pid_t(try await store.count("SELECT pg_backend_pid()")) != pid)
        await store.close()
        await database.destroy()
    }

    @Test("a server that accepts the connection and never answers fails the connect after connect_timeout")
    func connectTimeout() async throws {
        // A listening socket nobody accepts on: the kernel completes the handshake, nothing answers.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        #expect(bound == 0)
        #expect(listen(listener, 16) == 0)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = UInt16(bigEndian: address.sin_port)
        // Ends the test (failing it) if the connect hangs.
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(30))
            shutdown(listener, Int32(SHUT_RDWR))
        }
        defer {
            watchdog.cancel()
            close(listener)
        }
        var configuration = StoreConfiguration()
        configuration.postgresConnections = 1
        configuration.postgresConnectTimeoutSeconds = 2
        let start = ContinuousClock.now
        await #expect(throws: StorageError(.unavailable)) {
            _ = try await openStore(url: "postgresql://nobody@127.0.0.1:\(port)/db?sslmode=disable", configuration: configuration)
        }
        let waited = Self.elapsed(since: start)
        #expect(waited < .seconds(10), "the connect took \(waited)")
    }
}
