import AppStore
import EntitledServer
import Foundation
import Storage

/// The database URL from `--database`, then `ENTITLED_DATABASE`, then the embedded default.
/// A malformed URL is a usage error (exit status 2).
func databaseURL(_ arguments: inout Arguments) throws -> String {
    var url = "sqlite:./data/entitled.sqlite"
    if let option = try arguments.option("--database") {
        url = option
    } else if let environment = ProcessInfo.processInfo.environment["ENTITLED_DATABASE"], !environment.isEmpty {
        url = environment
    }
    do {
        _ = try DatabaseURL(parsing: url)
    } catch let error as StorageError {
        throw UsageError("--database: \(error.message)")
    }
    return url
}

/// Milliseconds since the epoch, now.

/// `entitled migrate`: applies pending schema migrations.
enum MigrateCommand: Command {
    static let name = "migrate"
    static let summary = "apply database schema migrations"
    static let help = """
        Usage: entitled migrate [--database URL]

        Applies pending schema migrations and prints the schema version. Refuses (exit 1,
        SCHEMA_TOO_NEW) a database migrated by a newer entitled.

        Options:
          --database URL   sqlite:./path.sqlite, sqlite::memory: or postgres://user:pass@host:port/db
                           (default: $ENTITLED_DATABASE, else sqlite:./data/entitled.sqlite)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let url = try databaseURL(&arguments)
        try arguments.finish()
        var configuration = StoreConfiguration()
        configuration.migrateOnOpen = false
        let store = try await openStore(url: url, configuration: configuration)
        do {
            let report = try await store.migrate()
            await store.close()
            let applied = report.applied.isEmpty ? "none" : report.applied.map(String.init).joined(separator: ", ")
            print("schema version \(report.currentVersion) (applied: \(applied)) — \(try DatabaseURL(parsing: url).redacted)")
            return ExitStatus.ok
        } catch {
            await store.close()
            throw error
        }
    }
}

/// `entitled rebuild`: recomputes every projection from the ledger.
enum RebuildCommand: Command {
    static let name = "rebuild"
    static let summary = "recompute every projection from the ledger and report differences"
    static let help = """
        Usage: entitled rebuild [--config FILE] [--database URL]

        Recomputes every customer's projection from the facts in the ledger with the entitlement
        engine and the configuration's products, replaces those that differ and lists them. A
        customer that cannot be projected (a stored fact that no longer decodes, the projector
        failing) is marked failed (the API answers it 500 PROJECTION_FAILED), listed with the
        reason, and the others are still rebuilt; the exit status is then 1. Otherwise 0,
        with or without differences.

        Options:
          --config FILE    the server's configuration (env ENTITLED_CONFIG): its catalog is the policy
          --database URL   as for 'entitled migrate' (default: the configuration's database)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try ServeCommand.loadConfiguration(&arguments)
        try arguments.finish()
        let store = try await openStore(url: configuration.database)
        do {
            let report = try await store.rebuild(
                projector: FactLedger(store: store, policy: configuration.policy, cache: fastPaths.projectionCache()),
                now: SystemClock().nowMilliseconds())
            await store.close()
            print("customers: \(report.customers), differences: \(report.differences), failed: \(report.failedCustomers.count)")
            for name in report.changedCustomers { print("  changed: \(name)") }
            for failure in report.failedCustomers { print("  failed: \(failure.appUserId): \(failure.reason)") }
            return report.failedCustomers.isEmpty ? ExitStatus.ok : ExitStatus.failure
        } catch {
            await store.close()
            throw error
        }
    }
}

/// `entitled check`: looks for damaged pages in the database file.
enum CheckCommand: Command {
    static let name = "check"
    static let summary = "look for damaged pages in the database"
    static let help = """
        Usage: entitled check [--database URL] [--full]

        Runs SQLite's PRAGMA quick_check on the database to its end (the server runs it at start
        for 2 s at most) and lists what it finds; --full runs integrity_check, which also checks
        that every index matches its table. Exit status 0 when nothing was found, 1 otherwise.
        Nothing is written (no migration). PostgreSQL checks its own pages: the command only
        checks that the database answers.

        Options:
          --database URL   as for 'entitled migrate'
          --full           integrity_check instead of quick_check (slower)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let url = try databaseURL(&arguments)
        let full = arguments.flag("--full")
        try arguments.finish()
        if case .sqliteFile(let path) = try DatabaseURL(parsing: url), SQLiteFileState(path: path) == .missing {
            throw RuntimeError("no database file at \(path)")
        }
        var configuration = StoreConfiguration()
        configuration.migrateOnOpen = false
        let target = try DatabaseURL(parsing: url).redacted
        let store: any LedgerStore
        do {
            store = try await openStore(url: url, configuration: configuration)
        } catch let error as StorageError where error.code == .corrupt {
            // So damaged that even the schema cannot be read.
            print("\(target): the file is damaged: \(error.detail ?? error.message)")
            return ExitStatus.failure
        }
        let report: IntegrityReport
        do {
            report = try await store.checkIntegrity(full: full, timeLimit: nil)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        guard report.problems.isEmpty else {
            print("\(target): \(report.check) found \(report.problems.count) problem(s):")
            for problem in report.problems { print("  \(problem)") }
            return ExitStatus.failure
        }
        print("\(target): \(report.check == "none" ? "reachable (PostgreSQL checks its own pages)" : "\(report.check) ok")")
        return ExitStatus.ok
    }
}

/// `entitled _storage-crash-child`: not for users. Ingests in a loop, printing `ok <uuid>` after
/// each acknowledged ingest, until killed; the storage crash tests kill it with SIGKILL mid-batch
/// and check that every acknowledged ingest survived and nothing is half-applied. Uses the basic
/// projector on purpose (the tests rebuild with the same one), at a fixed `--now`.
enum StorageCrashChildCommand: Command {
    static let name = "_storage-crash-child"
    static let summary = "(test helper) ingest in a loop until killed"
    static let help = """
        Usage: entitled _storage-crash-child --database URL [--postgres-schema NAME] [--count N]
                                             [--concurrency C] [--now MS]
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let url = try databaseURL(&arguments)
        let schema = try arguments.option("--postgres-schema")
        let count = try arguments.option("--count", as: "a count", { Int($0) }) ?? 1_000_000
        let concurrency = try arguments.option("--concurrency", as: "a count", { Int($0) }) ?? 16
        let now = try arguments.option("--now", as: "milliseconds", { Int64($0) }) ?? 1_800_000_000_000
        try arguments.finish()
        var configuration = StoreConfiguration()
        configuration.postgresSchema = schema
        let store = try await openStore(url: url, configuration: configuration)
        let projector = BasicProjector()
        let output = FileHandle.standardOutput
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var index = worker
                    while index < count {
                        let batch = _StorageCrashBatch.batch(index, now: now)
                        let result = try await store.ingest(
                            batch.message, facts: batch.facts, claim: batch.claim, projector: projector, now: now)
                        output.write(Data("ok \(batch.message.notificationUUID ?? "") \(result.status.rawValue)\n".utf8))
                        index += concurrency
                    }
                }
            }
            try await group.waitForAll()
        }
        await store.close()
        return ExitStatus.ok
    }
}
