import Foundation
import Testing

@testable import Exports

/// The CSV and JSONL writers and the file destination.
@Suite struct WriterTests {
    struct Row: Sendable {
        var id: String
        var count: Int64?
        var flag: Bool
        var at: Int64
    }

    static let columns: [ExportColumn<Row>] = [
        ExportColumn("id", "the id") { .string($0.id) },
        ExportColumn("count", "how many") { row in row.count.map { .integer($0) } ?? .null },
        ExportColumn("flag", "yes or no") { .bool($0.flag) },
        ExportColumn("at", "when") { .timestamp($0.at) },
    ]

    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-exports-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func write(_ rows: [Row], format: ExportFormat, flushBytes: Int = 64 << 10) throws -> String {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("t.\(format.fileExtension)")
        let writer = try ExportFileWriter(url: url, format: format, columns: columns, flushBytes: flushBytes)
        for row in rows { try writer.write(row) }
        try writer.finish()
        return try String(contentsOf: url, encoding: .utf8)
    }

    @Test func csvQuotesPerRFC4180WithAHeaderRow() throws {
        let rows = [
            Row(id: "plain", count: 3, flag: true, at: 1_767_323_045_678),
            Row(id: "a,b \"quoted\"\r\nline", count: nil, flag: false, at: -1),
        ]
        let text = try Self.write(rows, format: .csv)
        #expect(
            text == "id,count,flag,at\r\n" + "plain,3,true,2026-01-02T03:04:05.678Z\r\n"
                + "\"a,b \"\"quoted\"\"\r\nline\",,false,1969-12-31T23:59:59.999Z\r\n")
    }

    @Test func jsonlKeepsColumnOrderAndParsesBack() throws {
        let rows = [Row(id: "tab\there \"q\" \\ \u{1} ü", count: nil, flag: true, at: 0)]
        let text = try Self.write(rows, format: .jsonl)
        #expect(text.hasPrefix(#"{"id":"tab\there \"q\" \\ \u0001 ü","count":null,"flag":true,"at":"1970-01-01T00:00:00.000Z"}"#))
        #expect(text.hasSuffix("}\n") && text.split(separator: "\n").count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["id"] as? String == "tab\there \"q\" \\ \u{1} ü")
        #expect(object["count"] is NSNull)
    }

    /// The writer holds at most about one buffer: rows reach the file while it is still being written.
    @Test func writingStreamsToTheFile() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("big.jsonl")
        let writer = try ExportFileWriter(url: url, format: .jsonl, columns: Self.columns, flushBytes: 4096)
        for index in 0..<20_000 { try writer.write(Row(id: "customer-\(index)", count: Int64(index), flag: index % 2 == 0, at: 0)) }
        let onDisk = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        try writer.finish()
        let total = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        #expect(total > 1_000_000)
        #expect(total - onDisk < 4096 + 200, "at most one buffer and a row were held in memory")
        #expect(writer.rows == 20_000)
    }

    @Test func aFileDestinationRenamesAFinishedFileIntoPlace() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("source.csv")
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: source)
        let destination = FileDestination(directory: folder.appendingPathComponent("out").path)
        try await destination.store(file: source, key: "2026/01/02/customers.csv", contentType: ExportFormat.csv.contentType)
        let stored = folder.appendingPathComponent("out/2026/01/02")
        #expect(try Data(contentsOf: stored.appendingPathComponent("customers.csv")) == Data(bytes))
        #expect(try FileManager.default.contentsOfDirectory(atPath: stored.path) == ["customers.csv"], "no temporary file is left")
        await #expect(throws: ExportError.self) {
            try await destination.store(file: source, key: "../escape.csv", contentType: "text/csv")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("escape.csv").path))
    }

    @Test(arguments: [
        ("s3://my-bucket", ExportDestination.s3(bucket: "my-bucket", prefix: "")),
        ("s3://my-bucket/", .s3(bucket: "my-bucket", prefix: "")),
        ("s3://my.bucket/exports/entitled", .s3(bucket: "my.bucket", prefix: "exports/entitled/")),
        ("file:///var/lib/entitled/exports/", .file(directory: "/var/lib/entitled/exports")),
    ])
    func destinationsParse(raw: String, expected: ExportDestination) throws {
        #expect(try ExportDestination(parsing: raw) == expected)
    }

    @Test(arguments: ["s3://", "s3://UPPER", "s3://ab", "s3://b..x/p", "s3://bucket/a//b", "s3://bucket/../x", "file://relative", "file:///a/../b", "http://x", ""])
    func badDestinationsAreRefused(raw: String) {
        #expect(throws: ExportError.self) { try ExportDestination(parsing: raw) }
    }
}

/// Which host and path an object is addressed by, per store.
@Suite struct S3AddressingTests {
    @Test func awsIsVirtualHostStyleAndOtherStoresPathStyle() {
        let aws = S3Location(endpoint: nil, region: "eu-west-1", bucket: "acme").address(key: "exports/a b.csv")
        #expect(aws.scheme == "https" && aws.host == "acme.s3.eu-west-1.amazonaws.com" && aws.encodedPath == "/exports/a%20b.csv")
        // A dotted bucket would not match the wildcard certificate as a host name.
        let dotted = S3Location(endpoint: nil, region: "us-east-1", bucket: "acme.data").address(key: "k")
        #expect(dotted.host == "s3.us-east-1.amazonaws.com" && dotted.encodedPath == "/acme.data/k")
        let minio = S3Location(endpoint: URL(string: "http://127.0.0.1:9000"), region: "us-east-1", bucket: "acme").address(key: "k")
        #expect(minio.scheme == "http" && minio.host == "127.0.0.1:9000" && minio.encodedPath == "/acme/k")
        let bucketOnly = S3Location(endpoint: URL(string: "https://storage.googleapis.com"), region: "auto", bucket: "acme").address(key: nil)
        #expect(bucketOnly.host == "storage.googleapis.com" && bucketOnly.encodedPath == "/acme")
    }
}
