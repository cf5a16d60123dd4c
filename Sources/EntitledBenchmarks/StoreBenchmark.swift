import AppStore
import EntitledServer
import Entitlements
import Foundation
import Storage

/// `entitled bench store`: durable ingest rate and customer-read latency of the ledger.
public enum StoreBenchmark {
    /// What to run.
    public struct Options: Sendable {
        /// A PostgreSQL URL (else `ENTITLED_TEST_POSTGRES`).
        public var postgres: String?
        public var sizes = [10_000, 100_000, 1_000_000]
        public var postgresSizes = [10_000, 100_000]
        public var notifications = 4000
        public var reads = 20_000
        /// "sqlite" or "postgres" to run one backend only.
        public var only: String?
        public init() {}
    }

    /// Runs the benchmark, printing its figures.
    public static func run(_ options: Options) async throws -> Bool {
        do {
            return try await measure(options)
        } catch let error as StorageError {
            // Operators run benchmarks: show the database's own message too.
            throw BenchmarkError(error.debugDescription)
        }
    }

    static func measure(_ options: Options) async throws -> Bool {
        let postgres = options.postgres ?? ProcessInfo.processInfo.environment["ENTITLED_TEST_POSTGRES"]
        let (sizes, pgSizes, notifications, reads) = (options.sizes, options.postgresSizes, options.notifications, options.reads)
        let only = options.only
        // Storage's reference projector: status and expiry from the benchmark's own facts, every
        // state encoded by storage itself.
        let projector = Projector()
        let sample = AppleShapedNotification.make(0, run: 0, token: UUID().uuidString.lowercased(), now: 0).message.body.count
        print("notifications: \(sample) bytes each, of which \(AppleShapedNotification.x5cBytesPerNotification) are x5c chains")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var serial = 0
        func sqliteURL() -> String {
            serial += 1
            return "sqlite:" + directory.appendingPathComponent("bench-\(serial).sqlite").path
        }

        if only != "postgres" {
            print("SQLite (WAL, group commit, fsync by the syncer before each answer)")
            for writers in [1, 32] {
                let (rate, bytes) = try await ingestRate(
                    url: sqliteURL(), schema: nil, writers: writers, notifications: notifications, projector: projector)
                print("  ingest, \(writers) writer\(writers == 1 ? "" : "s"): \(Int(rate)) notifications/s")
                if writers == 32 { printBytes(bytes, notifications: notifications) }
            }
            try await readLatencies(sizes: sizes, reads: reads) { _ in (sqliteURL(), nil) }
        }

        if only == "sqlite" {
            return true
        } else if let postgres, !postgres.isEmpty {
            print("PostgreSQL (\(try DatabaseURL(parsing: postgres).redacted))")
            for writers in [1, 32] {
                let schema = "bench_\(UInt32.random(in: 0...UInt32.max))"
                let (rate, bytes) = try await ingestRate(
                    url: postgres, schema: schema, writers: writers, notifications: notifications, projector: projector)
                await dropSchema(postgres, schema)
                print("  ingest, \(writers) writer\(writers == 1 ? "" : "s"): \(Int(rate)) notifications/s")
                if writers == 32 { printBytes(bytes, notifications: notifications) }
            }
            try await readLatencies(sizes: pgSizes, reads: reads) { _ in (postgres, "bench_\(UInt32.random(in: 0...UInt32.max))") }
        } else {
            print("PostgreSQL: skipped (no --postgres URL and ENTITLED_TEST_POSTGRES unset)")
        }
        return true
    }

    static func open(_ url: String, schema: String?) async throws -> any LedgerStore {
        var configuration = StoreConfiguration()
        configuration.postgresSchema = schema
        configuration.log = printStorageEvent
        return try await openStore(url: url, configuration: configuration)
    }

    static func dropSchema(_ url: String, _ schema: String) async {
        // Dropping is done through a store pointed at the schema itself.
        var configuration = StoreConfiguration()
        configuration.postgresSchema = schema
        configuration.migrateOnOpen = false
        if let scoped = try? await openStore(url: url, configuration: configuration) {
            try? await _StorageBenchmarkCleanup.dropSchema(scoped, schema)
            await scoped.close()
        }
    }

    /// Notifications per second with `writers` concurrent ingesting tasks, and the ledger's bytes
    /// on disk afterwards (``_StorageBenchmark/ledgerBytes(_:)``).
    static func ingestRate(
        url: String, schema: String?, writers: Int, notifications: Int, projector: Projector
    ) async throws -> (rate: Double, bytes: StoredBytes) {
        let store = try await open(url, schema: schema)
        let now = SystemClock().nowMilliseconds()
        // 10,000 customers (created concurrently, so they share group commits); each notification
        // carries one of their tokens, so it links a new subscription and recomputes that customer.
        let tokens = try await withThrowingTaskGroup(of: [String].self) { group in
            for lane in 0..<32 {
                group.addTask {
                    var tokens: [String] = []
                    for index in stride(from: lane, to: 10_000, by: 32) {
                        tokens.append(
                            try await store.ensureCustomer(appUserId: "bench-\(index)", appAccountToken: nil, projector: projector, now: now)
                                .appAccountToken)
                    }
                    return tokens
                }
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        let shared = tokens
        let before = try await _StorageBenchmark.relationBytes(store, tables: nil)
        let runID = Int.random(in: 0..<100_000_000)
        let start = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var index = writer
                    while index < notifications {
                        let batch = benchBatch(index, run: runID, token: shared[index % shared.count], now: now)
                        _ = try await store.ingest(batch.message, facts: batch.facts, claim: nil, projector: projector, now: now)
                        index += writers
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let ledger = try await _StorageBenchmark.ledgerBytes(store)
        let after = try await _StorageBenchmark.relationBytes(store, tables: nil)
        await store.close()
        let ledgerNames = Set(ledger.map(\.name))
        let grown = Dictionary(before.map { ($0.name, $0.bytes) }, uniquingKeysWith: +)
        let others = after.filter { !ledgerNames.contains($0.name) }.map { ($0.name, $0.bytes - (grown[$0.name] ?? 0)) }
        return (Double(notifications) / seconds, StoredBytes(ledger: ledger, others: others.filter { $0.1 != 0 }))
    }

    /// The ledger's tables and indexes in bytes on disk after an ingest, and how much every other
    /// table and index grew during it.
    struct StoredBytes {
        var ledger: [(name: String, bytes: Int64)]
        var others: [(name: String, bytes: Int64)]
    }

    /// `bytes per notification: N`, then each table's and index's share, then the growth of the
    /// tables outside the ledger (projections, rollups, events) per notification; returns N.
    @discardableResult
    static func printBytes(_ bytes: StoredBytes, notifications: Int) -> Int64 {
        let total = bytes.ledger.reduce(0) { $0 + $1.bytes }
        print("  bytes per notification: \(total / Int64(notifications))")
        print("    " + bytes.ledger.map { "\($0.name) \($0.bytes / Int64(notifications))" }.joined(separator: ", "))
        let grown = bytes.others.reduce(0) { $0 + $1.bytes }
        print("  other tables' growth per notification: \(grown / Int64(notifications))")
        print("    " + bytes.others.map { "\($0.name) \($0.bytes / Int64(notifications))" }.joined(separator: ", "))
        return total / Int64(notifications)
    }

    static func benchBatch(_ index: Int, run: Int, token: String, now: Int64)
        -> (message: ReceivedMessage, facts: [(fact: Fact, signed: String?)])
    {
        AppleShapedNotification.make(index, run: run, token: token, now: now)
    }

    static func readLatencies(sizes: [Int], reads: Int, target: (Int) -> (String, String?)) async throws {
        var p50s: [Double] = []
        for size in sizes {
            let (url, schema) = target(size)
            let store = try await open(url, schema: schema)
            let loadStart = DispatchTime.now().uptimeNanoseconds
            try await _StorageBenchmark.bulkLoad(store, customers: 0..<size, now: SystemClock().nowMilliseconds())
            let loadSeconds = Double(DispatchTime.now().uptimeNanoseconds - loadStart) / 1e9
            var generator = SystemRandomNumberGenerator()
            try await _StorageBenchmark.warm(store)
            for _ in 0..<min(2000, reads) {
                _ = try await store.projection(appUserId: _StorageBenchmark.appUserId(Int.random(in: 0..<size, using: &generator)))
            }
            var samples: [Double] = []
            samples.reserveCapacity(reads)
            for _ in 0..<reads {
                let user = _StorageBenchmark.appUserId(Int.random(in: 0..<size, using: &generator))
                let start = DispatchTime.now().uptimeNanoseconds
                let found = try await store.projection(appUserId: user)
                samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
                if found == nil { throw BenchmarkError("customer \(user) not found") }
            }
            samples.sort()
            let p50 = samples[samples.count / 2]
            let p99 = samples[min(samples.count - 1, samples.count * 99 / 100)]
            p50s.append(p50)
            let bytes = try await _StorageBenchmark.databaseBytes(store)
            if let schema { try? await _StorageBenchmarkCleanup.dropSchema(store, schema) }
            await store.close()
            print(
                "  read \(size) customers: p50 \(format(p50)) µs, p99 \(format(p99)) µs, \(bytes / Int64(max(1, size))) bytes/customer"
                    + " (loaded in \(format(loadSeconds)) s)")
        }
        if let first = p50s.first, let last = p50s.last, p50s.count > 1 {
            let ratio = last / first
            print("  read p50 ratio \(sizes.last!)/\(sizes.first!): \(format(ratio))× (target ≤ 1.5×)")
        }
    }

    static func format(_ value: Double) -> String { String(format: value < 10 ? "%.2f" : "%.1f", value) }
}

