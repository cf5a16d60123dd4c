import EntitledConfig
import EntitledServer
import Exports
import Foundation
import Testing

/// The `exports` section: parsed with path-precise errors, credentials from the environment, and
/// `config check` listing each export.
@Suite struct ExportConfigurationTests {
    static let environment = ["EXPORT_KEY_ID": "AKIAEXAMPLE", "EXPORT_SECRET": "secret/with+chars", "EXPORT_TOKEN": "session"]

    static func parse(_ exports: String, environment: [String: String] = environment, resolvesSecrets: Bool = true) throws -> Configuration {
        try ConfigurationLoader(environment: environment, resolvesSecrets: resolvesSecrets).parse(Data(#"{"exports": \#(exports)}"#.utf8))
    }

    static func paths(_ exports: String) -> [String: String] {
        do {
            _ = try ConfigurationLoader(environment: environment).parse(Data(#"{"exports": \#(exports)}"#.utf8))
            return [:]
        } catch {
            return Dictionary(error.all.map { ($0.path, $0.message) }, uniquingKeysWith: { first, _ in first })
        }
    }

    @Test func anS3AndAFileExportParse() throws {
        let configuration = try Self.parse("""
            [{"destination": "s3://acme-analytics/entitled", "format": "jsonl", "everyHours": 6, "tables": ["events", "customers"],
              "endpoint": "https://acct.r2.cloudflarestorage.com:443/", "region": "auto",
              "accessKeyId": "env:EXPORT_KEY_ID", "secretAccessKey": "env:EXPORT_SECRET", "sessionToken": "env:EXPORT_TOKEN"},
             {"destination": "file:///var/lib/entitled/exports"}]
            """)
        let s3 = try #require(configuration.exports.first)
        #expect(s3.destination == .s3(bucket: "acme-analytics", prefix: "entitled/"))
        #expect(s3.format == .jsonl && s3.everyHours == 6 && s3.tables == [.events, .customers])
        #expect(s3.credentials == AWSCredentials(accessKeyId: "AKIAEXAMPLE", secretAccessKey: "secret/with+chars", sessionToken: "session"))
        #expect(s3.s3Location == S3Location(endpoint: URL(string: "https://acct.r2.cloudflarestorage.com:443"), region: "auto", bucket: "acme-analytics"))
        let file = configuration.exports[1]
        #expect(file.destination == .file(directory: "/var/lib/entitled/exports"))
        #expect(file.format == .csv && file.everyHours == 24 && file.tables == ExportTable.allCases && file.credentials == nil)
    }

    @Test func everyProblemIsReportedWithItsPath() {
        let problems = Self.paths("""
            [{"destination": "s3://Bad_Bucket"},
             {"destination": "s3://ok-bucket", "format": "xml", "everyHours": 0, "tables": ["customers", "refunds", "customers"],
              "endpoint": "https://minio.example.com/path", "region": "EU West", "accessKeyId": "env:MISSING", "secretAccessKey": "x", "extra": 1},
             {"destination": "file:///srv/exports", "region": "us-east-1", "accessKeyId": "k"},
             {"destination": "file:///srv/exports/"},
             {"tables": []}]
            """)
        #expect(Set(problems.keys) == [
            "exports[0].destination", "exports[1].format", "exports[1].everyHours", "exports[1].tables[1]", "exports[1].tables[2]",
            "exports[1].endpoint", "exports[1].region", "exports[1].accessKeyId", "exports[1].extra", "exports[2].region",
            "exports[2].accessKeyId", "exports[3].destination", "exports[4].destination",
        ])
        #expect(problems["exports[1].accessKeyId"]?.contains("MISSING") == true)
        #expect(problems["exports[3].destination"]?.contains("duplicate") == true)
        #expect(problems["exports[2].region"] == "only for s3:// destinations")
    }

    @Test func s3NeedsCredentials() {
        #expect(Set(Self.paths(#"[{"destination": "s3://ok-bucket"}]"#).keys) == ["exports[0].accessKeyId"])
    }

    /// Commands that read no secrets leave an s3:// export out rather than fail.
    @Test func withoutSecretsAnS3ExportIsLeftOut() throws {
        let configuration = try Self.parse(
            #"[{"destination": "s3://ok-bucket", "accessKeyId": "env:A", "secretAccessKey": "env:B"}, {"destination": "file:///srv/x"}]"#,
            environment: [:], resolvesSecrets: false)
        #expect(configuration.exports.map(\.destination) == [.file(directory: "/srv/x")])
    }

    @Test func configCheckListsTheExports() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-export-check-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = try Self.parse(#"[{"destination": "file:///srv/exports"}]"#)
        configuration.database = "sqlite:" + folder.appendingPathComponent("db.sqlite").path
        let report = try await ConfigurationCheck.run(configuration: configuration)
        #expect(report.lines.contains("exports: 1 (file:///srv/exports csv every 24 h: customers, subscriptions, transactions, events)"))
        let none = try await ConfigurationCheck.run(configuration: { var c = configuration; c.exports = []; return c }())
        #expect(!none.lines.contains { $0.hasPrefix("exports:") })
    }
}
