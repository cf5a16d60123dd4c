import EntitledConfig
import Foundation
import Storage

/// Opens the configured database (creating the folder of a SQLite file), migrates it and quickly
/// checks it: a file that cannot be written or has damaged pages stops the start.
/// - Throws: ``StartupError/runtime(_:)``.
/// `observer` is told of group commits and committed projection changes (``ServerMetrics``).
public func openDatabase(
    _ url: String, replicas: [String] = [], readYourWrites: ReadYourWrites = .allServers, storage: StorageSettings = StorageSettings(),
    observer: (any LedgerObserver)? = nil
) async throws(StartupError) -> any LedgerStore {
    let parsed: DatabaseURL
    do {
        parsed = try DatabaseURL(parsing: url)
    } catch {
        throw .configuration("configuration: database: \(error)")
    }
    if case .sqliteFile(let path) = parsed {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .runtime("cannot create the database folder '\(folder)'")
        }
        switch SQLiteFileState(path: path) {
        case .missing: ServerLog.event("database file created", ["path": path])
        case .empty: ServerLog.event("database file is empty (0 bytes): treated as a new database", ["path": path])
        case .existing: break
        }
    }
    let store: any LedgerStore
    do {
        var options = storeConfiguration(storage)
        options.ledgerObserver = observer
        options.postgresReplicas = replicas
        options.readYourWrites = readYourWrites
        store = try await openStore(parsed, configuration: options)
    } catch {
        throw .runtime("database: \(error)")
    }
    // Bounded, so a large file does not delay the start; `entitled check` runs it to the end.
    let report: IntegrityReport
    do {
        report = try await store.checkIntegrity(full: false, timeLimit: .seconds(startupCheckSeconds))
    } catch {
        await store.close()
        throw .runtime("database: \(error)")
    }
    guard report.problems.isEmpty else {
        await store.close()
        throw .runtime(
            "database: \(parsed.redacted) has damaged pages (\(report.check)): "
                + report.problems.prefix(3).joined(separator: "; ") + "; run 'entitled check'")
    }
    if !report.complete {
        ServerLog.event(
            "database quick check stopped at its time limit; run 'entitled check'", ["seconds": "\(startupCheckSeconds)"])
    }
    return store
}

/// The time limit of the start's quick check of the database.
let startupCheckSeconds = 2

/// The store options the configuration's `storage` section sets; Storage reports through the
/// server's log (`"type":"server"` lines).
public func storeConfiguration(_ storage: StorageSettings) -> StoreConfiguration {
    var configuration = StoreConfiguration()
    configuration.log = { event, fields in ServerLog.event(event, fields) }
    configuration.postgresStatementTimeoutMilliseconds = storage.statementTimeoutMilliseconds
    configuration.postgresConnectTimeoutSeconds = storage.connectTimeoutSeconds
    configuration.postgresConnections = storage.connections
    return configuration
}
