@testable import EntitledTestSupport
import Foundation
import Testing

@Suite struct CLITests {
    @Test func helpListsCommandsAndExitCodes() async throws {
        let result = try await CLI.run(["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("serve"))
        #expect(result.stdout.contains("bench"))
        #expect(result.stdout.contains("Exit status: 0 success, 1 runtime failure, 2 bad input or usage."))
    }

    @Test func versionPrintsTheVersion() async throws {
        let result = try await CLI.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("entitled "))
    }

    @Test(arguments: ["serve", "dev", "verify", "migrate", "rebuild", "check", "reconcile", "simulate", "bench"])
    func commandHelp(command: String) async throws {
        let result = try await CLI.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: entitled \(command)"))
    }

    @Test func benchTargetHelp() async throws {
        let result = try await CLI.run(["bench", "http", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: entitled bench http"))
    }

    /// Bad usage exits 2 and names what was wrong.
    @Test(arguments: [
        (["frobnicate"], "frobnicate"),
        ([], "Usage"),
        (["serve", "--bogus"], "--bogus"),
        (["serve", "--listen"], "--listen"),
        (["serve", "--listen", "nowhere"], "--listen"),
        (["serve", "--database", "mysql://x"], "--database"),
        (["serve", "--config", "/nonexistent/entitled.json"], "/nonexistent/entitled.json"),
        (["bench", "nothing"], "nothing"),
    ])
    func usageErrorsExitTwo(arguments: [String], mention: String) async throws {
        let result = try await CLI.run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(mention))
    }

    @Test func configErrorNamesTheKey() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-\(UUID()).json")
        try Data(#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "colour": "red"}]}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await CLI.run(["serve", "--config", file.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("apps[0].colour"))
    }

    @Test func environmentVariableConfigIsRead() async throws {
        let result = try await CLI.run(["serve"], environment: ["ENTITLED_LISTEN": "not-an-address"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("ENTITLED_LISTEN"))
    }

    @Test func runtimeFailureExitsOne() async throws {
        // A port that is already taken makes the server fail at start, a runtime failure.
        let blocker = try await ServeProcess.start()
        defer { blocker.terminate() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await CLI.run([
            "serve", "--listen", "127.0.0.1:\(blocker.port)", "--database", "sqlite:\(folder.path)/db.sqlite",
        ])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot listen"))
    }
}

/// `entitled dev` takes its address like `serve`: `--listen`, then `ENTITLED_LISTEN`, then the default.
@Suite struct DevListenTests {
    /// Starts `dev` and returns the address of its "listening" line (nil if it exited first), then stops it.
    func listeningAddress(_ arguments: [String], environment: [String: String]) async throws -> String? {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-dev-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["dev", "--control", "127.0.0.1:0", "--data", folder.path, "--day-every", "0", "--no-seed"] + arguments
        var env = ProcessInfo.processInfo.environment
        for key in ["ENTITLED_CONFIG", "ENTITLED_LISTEN", "ENTITLED_DATABASE"] { env.removeValue(forKey: key) }
        env.merge(environment) { $1 }
        process.environment = env
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.runSerialized()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
        }
        // Reads until the "listening" line or end of output (the process exited).
        return try await blocking { () -> String? in
            var collected = Data()
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return nil }
                collected.append(chunk)
                for line in collected.split(separator: UInt8(ascii: "\n")) {
                    if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                        object["event"] as? String == "listening"
                    {
                        return object["address"] as? String
                    }
                }
            }
        }
    }

    @Test(arguments: [
        ([String](), ["ENTITLED_LISTEN": "127.0.0.2:0"], "127.0.0.2"),
        (["--listen", "127.0.0.1:0"], ["ENTITLED_LISTEN": "127.0.0.2:0"], "127.0.0.1"),
    ])
    func devListensWhereTold(arguments: [String], environment: [String: String], host: String) async throws {
        let address = try await listeningAddress(arguments, environment: environment)
        #expect(address?.hasPrefix(host + ":") == true, "\(address ?? "exited")")
        #expect(address?.hasSuffix(":8080") == false)
    }

    @Test func badEnvironmentAddressIsAUsageError() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-dev-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await CLI.run(
            ["dev", "--control", "127.0.0.1:0", "--data", folder.path], environment: ["ENTITLED_LISTEN": "not-an-address"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("ENTITLED_LISTEN"))
    }
}
