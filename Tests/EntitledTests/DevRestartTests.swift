import Foundation
import Testing

/// Issue 17, the first five minutes of `entitled dev`: plain lines naming the dashboard and the
/// key, a data folder that a restart continues (clock and ids) or `--reset` empties, and a port
/// that is taken named with the option that moves it.
@Suite struct DevRestartTests {
    static let key = DevDashboardTests.key

    static func devArguments(_ folder: URL, _ extra: [String] = []) -> [String] {
        ["dev", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--data", folder.path, "--day-every", "0"] + extra
    }

    static func folder() -> URL { FileManager.default.temporaryDirectory.appendingPathComponent("entitled-dev-\(UUID())") }

    static func now(_ port: Int) async throws -> Int64 {
        DevDashboardTests.int(try await DevDashboardTests.dev(port, "GET", "/dev/clock").json["now"])
    }

    static func pro(_ port: Int, _ customer: String) async throws -> [String: Any]? {
        try await Loopback.send(
            port: port, "GET", "/v1/customers/\(customer)?environment=Sandbox", headers: ["Authorization": "Bearer \(key)"]
        ).entitlement("pro")
    }

    @Test func devPrintsTheDashboardAndTheKeyAsPlainLines() async throws {
        let dev = try await ServeProcess.start { Self.devArguments($0, ["--no-seed"]) }
        dev.terminate()
        let lines = dev.remainingOutput().split(separator: "\n").map(String.init)
        #expect(lines.contains("Dashboard: http://127.0.0.1:\(dev.port)/"))
        #expect(lines.contains("API key:   \(Self.key)"))
    }

    @Test func aRestartContinuesTheVirtualClockAndTheIds() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try await ServeProcess.start(folder: folder) { Self.devArguments($0) }
        let seeded = ["alice", "bob", "carol", "frank"]
        var issued: Set<String> = []
        var originals: [String: String] = [:]
        for customer in seeded {
            let pro = try #require(try await Self.pro(first.port, customer))
            issued.insert(try #require(pro["transactionId"] as? String))
            originals[customer] = pro["originalTransactionId"] as? String
        }
        #expect(try await DevDashboardTests.dev(first.port, "POST", "/dev/clock/advance", #"{"days": 40}"#).status == 200)
        let stopped = try await Self.now(first.port)
        for customer in seeded {
            if let id = try await Self.pro(first.port, customer)?["transactionId"] as? String { issued.insert(id) }
        }
        first.terminate()

        let second = try await ServeProcess.start(folder: folder) { Self.devArguments($0) }
        defer { second.terminate() }
        // The clock goes on from where it stopped (a fresh start would read the wall clock, 40 days behind).
        #expect(try await Self.now(second.port) == stopped)
        // Not seeded again: the same six customers, each with the subscription they had.
        let metrics = try await DevDashboardTests.dev(second.port, "GET", "/dev/metrics")
        #expect(DevDashboardTests.int(metrics.json["customers"]) == 6)
        for customer in seeded {
            #expect(try await Self.pro(second.port, customer)?["originalTransactionId"] as? String == originals[customer])
        }
        // A new purchase gets an id never issued before, so it cannot land on an old customer.
        #expect(try await DevDashboardTests.dev(second.port, "POST", "/dev/actions", #"{"action": "customer", "customer": "zoe"}"#).status == 200)
        let buy = try await DevDashboardTests.dev(
            second.port, "POST", "/dev/actions", #"{"action": "purchase", "customer": "zoe", "product": "pro.monthly"}"#)
        #expect(buy.status == 200)
        let zoe = try #require(try await Self.pro(second.port, "zoe"))
        #expect(zoe["active"] as? Bool == true)
        let zoeId = try #require(zoe["transactionId"] as? String)
        #expect(!issued.contains(zoeId))
        #expect(!originals.values.contains(zoe["originalTransactionId"] as? String ?? ""))
        #expect(try await Self.pro(second.port, "alice")?["originalTransactionId"] as? String == originals["alice"])
    }

    @Test func resetStartsFromAnEmptyFolderAndKeepsWhatDevDidNotPutThere() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try await ServeProcess.start(folder: folder) { Self.devArguments($0) }
        #expect(try await DevDashboardTests.dev(first.port, "POST", "/dev/clock/advance", #"{"days": 40}"#).status == 200)
        let stopped = try await Self.now(first.port)
        first.terminate()
        let mine = folder.appendingPathComponent("notes.txt")
        try Data("keep me".utf8).write(to: mine)

        let second = try await ServeProcess.start(folder: folder) { Self.devArguments($0, ["--reset", "--no-seed"]) }
        defer { second.terminate() }
        #expect(try await Self.now(second.port) < stopped)
        let metrics = try await DevDashboardTests.dev(second.port, "GET", "/dev/metrics")
        #expect(DevDashboardTests.int(metrics.json["customers"]) == 0)
        #expect(try await Self.pro(second.port, "alice") == nil)
        #expect(FileManager.default.fileExists(atPath: mine.path))
    }

    @Test func aDatabaseWithoutSavedStateIsRefusedWithTheWayOut() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: folder.appendingPathComponent("entitled.sqlite").path, contents: nil)
        let result = try await CLI.run(Self.devArguments(folder))
        #expect(result.status == 2)
        #expect(result.stderr.contains("--reset"))
    }

    @Test func aTakenPortIsNamedWithTheOptionThatMovesIt() async throws {
        let blocker = try await ServeProcess.start()
        defer { blocker.terminate() }
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await CLI.run([
            "dev", "--listen", "127.0.0.1:\(blocker.port)", "--control", "127.0.0.1:0", "--data", folder.path, "--no-seed",
        ])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot listen"))
        #expect(result.stderr.contains("--listen HOST:PORT"))
    }
}
