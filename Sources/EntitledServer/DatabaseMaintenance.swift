import AppStore
import EntitledConfig
import Foundation
import Storage

/// What a maintenance command did: the lines it prints and whether it succeeded (exit status 0).
public struct MaintenanceReport: Sendable, Equatable {
    /// Plain lines for the operator, in order.
    public var lines: [String]
    /// False when something was found or failed (exit status 1).
    public var succeeded: Bool

    public init(lines: [String], succeeded: Bool) {
        self.lines = lines
        self.succeeded = succeeded
    }
}

/// The storage commands' work — `entitled migrate`, `rebuild`, `check` and `backup` — so that the
/// command-line tool only parses options and prints these reports.
public enum DatabaseMaintenance {
    /// Applies pending migrations.
    public static func migrate(url: String) async throws -> MaintenanceReport {
        var options = StoreConfiguration()
        options.migrateOnOpen = false
        let report = try await withStore(url: url, options: options) { try await $0.migrate() }
        let applied = report.applied.isEmpty ? "none" : report.applied.map(String.init).joined(separator: ", ")
        return MaintenanceReport(
            lines: ["schema version \(report.currentVersion) (applied: \(applied)) — \(try DatabaseURL(parsing: url).redacted)"],
            succeeded: true)
    }

    /// Recomputes every projection at `now`, replacing those that differ.
    public static func rebuild(configuration: Configuration, fastPaths: FastPaths, now: Int64) async throws -> MaintenanceReport {
        let report = try await withStore(url: configuration.database, options: StoreConfiguration()) {
            try await $0.rebuild(projector: projector(for: configuration, store: $0, fastPaths: fastPaths), now: now)
        }
        var lines = ["customers: \(report.customers), differences: \(report.differences), failed: \(report.failedCustomers.count)"]
        lines += customerLines(report, changed: "changed")
        return MaintenanceReport(lines: lines, succeeded: report.failedCustomers.isEmpty)
    }

    /// The customers a rebuild or check names, one per line: an unlinked subscription's
    /// placeholder key is storage's, so it is printed as the subscription it stands for.
    static func customerLines(_ report: RebuildReport, changed: String) -> [String] {
        func name(_ key: String) -> String {
            UnlinkedSubscription.originalTransactionId(key).map { "unlinked subscription \($0)" } ?? key
        }
        return report.changedCustomers.map { "  \(changed): \(name($0))" }
            + report.failedCustomers.map { "  failed: \(name($0.appUserId)): \($0.reason)" }
    }

    /// Looks for damaged pages (SQLite), then recomputes every projection without writing and lists
    /// the customers whose stored projection differs or cannot be recomputed; with `reverify`,
    /// then verifies every stored signature again (``SignatureReverification``, offline at each
    /// one's signed date, `clock` only for what has none) and lists those that fail. Nothing is
    /// written (no migration either).
    public static func check(
        configuration: Configuration, full: Bool, fastPaths: FastPaths, reverify: Bool = false, clock: any EpochClock = SystemClock()
    ) async throws -> MaintenanceReport {
        let url = configuration.database
        let target = try DatabaseURL(parsing: url).redacted
        if case .sqliteFile(let path) = try DatabaseURL(parsing: url), let missing = missingFile(path) {
            return MaintenanceReport(lines: ["\(target): \(missing)"], succeeded: false)
        }
        var options = StoreConfiguration()
        options.migrateOnOpen = false
        let store: any LedgerStore
        do {
            store = try await openStore(url: url, configuration: options)
        } catch let error as StorageError where error.code == .corrupt {
            // So damaged that even the schema cannot be read.
            return MaintenanceReport(lines: ["\(target): the file is damaged: \(error.detail ?? error.message)"], succeeded: false)
        }
        var lines: [String] = []
        var succeeded = true
        do {
            let integrity = try await store.checkIntegrity(full: full, timeLimit: nil)
            if integrity.problems.isEmpty {
                lines.append("\(target): \(integrity.check == "none" ? "reachable (PostgreSQL checks its own pages)" : "\(integrity.check) ok")")
            } else {
                lines.append("\(target): \(integrity.check) found \(integrity.problems.count) problem(s):")
                lines += integrity.problems.map { "  \($0)" }
                succeeded = false
            }
            // Damaged pages make every read suspect: the projections are compared on a sound file only.
            if succeeded {
                let report = try await store.compareProjections(projector: projector(for: configuration, store: store, fastPaths: fastPaths))
                lines.append(
                    "projections: \(report.customers) customer(s) recomputed, \(report.differences) differ, \(report.failedCustomers.count) cannot be projected")
                lines += customerLines(report, changed: "differs")
                if report.differences > 0 || !report.failedCustomers.isEmpty {
                    lines.append("  'entitled rebuild' recomputes and replaces them")
                    succeeded = false
                }
                if reverify {
                    let signatures = try await SignatureReverification.run(store: store, configuration: configuration, clock: clock)
                    lines.append(
                        "signatures: \(signatures.verified) verified again, \(signatures.failures.count) failed, \(signatures.unsigned) without a signed form")
                    lines += signatures.failures.map { "  failed: \($0)" }
                    if !signatures.failures.isEmpty { succeeded = false }
                }
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        return MaintenanceReport(lines: lines, succeeded: succeeded)
    }

    /// Copies the database to a new file at `path` while the server may keep serving; on
    /// PostgreSQL, says which tools to use instead (and fails).
    public static func backup(url: String, to path: String) async throws -> MaintenanceReport {
        let parsed = try DatabaseURL(parsing: url)
        if case .postgres = parsed {
            // Said before connecting: no PostgreSQL needs to be reachable to learn it.
            return MaintenanceReport(lines: ["\(parsed.redacted): \(StorageError.backupUnsupported.message)"], succeeded: false)
        }
        if case .sqliteFile(let source) = parsed, let missing = missingFile(source) {
            return MaintenanceReport(lines: ["\(parsed.redacted): \(missing)"], succeeded: false)
        }
        var options = StoreConfiguration()
        options.migrateOnOpen = false
        do {
            let report = try await withStore(url: url, options: options) { try await $0.backup(to: path) }
            return MaintenanceReport(
                lines: ["\(parsed.redacted): copied to \(report.path) (\(report.bytes) bytes, synced)"], succeeded: true)
        } catch let error as StorageError where error.code == .unsupported || error.code == .invalidArgument {
            return MaintenanceReport(lines: ["\(parsed.redacted): \(error.message)"], succeeded: false)
        }
    }

    /// Nil when a database file is at `path`; else what an operator needs: the absolute path
    /// looked at and the system's reason (a folder it may not enter is not "no file").
    static func missingFile(_ path: String) -> String? {
        guard SQLiteFileState(path: path) == .missing else { return nil }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        var status = stat()
        let reason = stat(absolute, &status) == 0 ? "unreadable" : String(cString: strerror(errno))
        return "no database file at \(absolute) (\(reason)); give --config FILE or --database URL"
    }

    /// The projector the server uses for `configuration`: its ledger's over `store`.
    static func projector(for configuration: Configuration, store: any LedgerStore, fastPaths: FastPaths) -> Projector {
        FactLedger(store: store, configuration: configuration, cache: fastPaths.projectionCache()).projector
    }

    /// Opens the store, runs `body`, closes it (also when `body` throws).
    static func withStore<T: Sendable>(
        url: String, options: StoreConfiguration, _ body: (any LedgerStore) async throws -> T
    ) async throws -> T {
        let store = try await openStore(url: url, configuration: options)
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }
}
