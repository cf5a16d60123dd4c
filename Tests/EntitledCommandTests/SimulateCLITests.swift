@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Synchronization
import Testing

@Suite struct SimulateCLITests {
    /// A new temporary folder holding the scenario file `s.jsonl` with these lines (remove the folder after).
    static func scenario(_ lines: String) throws -> (folder: URL, file: URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("simulate-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("s.jsonl")
        try Data(lines.utf8).write(to: file)
        return (folder, file)
    }

    @Test func runsAScenarioAndPersistsTheCA() async throws {
        let (folder, scenario) = try Self.scenario(
            """
            {"action": "customer", "customer": "alice"}
            {"action": "purchase", "customer": "alice", "product": "pro.monthly"}
            {"at": "P1M", "action": "test"}
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("data").path
        let result = try await CLI.run(["simulate", "--data", data, "--scenario", scenario.path, "--start", "1768435200000"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.first?.contains(#""notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY","status":1"#) == true)
        #expect(lines.dropFirst().first?.contains(#""signedDate":"2026-02-15T00:00:00.000Z""#) == true)
        #expect(FileManager.default.fileExists(atPath: data + "/ca/root.der"))
        let root = try Data(contentsOf: URL(fileURLWithPath: data + "/ca/root.der"))
        // A second run reuses the CA.
        let again = try await CLI.run(["simulate", "--data", data, "--start", "1768435200000"])
        #expect(again.status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: data + "/ca/root.der")) == root)
    }

    @Test func badInputIsAUsageError() async throws {
        #expect(try await CLI.run(["simulate", "--environment", "Moon"]).status == 2)
        #expect(try await CLI.run(["simulate", "--storekit", "x.storekit"]).status == 2)
        #expect(try await CLI.run(["simulate", "--bogus"]).status == 2)
        let help = try await CLI.run(["simulate", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--scenario FILE"))
    }

    @Test func aFailingScenarioLineIsARuntimeFailure() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("simulate-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let scenario = folder.appendingPathComponent("s.jsonl")
        try Data(#"{"action": "purchase", "customer": "nobody", "product": "coins"}"#.utf8).write(to: scenario)
        let result = try await CLI.run(["simulate", "--data", folder.appendingPathComponent("d").path, "--scenario", scenario.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("line 1"))
    }
}

@Suite struct SimulateLoadTests {
    @Test func loadModeDeliversToAServer() async throws {
        let received = Mutex<Int>(0)
        var router = Router()
        router.post("/apple") { request in
            received.withLock { $0 += 1 }
            return Response(status: request.body.isEmpty ? 400 : 200)
        }
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 1
        configuration.accessLog = nil
        configuration.errorLog = nil
        let server = HTTPServer(configuration: configuration, router: router)
        try server.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("simulate-load-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await CLI.run([
            "simulate", "--data", folder.path, "--customers", "20", "--months", "2", "--concurrency", "4",
            "--load", "http://127.0.0.1:\(server.port)/apple", "--start", "1768435200000",
        ])
        await server.shutdown()
        #expect(result.status == 0, "\(result.stderr)")
        // 20 purchases, 20 first renewals, and the second renewal of the first customer only.
        #expect(result.stdout.contains("notifications 41, delivered 41, accepted 41"), "\(result.stdout)")
        #expect(received.withLock { $0 } == 41)
        #expect(try await CLI.run(["simulate", "--customers", "5", "--load", "http://x"]).status == 2)
    }
}
