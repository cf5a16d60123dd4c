import EntitledConfig
import Foundation
import Testing

/// One precedence rule (flag > environment > file > default) with each value's source, one rule
/// for relative paths (the file's folder), and the configuration of commands that need no secrets.
@Suite struct SettingSourcesTests {
    /// A configuration file in a new folder; returns the file's URL.
    static func file(_ json: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-sources-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("entitled.json")
        try Data(json.utf8).write(to: file)
        return file
    }

    @Test func eachSettingNamesItsSourceAndTheEnvironmentReplacingTheFileIsAWarning() throws {
        let file = try Self.file(#"{"listen": "127.0.0.1:9001", "database": "sqlite:/var/lib/e/file.sqlite"}"#)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }

        let fromFile = try ConfigurationLoader(environment: [:]).load(path: file.path)
        #expect(fromFile.sources.listen == .file)
        #expect(fromFile.sources.database == .file)
        #expect(fromFile.sources.fileValuesReplacedByEnvironment.isEmpty)

        let defaults = try ConfigurationLoader(environment: [:]).load(path: nil)
        #expect(defaults.sources.listen == .default)
        #expect(defaults.sources.database == .default)

        let environment = ["ENTITLED_DATABASE": "sqlite:/tmp/env.sqlite", "ENTITLED_LISTEN": "127.0.0.1:9002"]
        let replaced = try ConfigurationLoader(environment: environment).load(path: file.path)
        #expect(replaced.database == "sqlite:/tmp/env.sqlite")
        #expect(replaced.sources.database == .environment("ENTITLED_DATABASE"))
        #expect(replaced.sources.listen.description == "environment ENTITLED_LISTEN")
        #expect(replaced.sources.fileValuesReplacedByEnvironment.count == 2)
        #expect(replaced.sources.fileValuesReplacedByEnvironment.contains { $0.contains("database") && $0.contains("ENTITLED_DATABASE") })

        // Without a file value there is nothing to warn about.
        let noFile = try ConfigurationLoader(environment: environment).load(path: nil)
        #expect(noFile.sources.fileValuesReplacedByEnvironment.isEmpty)

        // A flag wins over both.
        let flagged = try ConfigurationLoader(environment: environment).load(path: file.path, database: "sqlite:/tmp/flag.sqlite")
        #expect(flagged.database == "sqlite:/tmp/flag.sqlite")
        #expect(flagged.sources.database == .flag("--database"))
    }

    @Test func aRelativeDatabasePathInTheFileIsRelativeToTheFilesFolder() throws {
        let file = try Self.file(#"{"database": "sqlite:data/entitled.sqlite"}"#)
        let folder = file.deletingLastPathComponent().standardizedFileURL.path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let configuration = try ConfigurationLoader(environment: [:]).load(path: file.path)
        #expect(configuration.database == "sqlite:\(folder)/data/entitled.sqlite")
        // Other forms are left alone.
        let memory = try ConfigurationLoader(environment: [:]).parse(Data(#"{"database": "sqlite::memory:"}"#.utf8), baseDirectory: folder)
        #expect(memory.database == "sqlite::memory:")
        let absolute = try ConfigurationLoader(environment: [:]).parse(Data(#"{"database": "sqlite:/a/b.sqlite"}"#.utf8), baseDirectory: folder)
        #expect(absolute.database == "sqlite:/a/b.sqlite")
    }

    static let withSecrets = """
        { "database": "sqlite:entitled.sqlite",
          "apiKeys": [{"name": "backend", "secret": "env:MISSING_API_KEY", "scopes": ["read"]}],
          "customerTokens": {"secret": "env:MISSING_TOKEN_SECRET"},
          "webhooks": [{"url": "https://example.com/hook", "secret": "env:MISSING_WEBHOOK_SECRET"}],
          "apps": [{"bundleId": "com.example.app", "environments": ["Sandbox"], "sharedSecret": "env:MISSING_V1",
                    "products": [{"productId": "p", "type": "nonConsumable", "entitlements": ["pro"]}]}] }
        """

    @Test func commandsThatNeedNoSecretsLoadAFileWhoseVariablesAreUnset() throws {
        let file = try Self.file(Self.withSecrets)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        // serve needs every one, and names each.
        #expect {
            try ConfigurationLoader(environment: [:]).load(path: file.path)
        } throws: { error in
            let text = "\(error)"
            return ["MISSING_API_KEY", "MISSING_TOKEN_SECRET", "MISSING_WEBHOOK_SECRET", "MISSING_V1"].allSatisfy(text.contains)
        }
        let databaseOnly = try ConfigurationLoader(environment: [:], resolvesSecrets: false).load(path: file.path)
        #expect(databaseOnly.database.hasSuffix("/entitled.sqlite"))
        #expect(databaseOnly.apps.first?.products.map(\.productId) == ["p"])
        #expect(databaseOnly.apiKeys.isEmpty)
        #expect(databaseOnly.customerTokens == nil)
        #expect(databaseOnly.webhooks.isEmpty)
        // Other problems are still reported.
        let broken = try Self.file(#"{"database": "mysql://x", "apiKeys": [{"name": "k", "secret": "env:NOPE", "scopes": ["rid"]}]}"#)
        defer { try? FileManager.default.removeItem(at: broken.deletingLastPathComponent()) }
        #expect {
            try ConfigurationLoader(environment: [:], resolvesSecrets: false).load(path: broken.path)
        } throws: { error in
            let text = "\(error)"
            return text.contains("database") && text.contains("unknown scope 'rid'") && !text.contains("NOPE")
        }
    }
}
