import Foundation
import Testing

/// `scripts/install-deps.sh`: `scripts/run` installs what building and running need, and the test
/// tools (a browser, a load generator, PostgreSQL) only come with the test set.
@Suite struct InstallDepsTests {
    static let script = FirstStartTests.root.appendingPathComponent("scripts/install-deps.sh").path

    static func packages(_ arguments: [String]) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script] + arguments + ["--list"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func runningInstallsNoTestTool() throws {
        let run = try Self.packages(["run"])
        let test = try Self.packages(["test"])
        #expect(!run.isEmpty)
        for tool in ["chromium", "wrk", "postgresql", "postgresql@16"] { #expect(!run.contains(tool), "\(tool)") }
        #expect(test.contains("wrk"))
        // The test set is everything running needs and more; no argument is the test set (CI, scripts/test).
        #expect(Set(run).isSubset(of: Set(test)) && test.count > run.count)
        #expect(try Self.packages([]) == test)
    }

    @Test func scriptsRunAsksForTheRunSet() throws {
        let run = try String(contentsOf: FirstStartTests.root.appendingPathComponent("scripts/run"), encoding: .utf8)
        #expect(run.split(separator: "\n").contains("scripts/install-deps.sh run"))
    }
}
