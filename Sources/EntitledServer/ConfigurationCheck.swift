import AppStore
import AppStoreServerAPI
import EntitledConfig
import Foundation
import Storage

/// `entitled config check`: what `entitled serve` checks before it binds a port — the file (its
/// loading already checked keys, secrets, certificate and key files), Apple's roots, the Server
/// API keys and the database — without binding one, creating the database or migrating it.
public enum ConfigurationCheck {
    /// Checks `configuration` (loaded with its secrets). Lines name each setting with its source;
    /// `succeeded` is false when `serve` would not start.
    /// - Throws: ``StartupError/configuration(_:)`` for a problem of the configuration itself
    ///   (exit status 2, as `serve` would).
    public static func run(configuration: Configuration, clock: any EpochClock = SystemClock()) async throws(StartupError)
        -> MaintenanceReport
    {
        var lines = configuration.sources.fileValuesReplacedByEnvironment.map { "warning: \($0)" }
        do {
            _ = try AppStoreVerifier(apps: configuration.apps, clock: clock)
        } catch {
            throw .configuration("configuration: \(error.description)")
        }
        _ = try buildServerAPIClients(configuration: configuration, clock: clock, outbound: nil, sleeper: TaskSleeper())
        lines.append(
            "configuration: \(configuration.apps.count) app(s), \(configuration.apiKeys.count) API key(s), "
                + "\(configuration.webhooks.count) webhook endpoint(s), \(configuration.integrations.count) integration(s), customer tokens \(configuration.customerTokens == nil ? "off" : "on")")
        if !configuration.exports.isEmpty {
            let each = configuration.exports.map {
                "\($0.destination) \($0.format.rawValue) every \($0.everyHours) h: \($0.tables.map(\.rawValue).joined(separator: ", "))"
            }
            lines.append("exports: \(configuration.exports.count) (\(each.joined(separator: "; ")))")
        }
        lines.append(
            "listen: \(configuration.listen) (\(configuration.sources.listen))"
                + (configuration.tls.map { ", https with \($0.certificateFile)" } ?? ", plain http"))
        let target = redactedDatabase(configuration.database)
        let database = await checkDatabase(configuration)
        lines.append("database: \(target) (\(configuration.sources.database)): \(database.line)")
        return MaintenanceReport(lines: lines, succeeded: database.ok)
    }

    /// Whether the server could open the database: a SQLite file that is missing must be creatable;
    /// one that exists (or PostgreSQL) is opened without migrating, which refuses a schema newer
    /// than this binary's and reads its first pages.
    static func checkDatabase(_ configuration: Configuration) async -> (ok: Bool, line: String) {
        let parsed: DatabaseURL
        do {
            parsed = try DatabaseURL(parsing: configuration.database)
        } catch {
            return (false, "\(error)")
        }
        if case .sqliteFile(let path) = parsed, SQLiteFileState(path: path) == .missing {
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            // The nearest folder that exists must let serve create the rest and the file.
            var folder = URL(fileURLWithPath: absolute).deletingLastPathComponent()
            while !FileManager.default.fileExists(atPath: folder.path) && folder.path != "/" {
                folder = folder.deletingLastPathComponent()
            }
            guard access(folder.path, W_OK | X_OK) == 0 else {
                return (false, "no file at \(absolute), and \(folder.path) is not writable: serve could not create it")
            }
            return (true, "no file yet at \(absolute): serve creates it")
        }
        var options = storeConfiguration(configuration.storage)
        options.migrateOnOpen = false
        options.postgresReplicas = configuration.databaseReplicas
        let store: any LedgerStore
        do {
            store = try await openStore(parsed, configuration: options)
        } catch {
            return (false, "\(error)")
        }
        let result: (ok: Bool, line: String)?
        do {
            let report = try await store.checkIntegrity(full: false, timeLimit: .seconds(startupCheckSeconds))
            result = report.problems.isEmpty
                ? nil : (false, "damaged pages (\(report.check)): \(report.problems.prefix(3).joined(separator: "; ")); run 'entitled check'")
        } catch {
            result = (false, "\(error)")
        }
        await store.close()
        if let result { return result }
        return (true, "reachable, schema accepted (pending migrations run at start)")
    }
}
