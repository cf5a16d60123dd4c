@testable import EntitledTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The operator's commands as deploy.md runs them: from cron without the service's secrets, with
/// the database named in the file, and `config check` before a start.
@Suite(.serialized) struct OperatorCommandTests {
    /// The service's secrets, for what needs them.
    static let secrets = [
        "MISSING_API_KEY": "0123456789abcdef-key", "MISSING_TOKEN_SECRET": String(repeating: "t", count: 40),
        "MISSING_WEBHOOK_SECRET": "whsec_" + Data(repeating: 7, count: 32).base64EncodedString(), "MISSING_V1": "v1-secret",
    ]

    @Test func backupCheckMigrateAndExportNeedNoSecretsAndFindTheDatabaseTheFileNames() async throws {
        let file = try SettingSourcesTests.file(SettingSourcesTests.withSecrets)
        let folder = file.deletingLastPathComponent().standardizedFileURL.path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // `sqlite:entitled.sqlite` in the file: beside the file, whatever the working directory.
        let migrated = try await CLI.run(["migrate", "--config", file.path])
        #expect(migrated.status == 0, "\(migrated.stdout) \(migrated.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder + "/entitled.sqlite"))

        let copy = folder + "/backup.sqlite"
        let backup = try await CLI.run(["backup", "--config", file.path, "--to", copy])
        #expect(backup.status == 0, "\(backup.stdout) \(backup.stderr)")
        // Owner only, whatever the umask (the test runs under the usual 022).
        let attributes = try FileManager.default.attributesOfItem(atPath: copy)
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600)

        let check = try await CLI.run(["check", "--config", file.path])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let export = try await CLI.run(["export-customer", "nobody", "--config", file.path])
        #expect(export.status == 1, "\(export.stdout) \(export.stderr)")
        #expect(export.stderr.contains("no customer nobody"))
        let rebuild = try await CLI.run(["rebuild", "--config", file.path])
        #expect(rebuild.status == 0, "\(rebuild.stdout) \(rebuild.stderr)")
    }

    @Test func backupOfAMissingDatabaseNamesTheAbsolutePathAndWhy() async throws {
        let name = "entitled-missing-\(UUID())/entitled.sqlite"
        let result = try await CLI.run(["backup", "--database", "sqlite:\(name)", "--to", "/tmp/\(UUID()).sqlite"])
        #expect(result.status == 1)
        let absolute = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(name).standardizedFileURL.path
        #expect(result.stdout.contains("no database file at \(absolute) (No such file or directory)"), "\(result.stdout)")
    }

    @Test func configCheckValidatesWithoutServingOrCreatingTheDatabase() async throws {
        let file = try SettingSourcesTests.file(SettingSourcesTests.withSecrets)
        let folder = file.deletingLastPathComponent().standardizedFileURL.path
        defer { try? FileManager.default.removeItem(atPath: folder) }

        let good = try await CLI.run(["config", "check", "--config", file.path], environment: Self.secrets)
        #expect(good.status == 0, "\(good.stdout) \(good.stderr)")
        #expect(good.stdout.contains("listen: 127.0.0.1:8080 (default)"), "\(good.stdout)")
        #expect(good.stdout.contains("database: sqlite:\(folder)/entitled.sqlite (file): no file yet"), "\(good.stdout)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/entitled.sqlite"))

        // The environment replacing the file's value is a warning, and the source is named.
        let replaced = try await CLI.run(
            ["config", "check", "--config", file.path], environment: Self.secrets.merging(["ENTITLED_DATABASE": "sqlite::memory:"]) { $1 })
        #expect(replaced.status == 0, "\(replaced.stdout) \(replaced.stderr)")
        #expect(replaced.stdout.contains("warning: the file's database is replaced by environment ENTITLED_DATABASE"), "\(replaced.stdout)")
        #expect(replaced.stdout.contains("database: sqlite::memory: (environment ENTITLED_DATABASE)"), "\(replaced.stdout)")

        // A missing secret is a configuration problem (2), named.
        let missing = try await CLI.run(["config", "check", "--config", file.path])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("MISSING_API_KEY"), "\(missing.stderr)")

        // A file that is no database stops serve: 1.
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: folder + "/entitled.sqlite"))
        let damaged = try await CLI.run(["config", "check", "--config", file.path], environment: Self.secrets)
        #expect(damaged.status == 1, "\(damaged.stdout) \(damaged.stderr)")
        #expect(damaged.stdout.contains("database: sqlite:\(folder)/entitled.sqlite (file): "), "\(damaged.stdout)")
    }

    @Test func theStartLineNamesEachSettingsSourceAndWarnsWhenTheEnvironmentReplacesTheFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-start-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("entitled.json")
        try Data(#"{"listen": "127.0.0.1:0", "database": "sqlite:file.sqlite"}"#.utf8).write(to: file)
        let server = try await ServeProcess.start(
            folder: folder, environment: ["ENTITLED_DATABASE": "sqlite:\(folder.path)/env.sqlite"],
            command: { _ in ["serve", "--config", file.path, "--log-format", "json"] })
        defer {
            server.terminate()
            try? FileManager.default.removeItem(at: folder)
        }
        let output = server.outputSoFar()
        #expect(output.contains(#""addressFrom":"file""#), "\(output)")
        #expect(output.contains(#""databaseFrom":"environment ENTITLED_DATABASE""#), "\(output)")
        #expect(output.contains(#""event":"setting replaced""#) && output.contains(#""level":"warn""#), "\(output)")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/env.sqlite"))
    }
}
