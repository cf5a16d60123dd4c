import EntitledConfig
import EntitledDev
@testable import EntitledTestSupport
import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import Testing

/// The first five minutes of `entitled dev`: plain lines naming the dashboard and the
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

    /// A Google Play customer's `pro` (production purchases: the plain answer).
    static func playPro(_ port: Int, _ customer: String) async throws -> [String: Any]? {
        try await Loopback.send(port: port, "GET", "/v1/customers/\(customer)", headers: ["Authorization": "Bearer \(key)"]).entitlement("pro")
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
        let ginaToken = try #require(try await Self.playPro(first.port, "gina")?["originalTransactionId"] as? String)
        for customer in seeded {
            if let id = try await Self.pro(first.port, customer)?["transactionId"] as? String { issued.insert(id) }
        }
        first.terminate()

        let second = try await ServeProcess.start(folder: folder) { Self.devArguments($0) }
        defer { second.terminate() }
        // The clock goes on from where it stopped (a fresh start would read the wall clock, 40 days behind).
        #expect(try await Self.now(second.port) == stopped)
        // Not seeded again: the same seven customers, each with the subscription they had.
        let metrics = try await DevDashboardTests.dev(second.port, "GET", "/dev/metrics")
        #expect(DevDashboardTests.int(metrics.json["customers"]) == 7)
        for customer in seeded {
            #expect(try await Self.pro(second.port, customer)?["originalTransactionId"] as? String == originals[customer])
        }
        // The fake Google Play continues too: Gina's token is still its, and it renews on.
        let gina = try #require(try await Self.playPro(second.port, "gina"))
        #expect(gina["store"] as? String == "playStore")
        #expect(gina["originalTransactionId"] as? String == ginaToken)
        #expect(try await DevDashboardTests.dev(second.port, "POST", "/dev/clock/advance", #"{"days": 31}"#).status == 200)
        let renewed = try #require(try await Self.playPro(second.port, "gina"))
        #expect(renewed["active"] as? Bool == true)
        #expect(try #require(renewed["expiresAt"] as? String) > (gina["expiresAt"] as? String ?? ""))
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

    @Test func aTakenPortIsNamedWithTheOptionThatMovesItAndLeavesTheFolderAsItWas() async throws {
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
        // Nothing half-made is left (a database without a saved state would refuse the next start).
        #expect(!FileManager.default.fileExists(atPath: folder.path))

        // A folder that held something of its own keeps it, and only it.
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let mine = folder.appendingPathComponent("notes.txt")
        try Data("keep me".utf8).write(to: mine)
        let again = try await CLI.run([
            "dev", "--listen", "127.0.0.1:\(blocker.port)", "--control", "127.0.0.1:0", "--data", folder.path, "--no-seed",
        ])
        #expect(again.status == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["notes.txt"])

        // The next start on a free address just works.
        let dev = try await ServeProcess.start(folder: folder) { Self.devArguments($0, ["--no-seed"]) }
        defer { dev.terminate() }
        #expect(try await DevDashboardTests.dev(dev.port, "GET", "/dev/clock").status == 200)
    }

    @Test(arguments: [
        ("127.0.0.1:9000", "127.0.0.1:9001"), ("localhost:8080", "localhost:8081"), ("[::1]:8080", "[::1]:8081"),
        // The control API takes no key: it never follows the server beyond loopback.
        ("0.0.0.0:8080", "127.0.0.1:8081"), ("192.0.2.7:8080", "127.0.0.1:8081"),
        ("127.0.0.1:0", "127.0.0.1:0"), ("127.0.0.1:65535", "127.0.0.1:0"),
    ])
    func theControlAPIFollowsTheServersAddress(listen: String, control: String) throws {
        let address = DevEnvironment.controlAddress(following: try #require(ListenAddress(parsing: listen)))
        #expect(address.description == control)
    }

    @Test func twoDevsOnTwoAddressesStartWithoutControlOptions() async throws {
        var devs: [ServeProcess] = []
        defer { for dev in devs { dev.terminate() } }
        for _ in 0..<2 {
            let port = try FreePorts.pair()
            let dev = try await ServeProcess.start { folder in
                ["dev", "--listen", "127.0.0.1:\(port)", "--data", folder.path, "--day-every", "0", "--no-seed"]
            }
            devs.append(dev)
            #expect(dev.port == port)
            let listening = dev.outputSoFar().split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.first { $0["event"] as? String == "listening" }
            #expect(listening?["control"] as? String == "127.0.0.1:\(port + 1)")
            #expect(await eventually { dev.outputSoFar().contains("Control:   http://127.0.0.1:\(port + 1)/") })
        }
    }
}

/// Free loopback ports, found by binding them (another process may take one before it is used:
/// a rare failure, never a false pass).
enum FreePorts {
    /// A port P such that P and P + 1 are both free now.
    static func pair() throws -> Int {
        for _ in 0..<50 {
            let port = try bind(0)
            if port < 65535, (try? bind(port + 1)) != nil { return port }
        }
        throw CocoaError(.fileWriteUnknown)
    }

    /// Binds 127.0.0.1:`port` (0: any), closes it and returns the port bound.
    static func bind(_ port: Int) throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw CocoaError(.fileWriteUnknown) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
