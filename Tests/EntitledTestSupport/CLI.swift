import Foundation
import Synchronization
import Testing

/// Runs the built `entitled` binary (next to the test bundle in .build/<config>/).
struct CLI {
    struct Result: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("entitled")
    }

    static func run(_ arguments: [String], environment: [String: String] = [:], stdin: String? = nil) async throws
        -> Result
    {
        try await blocking { try runBlocking(arguments, environment: environment, stdin: stdin) }
    }

    private static func runBlocking(_ arguments: [String], environment: [String: String], stdin: String?) throws
        -> Result
    {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for key in ["ENTITLED_CONFIG", "ENTITLED_LISTEN", "ENTITLED_DATABASE"] { env.removeValue(forKey: key) }
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.runSerialized()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Drain stderr on its own thread so a chatty child cannot fill one pipe and stall.
        let errData = LockedData()
        let drained = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            errData.set(err.fileHandleForReading.readDataToEndOfFile())
            drained.signal()
        }
        let o = out.fileHandleForReading.readDataToEndOfFile()
        drained.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
    }
}

/// Data handed from one thread to another.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.lock(); data = value; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
    func append(_ value: Data) { lock.lock(); data.append(value); lock.unlock() }
}

/// Runs blocking work (processes, pipes, sockets) on its own thread, never on Swift's small
/// cooperative pool, which the code under test needs.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

extension Process {
    /// `run()`, one launch at a time in this test process.
    ///
    /// Foundation's `Process.run()` crashed once (SIGSEGV in a memcpy inside `run()`) while other
    /// tests launched processes from their own threads; launches are rare and short, so they wait
    /// for each other here rather than risk that race.
    func runSerialized() throws {
        try launchLock.withLock { _ in try run() }
    }
}

private let launchLock = Mutex(())

extension CLI {
    /// A fresh temporary folder anyone may write in: the binary may run as an unprivileged user.
    static func writableFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-file-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o777)
        return folder
    }
}
