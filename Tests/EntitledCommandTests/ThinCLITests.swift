import AppStore
import EntitledDev
import EntitledServer
import Foundation
import Synchronization
import Testing

/// The `entitled` target parses commands and prints help; what they do lives in library targets,
/// where it runs (and is tested) without a process.
@Suite struct ThinCLITests {
    /// What only a command's runner may do: bind servers, open stores, start simulators, wait for signals.
    static let runnerWork = [
        "HTTPServer(", "Simulator(", "openStore(", "buildApplication(", "TerminationSignals(", "SimulatorCA.", "LoadBenchmark.",
        "HTTPNotificationTransport(",
    ]

    @Test func theCommandsOnlyParseAndCallALibrary() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/entitled")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        #expect(files.contains("SimulateCommand.swift") && files.contains("StorageCommands.swift"))
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for word in Self.runnerWork {
                #expect(!text.contains(word), "\(file) does \(word)… itself")
            }
        }
    }

    @Test func theSimulateRunnerRunsAScenarioInProcess() async throws {
        let (folder, scenario) = try SimulateCLITests.scenario(
            """
            {"action": "customer", "customer": "alice"}
            {"action": "purchase", "customer": "alice", "product": "pro.monthly"}
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let lines = Mutex<[String]>([])
        let notes = Mutex<[String]>([])
        let options = SimulateOptions(
            data: folder.appendingPathComponent("data").path, scenarioPath: scenario.path, start: 1_768_435_200_000)
        try await SimulateRunner.run(
            options,
            output: .init(line: { line in lines.withLock { $0.append(line) } }, note: { note in notes.withLock { $0.append(note) } }))
        #expect(lines.withLock { $0 } == [
            #"{"notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY","status":1,"customer":"alice","signedDate":"2026-01-15T00:00:00.000Z"}"#
        ])
        #expect(notes.withLock { $0 }.first?.contains("trusted root at") == true)

        var unreadable = options
        unreadable.catalog = .json(path: folder.appendingPathComponent("missing.json").path)
        await #expect {
            try await SimulateRunner.run(unreadable, output: .init(line: { _ in }, note: { _ in }))
        } throws: { error in
            guard case StartupError.configuration(let message) = error else { return false }
            return message.contains("cannot read")
        }
    }
}
