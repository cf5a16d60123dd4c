import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

/// An `entitled serve` child process on a free loopback port.
final class ServeProcess: @unchecked Sendable {
    let process: Process
    let port: Int
    let folder: URL
    private let output: Pipe

    private init(process: Process, port: Int, folder: URL, output: Pipe) {
        self.process = process
        self.port = port
        self.folder = folder
        self.output = output
    }

    /// Starts the server and waits for its "listening" log line.
    static func start(extraArguments: [String] = []) async throws -> ServeProcess {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-serve-\(UUID())")
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments =
            ["serve", "--listen", "127.0.0.1:0", "--database", "sqlite:\(folder.path)/nested/entitled.sqlite"]
            + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "ENTITLED_CONFIG")
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let port = try await blocking { () throws -> Int in
            var buffer = Data()
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { throw CocoaError(.fileReadUnknown) }
                buffer.append(chunk)
                for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") {
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        object["event"] as? String == "listening", let address = object["address"] as? String,
                        let port = Int(address.split(separator: ":").last ?? "")
                    else { continue }
                    return port
                }
            }
        }
        return ServeProcess(process: process, port: port, folder: folder, output: output)
    }

    func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Output after the start-up line, read to the end (call after the process exited).
    func remainingOutput() -> String {
        String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }
}

@Suite struct ServeTests {
    @Test func servesHealthAndReadinessThenStopsCleanlyOnSIGTERM() async throws {
        let server = try await ServeProcess.start()
        defer { server.terminate() }
        let health = try await get("http://127.0.0.1:\(server.port)/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok"}"#)
        let ready = try await get("http://127.0.0.1:\(server.port)/readyz")
        #expect(ready.status == 200)
        // The database folder is created on first start.
        #expect(FileManager.default.fileExists(atPath: server.folder.appendingPathComponent("nested").path))

        kill(server.process.processIdentifier, SIGTERM)
        let (status, output) = try await blocking {
            server.process.waitUntilExit()
            return (server.process.terminationStatus, server.remainingOutput())
        }
        #expect(status == 0)
        #expect(output.contains(#""event":"stopped""#))
    }

    @Test func sigintAlsoStopsWithStatusZero() async throws {
        let server = try await ServeProcess.start()
        defer { server.terminate() }
        kill(server.process.processIdentifier, SIGINT)
        let status = try await blocking {
            server.process.waitUntilExit()
            return server.process.terminationStatus
        }
        #expect(status == 0)
    }

    func get(_ url: String) async throws -> (status: Int, body: String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
