import Foundation
import HTTPClient
import Testing

@testable import Exports

/// Uploads to a real S3-compatible server (moto, started per test, signatures checked), read
/// back and compared byte for byte.
@Suite(.enabled(if: MotoServer.suitesRun), .serialized) struct S3UploadTests {
    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ Int(seed) &+ ($0 >> 13)) }
    }

    static func file(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-export-\(UUID().uuidString).bin")
        try Data(bytes).write(to: url)
        return url
    }

    static func withServer(_ body: (MotoServer) async throws -> Void) async throws {
        let server = try await MotoServer.start()
        defer { server.stop() }
        try await body(server)
    }

    @Test func putObjectStoresTheBytes() async throws {
        try await Self.withServer { server in
            let bytes = Self.bytes(200_000, seed: 1)
            let source = try Self.file(bytes)
            defer { try? FileManager.default.removeItem(at: source) }
            let uploader = S3Uploader(client: server.client(), prefix: "exports/run-1/")
            try await uploader.store(file: source, key: "customers.csv", contentType: ExportFormat.csv.contentType)
            #expect(try await server.client().getObject(key: "exports/run-1/customers.csv") == bytes)
        }
    }

    @Test func aLargeFileGoesUpInPartsOneAtATime() async throws {
        try await Self.withServer { server in
            let partSize = S3Uploader.minimumPartSize
            let bytes = Self.bytes(2 * partSize + 12_345, seed: 2)
            let source = try Self.file(bytes)
            defer { try? FileManager.default.removeItem(at: source) }
            let transport = ScriptedTransport { _, _ in nil }
            let uploader = S3Uploader(client: server.client(http: transport), partSize: partSize)
            try await uploader.store(file: source, key: "events.jsonl", contentType: ExportFormat.jsonl.contentType)
            let sent = transport.sent.withLock { $0 }
            #expect(sent.map { $0.split(separator: "?").first.map(String.init) ?? $0 } == [
                "POST /entitled-exports/events.jsonl", "PUT /entitled-exports/events.jsonl", "PUT /entitled-exports/events.jsonl",
                "PUT /entitled-exports/events.jsonl", "POST /entitled-exports/events.jsonl",
            ])
            #expect(sent[1].contains("partNumber=1"))
            #expect(sent[3].contains("partNumber=3"))
            #expect(try await server.client().getObject(key: "events.jsonl") == bytes)
        }
    }

    @Test func fiveHundredsAndThrottlingAreRetried() async throws {
        try await Self.withServer { server in
            // The first answer is a 503, the second a 429 asking for 2 s, then the server answers.
            let transport = ScriptedTransport { _, index in
                switch index {
                case 0: OutboundResponse(status: 503, body: Array("<Error><Code>SlowDown</Code></Error>".utf8))
                case 1: OutboundResponse(status: 429, headers: ["Retry-After": "2"])
                default: nil
                }
            }
            let sleeper = NoWait()
            let client = server.client(http: transport, retry: RetryPolicy(maxAttempts: 3, baseDelayMilliseconds: 100), sleeper: sleeper)
            try await client.putObject(key: "retried.csv", body: Array("a,b\r\n".utf8), contentType: "text/csv")
            #expect(sleeper.waits.withLock { $0 } == [75, 2000])
            #expect(try await server.client().getObject(key: "retried.csv") == Array("a,b\r\n".utf8))

            // Past the attempts the last failure is reported, typed.
            let down = ScriptedTransport { _, _ in OutboundResponse(status: 500) }
            await #expect {
                try await server.client(http: down, retry: RetryPolicy(maxAttempts: 2)).putObject(key: "x", body: [1], contentType: "text/csv")
            } throws: { error in
                (error as? ExportError)?.code == .unavailable && (error as? ExportError)?.status == 500
            }
            #expect(down.sent.withLock { $0.count } == 2)
        }
    }

    @Test func aWrongSecretIsRefusedAndNotRetried() async throws {
        try await Self.withServer { server in
            var wrong = server.credentials
            wrong.secretAccessKey += "x"
            let transport = ScriptedTransport { _, _ in nil }
            await #expect {
                try await server.client(credentials: wrong, http: transport, retry: RetryPolicy(maxAttempts: 3))
                    .putObject(key: "refused.csv", body: [1, 2, 3], contentType: "text/csv")
            } throws: { error in
                let error = error as? ExportError
                return error?.code == .refused && error?.status == 403 && error?.storeCode == "SignatureDoesNotMatch"
            }
            #expect(transport.sent.withLock { $0.count } == 1)
            await #expect(throws: ExportError.self) { try await server.client().getObject(key: "refused.csv") }
        }
    }

    @Test func aFailedPartAbortsTheUpload() async throws {
        try await Self.withServer { server in
            let bytes = Self.bytes(S3Uploader.minimumPartSize + 10, seed: 3)
            let source = try Self.file(bytes)
            defer { try? FileManager.default.removeItem(at: source) }
            let transport = ScriptedTransport { request, _ in
                request.url.query?.contains("partNumber=2") == true ? OutboundResponse(status: 400) : nil
            }
            let uploader = S3Uploader(client: server.client(http: transport), partSize: S3Uploader.minimumPartSize)
            await #expect(throws: ExportError.self) {
                try await uploader.store(file: source, key: "aborted.csv", contentType: "text/csv")
            }
            #expect(transport.sent.withLock { $0.last?.hasPrefix("DELETE /entitled-exports/aborted.csv?uploadId=") } == true)
            let uploads = try await server.client().send("GET", key: nil, query: [("uploads", "")])
            #expect(S3XML.element("UploadId", in: uploads.body) == nil, "no upload is left open")
        }
    }
}
