import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
@testable import Storage
import Testing

/// Where the end-to-end API tests keep their ledger: a SQLite file, or a PostgreSQL schema of its
/// own (from `ENTITLED_TEST_POSTGRES`, through ``PostgresSchemaPool``; in CI a missing PostgreSQL
/// fails instead of skipping).
enum StoredBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }

    static var all: [StoredBackend] {
        let environment = ProcessInfo.processInfo.environment
        let postgres = !(environment["ENTITLED_TEST_POSTGRES"] ?? "").isEmpty || !(environment["CI"] ?? "").isEmpty
        return postgres ? [.sqlite, .postgres] : [.sqlite]
    }

    /// `observer` (metrics) is told of group commits and projection changes.
    func open(observer: (any LedgerObserver)? = nil) async throws -> any LedgerStore {
        var configuration = StoreConfiguration()
        configuration.ledgerObserver = observer
        switch self {
        case .sqlite:
            configuration.sqliteInitialImage = try await SQLiteStore.migratedImage.value
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-api-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return try await openStore(url: "sqlite:\(folder.path)/ledger.sqlite", configuration: configuration)
        case .postgres:
            let url = try #require(
                ProcessInfo.processInfo.environment["ENTITLED_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 },
                "ENTITLED_TEST_POSTGRES must be set where CI is")
            // A schema from the pool when it has one, handed back to it when the store closes.
            configuration.postgresSchema =
                PostgresSchemaPool.shared.take(url: url)
                ?? "api_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
            configuration.recyclesSchema = true
            configuration.postgresConnections = 4
            return try await openStore(url: url, configuration: configuration)
        }
    }
}

/// The real server on `store` — verifier, engine projector, ledger — on loopback, logs off; `port` 0
/// picks a free one (a fixed port lets a test restart the server where its clients expect it).
func startServer(
    configuration: Configuration, store: any LedgerStore, clock: any EpochClock, port: Int = 0, fastPaths: FastPaths = testFastPaths
) async throws -> (HTTPServer, FactLedger) {
    let assembled = try await buildApplication(
        configuration: configuration, clock: clock, store: store, fastPaths: fastPaths)
    return (try startQuietServer(router: assembled.application.router, port: port), assembled.ledger)
}

/// An HTTP server for `router` on loopback, without logs, started.
func startQuietServer(router: Router, port: Int = 0) throws -> HTTPServer {
    var settings = HTTPServer.Configuration()
    settings.port = port
    settings.accessLog = nil
    settings.errorLog = nil
    let server = HTTPServer(configuration: settings, router: router)
    try server.start()
    return server
}

/// Runs `sql` on a store of either database, for the suites that damage or rewind a ledger.
func executeSQL(_ store: any LedgerStore, _ sql: String) async throws {
    switch store {
    case let store as SQLiteStore: try await store._execute(sql)
    case let store as PostgresStore: try await store._execute(sql)
    default: Issue.record("unknown store \(type(of: store))")
    }
}

/// The certificate authority the suites on real verification sign with, made once per process.
enum TestSigning {
    static let ca = try! TestCertificateAuthority()
}
