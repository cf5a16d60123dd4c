import EntitledServer
import Foundation
import Storage

/// `entitled bench api` on PostgreSQL with one and with two `entitled serve` child processes on the
/// same database (docs/scaling.md): the same ingest and reads as the in-process run, spread over
/// the processes, with the CPU each process and PostgreSQL used.
extension APIBenchmark {
    /// What one run (1 or 2 processes) measured.
    struct ProcessRun {
        var processes: Int
        var ingestRate: Double
        var notifications: Int64
        var ingestCPU: CPUUse
        var readRate: Double
        var readP99: String
        var readCPU: CPUUse
    }

    /// Runs the ingest of `bodies` and `duration` s of reads through 1, then 2 server processes,
    /// each on a fresh schema of `postgresURL` with the customers the bodies name, and prints the
    /// rates, their ratio and where the CPU went; returns the two runs.
    static func processComparison(
        postgresURL: String, bodies: [String], folder: URL, rootFile: URL, duration: Int, connections: Int, now: Int64,
        wrk: String
    ) async throws -> [ProcessRun] {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("PostgreSQL through `entitled serve` child processes on one database (\(cores) cores, \(connections) connections in all):")
        var runs: [ProcessRun] = []
        for processes in [1, 2] {
            let run = try await processRun(
                processes: processes, postgresURL: postgresURL, bodies: bodies, folder: folder, rootFile: rootFile, duration: duration,
                connections: connections, now: now, wrk: wrk)
            runs.append(run)
            print(
                String(
                    format: "  %d process%@: ingest %8.0f notifications/s, reads %8.0f requests/s (p99 %@)", processes,
                    processes == 1 ? "  " : "es", run.ingestRate, run.readRate, run.readP99))
            print("      ingest CPU: \(run.ingestCPU.summary(per: Double(run.notifications), unit: "notification"))")
            print("      reads CPU:  \(run.readCPU.summary(per: run.readRate * Double(duration), unit: "read"))")
        }
        print(
            String(
                format: "  ratio 2 processes / 1: ingest %.2f, reads %.2f (on %d cores shared by the servers, PostgreSQL and wrk)",
                runs[1].ingestRate / runs[0].ingestRate, runs[1].readRate / runs[0].readRate, cores))
        try await readStepCosts(postgresURL: postgresURL, customers: bodies.count, now: now)
        return runs
    }

    /// With replicas and `readYourWrites: allServers` every customer read first looks the
    /// customer's stamp up on the primary: what that lookup costs beside the read it guards, each
    /// timed alone on one connection (round trip included) with PostgreSQL's CPU.
    private static func readStepCosts(postgresURL: String, customers: Int, now: Int64) async throws {
        let schema = "bench_steps_" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        var configuration = StoreConfiguration()
        configuration.postgresSchema = schema
        configuration.postgresConnections = 1
        let store = try await openStore(url: postgresURL, configuration: configuration)
        do {
            try await _StorageBenchmark.bulkLoad(store, customers: 0..<customers, now: now)
            try await _StorageBenchmark.warm(store)
            let postgres = try await PostgresProcesses(store: store)
            let count = 20_000
            var line = "  a customer read's steps on the primary, \(count) each on one connection:"
            for (step, name) in [(_StorageBenchmark.CustomerReadStep.stampLookup, "stamp lookup"), (.answer, "answer read")] {
                let cpu = CPUSnapshot(children: [], postgres: postgres)
                let seconds = try await _StorageBenchmark.time(step, store, customers: customers, count: count)
                let use = cpu.use(since: seconds)
                line += String(format: " %@ %.0f µs", name, seconds / Double(count) * 1e6)
                if let database = use.postgres { line += String(format: " (PostgreSQL CPU %.0f µs)", database / Double(count) * 1e6) }
                line += step == .stampLookup ? ";" : ""
            }
            print(line)
        } catch {
            try? await _StorageBenchmarkCleanup.dropSchema(store, schema)
            await store.close()
            throw error
        }
        try? await _StorageBenchmarkCleanup.dropSchema(store, schema)
        await store.close()
    }

    private static func processRun(
        processes: Int, postgresURL: String, bodies: [String], folder: URL, rootFile: URL, duration: Int, connections: Int,
        now: Int64, wrk: String
    ) async throws -> ProcessRun {
        let schema = "bench_procs_" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        var storeConfiguration = StoreConfiguration()
        storeConfiguration.postgresSchema = schema
        storeConfiguration.postgresConnections = 2
        // Creates the schema and migrates it; the children find it migrated.
        let store = try await openStore(url: postgresURL, configuration: storeConfiguration)
        var children: [ServerChild] = []
        do {
            try await _StorageBenchmark.bulkLoad(store, customers: 0..<bodies.count, now: now)
            // With their rollups, so the servers' start-up backfill has nothing to do meanwhile.
            try await _StorageBenchmark.bulkLoadMetrics(store, customers: 0..<bodies.count, now: now)
            let database = postgresURL + (postgresURL.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema
            let configFile = folder.appendingPathComponent("serve-\(schema).json")
            try Data(childConfiguration(database: database, rootFile: rootFile).utf8).write(to: configFile)
            for index in 0..<processes {
                children.append(try await ServerChild.start(config: configFile, log: folder.appendingPathComponent("serve-\(schema)-\(index).log")))
            }
            let postgres = try await PostgresProcesses(store: store)

            // Ingest: each process gets its share of the bodies from a wrk of its own.
            let threads = max(1, 2 / processes)
            var scripts: [[String]] = []
            for (index, child) in children.enumerated() {
                let file = folder.appendingPathComponent("bodies-\(schema)-\(index).jsonl")
                let share = bodies.enumerated().filter { $0.offset % processes == index }.map(\.element)
                try Data(share.joined(separator: "\n").utf8).write(to: file)
                scripts.append([
                    "-t\(threads)", "-c\(max(1, connections / processes))", "-d600s", "-s", folder.appendingPathComponent("ingest.lua").path,
                    "http://127.0.0.1:\(child.port)", "--", file.path, String(threads),
                ])
            }
            // Set once every body is in the ledger: the wrk processes are then interrupted.
            let done = CountingStore.Counter()
            var cpu = CPUSnapshot(children: children.map(\.pid), postgres: postgres)
            let started = ContinuousClock.now
            // A body a server refused (wrk prints its status; 503 when the database did not answer
            // in time on an overloaded machine) is not sent again: the ingest is over when every
            // body is in the ledger, or when none came in for 10 s (then timed to the last one).
            async let watcher: (stored: Int64, at: ContinuousClock.Instant) = {
                var (stored, progressed) = (Int64(0), ContinuousClock.now)
                defer { done.atomic.store(1, ordering: .relaxed) }
                while stored < Int64(bodies.count) && ContinuousClock.now - progressed < .seconds(10) {
                    try await Task.sleep(for: .milliseconds(20))
                    let count = try await _StorageBenchmark.notificationCount(store)
                    if count > stored { (stored, progressed) = (count, ContinuousClock.now) }
                }
                return (stored, progressed)
            }()
            try await withThrowingTaskGroup(of: String.self) { group in
                for arguments in scripts {
                    group.addTask { try await Executable.run(wrk, arguments, interruptWhen: { done.value > 0 }) }
                }
                for try await _ in group {}
            }
            let (stored, finished) = try await watcher
            if stored < Int64(bodies.count) {
                print("  (\(Int64(bodies.count) - stored) of \(bodies.count) notifications were refused and not sent again)")
            }
            let ingestSeconds = (finished - started).seconds
            // CPU over the whole wait (servers idle after the last notification).
            let ingestCPU = cpu.use(since: (ContinuousClock.now - started).seconds)

            // Reads: random customers, each process with its share of the connections.
            try await _StorageBenchmark.warm(store)
            cpu = CPUSnapshot(children: children.map(\.pid), postgres: postgres)
            let readStarted = ContinuousClock.now
            let reports = try await withThrowingTaskGroup(of: WrkReport.self) { group in
                for child in children {
                    group.addTask {
                        let output = try await Executable.run(
                            wrk, [
                                "-t\(threads)", "-c\(max(1, connections / processes))", "-d\(duration)s", "--latency", "-s",
                                folder.appendingPathComponent("read.lua").path, "http://127.0.0.1:\(child.port)", "--",
                                String(bodies.count), benchSecret,
                            ])
                        guard let report = WrkReport(parsing: output) else { throw BenchmarkError("could not read wrk's output:\n\(output)") }
                        return report
                    }
                }
                var all: [WrkReport] = []
                for try await report in group { all.append(report) }
                return all
            }
            let readCPU = cpu.use(since: (ContinuousClock.now - readStarted).seconds)
            for child in children { await child.stop() }
            try? await _StorageBenchmarkCleanup.dropSchema(store, schema)
            await store.close()
            return ProcessRun(
                processes: processes, ingestRate: Double(stored) / ingestSeconds, notifications: stored, ingestCPU: ingestCPU,
                readRate: reports.map(\.requestsPerSecond).reduce(0, +), readP99: reports.map(\.p99).joined(separator: ", "),
                readCPU: readCPU)
        } catch {
            for child in children { await child.stop() }
            try? await _StorageBenchmarkCleanup.dropSchema(store, schema)
            await store.close()
            throw error
        }
    }

    /// The children's configuration: the in-process run's app and key, no access log.
    static func childConfiguration(database: String, rootFile: URL) -> String {
        let document: [String: Any] = [
            "database": database,
            "apiKeys": [["name": "bench", "secret": benchSecret, "scopes": ["read"]]],
            "apps": [
                [
                    "bundleId": bundleId, "appAppleId": 1234, "environments": ["Production"],
                    "appleRootCertificates": [rootFile.path],
                    "products": [
                        [
                            "productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro", "level": 1,
                            "duration": "P1M", "entitlements": ["pro"],
                        ]
                    ],
                ]
            ],
            "http": ["perIPConnectionLimit": 0, "accessLog": false],
            "log": ["level": "warn"],
        ]
        // Plain strings and numbers: serialization cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// An `entitled serve` child process (this executable) on a free loopback port.
struct ServerChild: Sendable {
    let pid: Int32
    let port: Int
    private let process: UncheckedChild

    static func start(config: URL, log: URL) async throws -> ServerChild {
        let port = try freePort()
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        // Listening means the database is open and migrated (the server starts after).
        return try await start(
            executable: executable, arguments: ["serve", "--config", config.path, "--listen", "127.0.0.1:\(port)"], port: port, log: log)
    }

    /// Starts `executable` with `arguments`, its output to `log`, and waits until it accepts
    /// connections on loopback `port` (at most a minute).
    static func start(executable: String, arguments: [String], port: Int, log: URL) async throws -> ServerChild {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        process.standardOutput = output
        process.standardError = output
        try Executable.spawnWithSignalsUnblocked(process)
        let child = ServerChild(pid: process.processIdentifier, port: port, process: UncheckedChild(process: process))
        let deadline = ContinuousClock.now + .seconds(60)
        while !canConnect(port: port) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                await child.stop()
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                throw BenchmarkError("\(executable) did not start listening:\n\(text.suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return child
    }

    /// SIGTERM (the server drains and closes its pool), then waits for it to exit.
    func stop() async {
        guard process.process.isRunning else { return }
        process.process.terminate()
        while process.process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    static func freePort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw BenchmarkError("socket: \(errno)") }
        defer { close(socket) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw BenchmarkError("could not find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func canConnect(port: Int) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

/// A `Process` shared by the tasks that stop it (one at a time).
private struct UncheckedChild: @unchecked Sendable {
    let process: Process
}

/// The PostgreSQL server's processes when it runs on this machine: the postmaster (the parent of
/// one of the store's backends) and all its children (backends, WAL writer, checkpointer, …).
struct PostgresProcesses: Sendable {
    let postmaster: Int32?

    init(store: any LedgerStore) async throws {
        let backend = try await _StorageBenchmark.backendPID(store)
        // Not on this machine (or not visible): its CPU is not counted.
        guard let stat = ProcStat(pid: backend), stat.command == "postgres" else {
            postmaster = nil
            return
        }
        postmaster = stat.parent
    }

    /// CPU ticks of each of the server's processes now.
    func ticks() -> [Int32: UInt64] {
        guard let postmaster else { return [:] }
        var ticks: [Int32: UInt64] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), let stat = ProcStat(pid: pid) else { continue }
            if pid == postmaster || stat.parent == postmaster { ticks[pid] = stat.ticks }
        }
        return ticks
    }
}

/// The fields of `/proc/PID/stat` this benchmark reads.
struct ProcStat {
    var command: String
    var parent: Int32
    /// User plus system CPU time, in clock ticks.
    var ticks: UInt64

    init?(pid: Int32) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")")
        else { return nil }
        // After "(comm) ": state, ppid, …, utime (the 12th), stime (the 13th).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let parent = Int32(fields[1]), let user = UInt64(fields[11]), let system = UInt64(fields[12])
        else { return nil }
        command = String(text[text.index(after: open)..<close])
        self.parent = parent
        ticks = user + system
    }

    /// The machine's busy CPU time (all but idle and iowait), in clock ticks (`/proc/stat`).
    static func machineBusyTicks() -> UInt64 {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return 0 }
        let values = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        guard values.count >= 5 else { return 0 }
        return values.reduce(0, +) - values[3] - values[4]
    }
}

/// CPU used between a snapshot and `use(since:)`: by the server processes, PostgreSQL, the machine.
struct CPUSnapshot {
    let children: [Int32]
    let postgres: PostgresProcesses
    let childTicks: [UInt64]
    let postgresTicks: [Int32: UInt64]
    let machine: UInt64

    init(children: [Int32], postgres: PostgresProcesses) {
        self.children = children
        self.postgres = postgres
        childTicks = children.map { ProcStat(pid: $0)?.ticks ?? 0 }
        postgresTicks = postgres.ticks()
        machine = ProcStat.machineBusyTicks()
    }

    func use(since seconds: Double) -> CPUUse {
        let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
        let perChild = zip(children, childTicks).map { pid, before in Double((ProcStat(pid: pid)?.ticks ?? before) - before) / hertz }
        let now = postgres.ticks()
        // A process that started meanwhile counts from zero; one that exited is not counted.
        let database = now.reduce(0.0) { sum, entry in sum + Double(entry.value - min(entry.value, postgresTicks[entry.key] ?? 0)) / hertz }
        return CPUUse(
            seconds: seconds, perProcess: perChild, postgres: postgres.postmaster == nil ? nil : database,
            machine: Double(ProcStat.machineBusyTicks() - machine) / hertz)
    }
}

/// CPU seconds used over `seconds` of wall time.
struct CPUUse {
    var seconds: Double
    var perProcess: [Double]
    /// nil when PostgreSQL is not on this machine.
    var postgres: Double?
    var machine: Double

    /// "servers 1.2 cores (0.6 + 0.6), PostgreSQL 0.5, machine 1.9 busy; per notification 0.9 ms servers, 0.4 ms PostgreSQL".
    func summary(per count: Double, unit: String) -> String {
        let servers = perProcess.reduce(0, +)
        let each = perProcess.map { String(format: "%.2f", $0 / seconds) }.joined(separator: " + ")
        var text = String(format: "servers %.2f cores (%@)", servers / seconds, each)
        if let postgres { text += String(format: ", PostgreSQL %.2f", postgres / seconds) } else { text += ", PostgreSQL not local" }
        text += String(format: ", whole machine %.2f busy", machine / seconds)
        guard count > 0 else { return text }
        text += String(format: "; per %@: servers %.3f ms", unit, servers / count * 1000)
        if let postgres { text += String(format: ", PostgreSQL %.3f ms", postgres / count * 1000) }
        return text
    }
}
