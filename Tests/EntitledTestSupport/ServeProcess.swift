import Foundation
import Testing

/// An `entitled serve` child process on a free loopback port. Its standard output and standard
/// error are drained on threads of their own (a full pipe would block the server's log writes);
/// the end of its standard error is kept for ``ServeStartFailure`` and for a server that crashed
/// during the test (``terminate()``).
final class ServeProcess: @unchecked Sendable {
    let process: Process
    private(set) var port = 0
    let folder: URL
    private let collected: LockedData
    private let errorTail = LockedData()
    private let finished = DispatchSemaphore(value: 0)
    private let removeFolder: Bool

    private init(process: Process, folder: URL, collected: LockedData, removeFolder: Bool) {
        self.process = process
        self.folder = folder
        self.collected = collected
        self.removeFolder = removeFolder
    }

    /// Starts the server (its database in `folder`, a new temporary one by default) and waits for
    /// its "listening" log line.
    /// `command` replaces the default `serve` arguments (e.g. to start `entitled dev`).
    static func start(
        extraArguments: [String] = [], folder given: URL? = nil, environment extra: [String: String] = [:],
        command: ((URL) -> [String])? = nil
    ) async throws -> ServeProcess
    {
        let folder = given ?? FileManager.default.temporaryDirectory.appendingPathComponent("entitled-serve-\(UUID())")
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments =
            command?(folder)
            ?? ["serve", "--listen", "127.0.0.1:0", "--database", "sqlite:\(folder.path)/nested/entitled.sqlite"]
            + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "ENTITLED_CONFIG")
        environment.merge(extra) { $1 }
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.runSerialized()
        let collected = LockedData()
        let server = ServeProcess(process: process, folder: folder, collected: collected, removeFolder: given == nil)
        let errorTail = server.errorTail
        let errorsDrained = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while true {
                let chunk = errors.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                errorTail.append(chunk)
                let kept = errorTail.get()
                if kept.count > ServeStartFailure.keptBytes { errorTail.set(kept.suffix(ServeStartFailure.keptBytes)) }
            }
            errorsDrained.signal()
        }
        let portFound = DispatchSemaphore(value: 0)
        let foundPort = LockedData()
        Thread.detachNewThread {
            var announced = false
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                collected.append(chunk)
                if !announced, let port = Self.listeningPort(in: collected.get()) {
                    announced = true
                    foundPort.set(Data(String(port).utf8))
                    portFound.signal()
                }
            }
            if !announced { portFound.signal() }
            server.finished.signal()
        }
        try await blocking { portFound.wait() }
        guard let port = Int(String(decoding: foundPort.get(), as: UTF8.self)) else {
            // Its output ended without the line: it exited (or closed its output). Say why.
            try await blocking {
                errorsDrained.wait()
                process.waitUntilExit()
            }
            if given == nil { try? FileManager.default.removeItem(at: folder) }
            throw ServeStartFailure(
                status: process.terminationStatus, standardError: String(decoding: errorTail.get(), as: UTF8.self),
                standardOutput: String(decoding: collected.get().suffix(ServeStartFailure.keptBytes), as: UTF8.self))
        }
        server.port = port
        return server
    }

    private static func listeningPort(in data: Data) -> Int? {
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["event"] as? String == "listening", let address = object["address"] as? String,
                let port = Int(address.split(separator: ":").last ?? "")
            else { continue }
            return port
        }
        return nil
    }

    func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        // A server that died of a crash (not of the signals tests stop servers with) shows why in
        // the test's output: a later request's refused connection says nothing of it.
        if process.terminationReason == .uncaughtSignal, ![SIGTERM, SIGINT, SIGKILL].contains(process.terminationStatus) {
            let errors = String(decoding: errorTail.get(), as: UTF8.self)
            FileHandle.standardError.write(
                Data("ServeProcess: the server died of signal \(process.terminationStatus); its standard error ends:\n\(errors)\n".utf8))
        }
        if removeFolder { try? FileManager.default.removeItem(at: folder) }
    }

    /// What the server printed so far.
    func outputSoFar() -> String { String(decoding: collected.get(), as: UTF8.self) }

    /// Everything the server printed, read to the end (call after the process exited).
    func remainingOutput() -> String {
        finished.wait()
        return String(decoding: collected.get(), as: UTF8.self)
    }
}

/// A server that ended before it said it was listening, with the end of what it printed.
struct ServeStartFailure: Error, CustomStringConvertible {
    /// How much of each stream is kept (its end).
    static let keptBytes = 16_384

    var status: Int32
    var standardError: String
    var standardOutput: String

    var description: String {
        "the server exited with status \(status) before listening; standard error:\n\(standardError)\nstandard output:\n\(standardOutput)"
    }
}

/// Polls `condition` until it holds (true) or `limit` has passed (false): tests wait for what they
/// need, not for a fixed time that a slow machine may not meet.
func eventually(within limit: Duration = .seconds(20), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}
