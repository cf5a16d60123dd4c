import Foundation
import Storage

/// `entitled bench store`: durable ingest rate and customer-read latency of the ledger.
enum StoreBenchmark: Command {
    static let name = "store"
    static let summary = "ledger ingest rate and customer-read latency (SQLite, PostgreSQL)"
    static let help = """
        Usage: entitled bench store [--postgres URL] [--customers LIST] [--postgres-customers LIST]
                                    [--notifications N] [--reads N] [--only sqlite|postgres]
                                    [--projector default|trivial]

        Durable ingest rate (notifications/s, each a notification row, two facts, a customer link and
        a projection recomputation, committed durably: the WAL fsynced before the answer) with 1 and
        32 concurrent writers;
        then customer-read p50/p99 of the projection read at growing customer counts (after one scan
        of the stored answers, so the reader has the file mapped as a running server has), the p50
        ratio between the largest and the smallest count (target: at most 1.5), and bytes per customer.

        SQLite uses a temporary file. PostgreSQL runs when --postgres or ENTITLED_TEST_POSTGRES gives
        a URL (each run uses a schema of its own, dropped afterwards).

        Options:
          --postgres URL             a libpq URL
          --customers LIST           SQLite read sizes (default 10000,100000,1000000)
          --postgres-customers LIST  PostgreSQL read sizes (default 10000,100000)
          --notifications N          notifications per writer configuration (default 4000)
          --reads N                  timed reads per size (default 20000)
          --only sqlite|postgres     run one backend only
          --projector NAME           default (storage's reference projector, which derives status
                                     and expiry from the benchmark's own facts) or trivial (a
                                     constant projection: measures the store alone)
        Build with 'swift build -c release' for meaningful figures.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        do {
            return try await measure(&arguments)
        } catch let error as StorageError {
            // Operators run benchmarks: show the database's own message too.
            throw RuntimeError(error.debugDescription)
        }
    }

    static func measure(_ arguments: inout Arguments) async throws -> Int32 {
        let postgres = try arguments.option("--postgres") ?? ProcessInfo.processInfo.environment["ENTITLED_TEST_POSTGRES"]
        let sizes = try arguments.option("--customers", as: "a list of counts", parseList) ?? [10_000, 100_000, 1_000_000]
        let pgSizes = try arguments.option("--postgres-customers", as: "a list of counts", parseList) ?? [10_000, 100_000]
        let notifications = try arguments.option("--notifications", as: "a count", { Int($0) }) ?? 4000
        let reads = try arguments.option("--reads", as: "a count", { Int($0) }) ?? 20_000
        let projectorName = try arguments.option("--projector") ?? "default"
        let only = try arguments.option("--only")
        guard only == nil || only == "sqlite" || only == "postgres" else { throw UsageError("--only must be sqlite or postgres") }
        let projector: any Projector
        switch projectorName {
        case "default": projector = BasicProjector()
        case "trivial": projector = TrivialProjector()
        default: throw UsageError("--projector must be default or trivial")
        }
        try arguments.finish()
        print("projector: \(projectorName)")

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
                let rate = try await ingestRate(url: sqliteURL(), schema: nil, writers: writers, notifications: notifications, projector: projector)
                print("  ingest, \(writers) writer\(writers == 1 ? "" : "s"): \(Int(rate)) notifications/s")
            }
            try await readLatencies(sizes: sizes, reads: reads) { _ in (sqliteURL(), nil) }
        }

        if only == "sqlite" {
            return ExitStatus.ok
        } else if let postgres, !postgres.isEmpty {
            print("PostgreSQL (\(try DatabaseURL(parsing: postgres).redacted))")
            for writers in [1, 32] {
                let schema = "bench_\(UInt32.random(in: 0...UInt32.max))"
                let rate = try await ingestRate(url: postgres, schema: schema, writers: writers, notifications: notifications, projector: projector)
                await dropSchema(postgres, schema)
                print("  ingest, \(writers) writer\(writers == 1 ? "" : "s"): \(Int(rate)) notifications/s")
            }
            try await readLatencies(sizes: pgSizes, reads: reads) { _ in (postgres, "bench_\(UInt32.random(in: 0...UInt32.max))") }
        } else {
            print("PostgreSQL: skipped (no --postgres URL and ENTITLED_TEST_POSTGRES unset)")
        }
        return ExitStatus.ok
    }

    static func parseList(_ text: String) -> [Int]? {
        let values = text.split(separator: ",").compactMap { Int($0) }
        return values.isEmpty ? nil : values
    }

    static func open(_ url: String, schema: String?) async throws -> any LedgerStore {
        var configuration = StoreConfiguration()
        configuration.postgresSchema = schema
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

    /// Notifications per second with `writers` concurrent ingesting tasks.
    static func ingestRate(
        url: String, schema: String?, writers: Int, notifications: Int, projector: any Projector
    ) async throws -> Double {
        let store = try await open(url, schema: schema)
        let now = currentMilliseconds()
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
        let runID = UUID().uuidString
        let start = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var index = writer
                    while index < notifications {
                        let batch = benchBatch(index, run: runID, token: shared[index % shared.count], now: now)
                        _ = try await store.ingest(batch, projector: projector, now: now)
                        index += writers
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        await store.close()
        return Double(notifications) / seconds
    }

    /// Filler making messages the size of real ones (a signed notification is ~1.5 kB, a JWS ~1 kB),
    /// built once so that building batches costs the benchmark nothing.
    static let bodyFiller = String(repeating: "x", count: 1500)
    static let transactionFiller = String(repeating: "t", count: 900)
    static let renewalFiller = String(repeating: "r", count: 700)

    static func benchBatch(_ index: Int, run: String, token: String, now: Int64) -> IngestBatch {
        let otid = "\(run)-\(index)"
        let transaction = #"{"originalTransactionId":"\#(otid)","transactionId":"\#(otid)","productId":"pro","expiresDate":\#(now + 2_592_000_000),"environment":"Production","appAccountToken":"\#(token)"}"#
        let renewal = #"{"originalTransactionId":"\#(otid)","autoRenewStatus":1}"#
        let body = #"{"signedPayload":"\#(bodyFiller)"}"#
        return IngestBatch(
            message: ReceivedMessage(
                notificationUUID: "\(run)-n\(index)", source: .appleV2, body: Array(body.utf8), receivedAt: now,
                notificationType: "SUBSCRIBED"),
            facts: [
                IncomingFact(
                    kind: .transaction, jws: "h." + transactionFiller + otid, payload: transaction,
                    transactionId: otid, originalTransactionId: otid, appAccountToken: token, environment: "Production",
                    bundleId: "com.example", signedDate: now),
                IncomingFact(
                    kind: .renewal, jws: "h." + renewalFiller + otid, payload: renewal,
                    originalTransactionId: otid, environment: "Production", bundleId: "com.example", signedDate: now),
            ])
    }

    static func readLatencies(sizes: [Int], reads: Int, target: (Int) -> (String, String?)) async throws {
        var p50s: [Double] = []
        for size in sizes {
            let (url, schema) = target(size)
            let store = try await open(url, schema: schema)
            let loadStart = DispatchTime.now().uptimeNanoseconds
            try await _StorageBenchmark.bulkLoad(store, customers: 0..<size, now: currentMilliseconds())
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
                if found == nil { throw RuntimeError("customer \(user) not found") }
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

/// A projector that ignores fact contents: isolates the store's own cost in the benchmark.
struct TrivialProjector: Projector {
    func project(customer: CustomerRecord, facts: [StoredFact], now: Int64) -> CustomerProjection {
        CustomerProjection(state: Array(#"{"appUserId":"\#(customer.appUserId)","facts":\#(facts.count)}"#.utf8))
    }
}
