import AppStore
import EntitledServer
import Foundation
import Storage

/// The database URL from `--database`, then `ENTITLED_DATABASE`, then the embedded default (for
/// the test helper below, which has no configuration file). A malformed URL is a usage error (exit status 2).
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

/// Prints a maintenance report; its outcome is the exit status.
func finish(_ report: MaintenanceReport) -> Int32 {
    for line in report.lines { print(line) }
    return report.succeeded ? ExitStatus.ok : ExitStatus.failure
}

/// `entitled migrate`: applies pending schema migrations.
enum MigrateCommand: Command {
    static let name = "migrate"
    static let summary = "apply database schema migrations"
    static let help = """
        Usage: entitled migrate [--config FILE] [--database URL]

        Applies pending schema migrations and prints the schema version. Refuses (exit 1,
        SCHEMA_TOO_NEW) a database migrated by a newer entitled. Needs none of the
        configuration's secrets.

        Options:
          --config FILE    the server's configuration (env ENTITLED_CONFIG), for its database
          --database URL   sqlite:./path.sqlite, sqlite::memory: or postgres://user:pass@host:port/db
                           (default: $ENTITLED_DATABASE, else the configuration's database,
                           else sqlite:./data/entitled.sqlite)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let configuration = try ServeCommand.loadConfiguration(&arguments, resolvingSecrets: false)
        try arguments.finish()
        return finish(try await DatabaseMaintenance.migrate(url: configuration.database))
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
        let configuration = try ServeCommand.loadConfiguration(&arguments, resolvingSecrets: false)
        try arguments.finish()
        return finish(
            try await DatabaseMaintenance.rebuild(
                configuration: configuration, fastPaths: fastPaths, now: SystemClock().nowMilliseconds()))
    }
}

/// `entitled check`: damaged pages, then every projection against a recomputation.
enum CheckCommand: Command {
    static let name = "check"
    static let summary = "look for damaged pages and projections that differ from the ledger"
    static let help = """
        Usage: entitled check [--config FILE] [--database URL] [--full] [--reverify]

        Runs SQLite's PRAGMA quick_check on the database to its end (the server runs it at start
        for 2 s at most) and lists what it finds; --full runs integrity_check, which also checks
        that every index matches its table. PostgreSQL checks its own pages: there the command
        only checks that the database answers. Then recomputes every customer's projection from
        the ledger, as 'entitled rebuild' does but writing nothing, and lists the customers whose
        stored projection differs or cannot be recomputed. With --reverify, then rebuilds every
        stored signed text byte for byte and verifies it again offline: its signature and its
        chain to the configured apps' roots, at its own signed date; lists each that fails (fact
        id, kind, app, verification code). Safe while the server runs.
        Exit status 0 when nothing was found, 1 otherwise. Nothing is written (no migration).
        Needs none of the configuration's secrets.

        Options:
          --config FILE    the server's configuration (env ENTITLED_CONFIG): its catalog is the
                           policy the projections are recomputed with
          --database URL   as for 'entitled migrate' (default: the configuration's database)
          --full           integrity_check instead of quick_check (slower)
          --reverify       verify every stored signature again (needs the configuration's apps)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let full = arguments.flag("--full")
        let reverify = arguments.flag("--reverify")
        let configuration = try ServeCommand.loadConfiguration(&arguments, resolvingSecrets: false)
        try arguments.finish()
        return finish(
            try await DatabaseMaintenance.check(
                configuration: configuration, full: full, fastPaths: fastPaths, reverify: reverify, clock: SystemClock()))
    }
}

/// `entitled backup`: a consistent copy of the SQLite database, taken while the server serves.
enum BackupCommand: Command {
    static let name = "backup"
    static let summary = "copy the SQLite database to a new file while the server runs"
    static let help = """
        Usage: entitled backup --to PATH [--config FILE] [--database URL]

        Writes a consistent copy of the SQLite database (as of one instant, taken with VACUUM INTO
        while the server keeps serving) to PATH, a new file, and fsyncs it. To restore, stop the
        server, put the copy in the database's place (removing any -wal and -shm files beside the
        old one) and start it. On PostgreSQL it refuses (exit 1) and says to use pg_dump or
        pg_basebackup instead. The copy is readable by its owner only (mode 0600). Needs none of
        the configuration's secrets.

        Options:
          --to PATH        the copy; must not exist (it is written to PATH.partial first)
          --config FILE    the server's configuration (env ENTITLED_CONFIG), for its database
          --database URL   as for 'entitled migrate' (default: the configuration's database)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let path = try arguments.option("--to") else { throw UsageError("--to PATH is required") }
        let configuration = try ServeCommand.loadConfiguration(&arguments, resolvingSecrets: false)
        try arguments.finish()
        return finish(try await DatabaseMaintenance.backup(url: configuration.database, to: path))
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
        let output = FileHandle.standardOutput
        try await _StorageCrashBatch.run(url: url, postgresSchema: schema, count: count, concurrency: concurrency, now: now) {
            uuid, status in output.write(Data("ok \(uuid) \(status.rawValue)\n".utf8))
        }
        return ExitStatus.ok
    }
}
