import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledCrypto
import EntitledServer
import Entitlements
import Foundation
import HTTPServer
import Storage
import Synchronization

/// `entitled bench api`: the whole server over loopback — signed notifications in, customers out.
public enum APIBenchmark {
    /// What to run.
    public struct Options: Sendable {
        public var notifications = 10_000
        public var customers = 100_000
        public var duration = 10
        public var connections = 32
        /// A PostgreSQL URL (else `ENTITLED_TEST_POSTGRES`).
        public var postgres: String?
        /// "sqlite" or "postgres" to run one backend only.
        public var only: String?
        /// The fast paths' switch (the command reads `ENTITLED_FAST_PATHS`).
        public var fastPaths = FastPaths()
        /// Alternated rounds of ingest without and with one webhook endpoint (SQLite); 0: none.
        public var webhookRounds = 3
        public init() {}
    }

    /// Runs the benchmark, printing its figures.
    public static func run(_ options: Options) async throws -> Bool {
        let (notificationCount, customerCount, duration, connections) = (options.notifications, options.customers, options.duration, options.connections)
        let (postgresOption, only, fastPaths) = (options.postgres, options.only, options.fastPaths)
        guard let wrk = Executable.find("wrk") else { throw BenchmarkError("wrk is not installed") }
        // The access log goes to /dev/null below; the per-notification request lines (info) would
        // otherwise be tens of thousands of stdout writes that the old figures never paid for.
        LogWriter.standardOutput.configure(format: nil, level: .warn)
        let environmentURL = ProcessInfo.processInfo.environment["ENTITLED_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
        let postgresURL = postgresOption ?? environmentURL

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-bench-api-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ca = try TestCertificateAuthority()
        let rootFile = folder.appendingPathComponent("root.der")
        try Data(ca.rootDER).write(to: rootFile)
        var configuration = Configuration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        // wrk connects from loopback with --connections sockets: no per-IP cap.
        configuration.http.perIPConnectionLimit = 0
        configuration.apiKeys = [APIKey(name: "bench", secret: benchSecret, scopes: [.read])]
        configuration.apps = [
            App(
                bundleId: bundleId, appAppleId: 1234, environments: ["Production"], appleRootCertificates: [rootFile.path],
                products: [
                    Product(
                        productId: "pro.monthly", type: .autoRenewable, subscriptionGroup: "pro", level: 1,
                        duration: "P1M", entitlements: ["pro"])
                ])
        ]
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print(
            "entitled bench api: \(cores) cores, \(connections) connections, wrk -t2, fast paths \(fastPaths.enabled ? "on" : "off")")

        let rawRate = try await rawES256Rate(ca: ca, cores: cores)
        let limit = rawRate / 3
        print(String(format: "raw ES256 verify, %d cores:   %8.0f verifications/s  → limit %.0f notifications/s", cores, rawRate, limit))
        var figures = APIFigures()
        (figures.verifyPerCore, figures.verifyRatio) = try await verificationPerCore()

        let now = Int64(Date().timeIntervalSince1970 * 1000)
        print("signing \(notificationCount) notifications…")
        let bodies = try (0..<notificationCount).map { try notificationBody(index: $0, ca: ca, now: now) }
        print("each for a new subscription of one of \(notificationCount) existing customers, whose answer it recomputes")
        let bodiesFile = folder.appendingPathComponent("bodies.jsonl")
        try Data(bodies.joined(separator: "\n").utf8).write(to: bodiesFile)
        let ingestScript = try writeScripts(in: folder).ingest

        var backends: [(String, String, String?)] = []
        if only != "postgres" { backends.append(("SQLite", "sqlite:\(folder.path)/ingest.sqlite", nil)) }
        if only != "sqlite" {
            if let postgresURL {
                backends.append(("PostgreSQL", postgresURL, "bench_api_" + String(UInt32.random(in: 0...UInt32.max), radix: 16)))
            } else {
                print("PostgreSQL: skipped (no --postgres URL and no ENTITLED_TEST_POSTGRES)")
            }
        }
        /// One ingest run of every body through a server over `store` (with `configuration`'s
        /// webhooks delivered meanwhile); `afterIngest` runs before the server stops.
        func ingestRun(
            configuration: Configuration, store: any LedgerStore, commit: Bool, play: PlayWorkload? = nil,
            afterIngest: @Sendable () async throws -> Void
        ) async throws -> (Double, String) {
            let counter = CountingStore.Counter()
            return try await withServer(configuration: configuration, store: store, fastPaths: fastPaths, counter: counter, commit: commit) { port in
                // wrk's main thread sleeps for the whole -d even after every thread stopped, so it
                // is interrupted (it then prints its report) once the server answered every body.
                let output = try await Executable.run(
                    wrk, [
                        "-t2", "-c\(connections)", "-d600s", "--latency", "-s", ingestScript.path,
                        "http://127.0.0.1:\(port)", "--", (play?.bodiesFile ?? bodiesFile).path, "2",
                    ] + (play.map { ["/v1/google/notifications", $0.authorization] } ?? []),
                    interruptWhen: { counter.value >= notificationCount })
                let result = (try WrkReport.throughput(output, completed: notificationCount), WrkReport.errors(output))
                try await afterIngest()
                return result
            }
        }
        for (label, url, schema) in backends {
            var storeConfiguration = StoreConfiguration()
            storeConfiguration.postgresSchema = schema
            storeConfiguration.log = printStorageEvent
            let store = try await openStore(url: url, configuration: storeConfiguration)
            // The customers exist (an app asks for its customer before StoreKit buys with their
            // token), so each notification links its subscription and recomputes their projection.
            try await _StorageBenchmark.bulkLoad(store, customers: 0..<notificationCount, now: now)
            // The rate and this process's CPU per notification (the server runs in it; wrk does
            // not): the work a notification costs, beside how fast the machine got through them;
            // on PostgreSQL also its server's CPU per notification, when it runs on this machine.
            let postgres = schema == nil ? nil : try await PostgresProcesses(store: store)
            func ingest(commit: Bool, play: PlayWorkload? = nil, into store: any LedgerStore) async throws
                -> (rate: Double, errors: String, cpu: String, micros: Double, database: String)
            {
                let started = processCPUSeconds()
                let database = postgres.map { CPUSnapshot(children: [], postgres: $0) }
                // The CPU counts every hold's release too (`events.settleSeconds` after each
                // customer's change, mostly after the last answer): work deferred is work done.
                let settledMilliseconds = CountingStore.Counter()
                let (rate, errors) = try await ingestRun(
                    configuration: play?.configuration ?? configuration, store: store, commit: commit, play: play
                ) {
                    guard commit else { return }
                    let answered = ContinuousClock.now
                    let deadline = answered + .seconds(300)
                    while try await store.nextEventHoldRelease() != nil, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    settledMilliseconds.atomic.store(Int((ContinuousClock.now - answered) / .milliseconds(1)), ordering: .relaxed)
                }
                let micros = (processCPUSeconds() - started) / Double(notificationCount) * 1e6
                let cpu =
                    String(format: "process CPU %.0f µs per notification", micros)
                    + (commit ? String(format: " (the holds' releases included: the last %.1f s after the last answer)", Double(settledMilliseconds.value) / 1000) : "")
                let databaseCPU: String
                switch database?.use(since: 0).postgres {
                case .some(let seconds): databaseCPU = String(format: ", PostgreSQL CPU %.0f µs per notification", seconds / Double(notificationCount) * 1e6)
                case .none where postgres != nil: databaseCPU = ", PostgreSQL CPU not measured (not on this machine)"
                case .none: databaseCPU = ""
                }
                return (rate, errors, cpu, micros, databaseCPU)
            }
            if label == "SQLite" {
                // What the ledger costs: the same run with the commit skipped (nothing is stored,
                // so the real run below still finds every notification new).
                let run = try await ingest(commit: false, into: store)
                (figures.noLedgerRate, figures.noLedgerCPU) = (run.rate, run.micros)
                print(
                    String(
                        format: "ingest without the ledger: %8.0f notifications/s (ratio %.2f): HTTP, verification, mapping; %@ %@",
                        run.rate, run.rate / limit, run.cpu, run.errors))
            }
            let run = try await ingest(commit: true, into: store)
            if let schema { try? await _StorageBenchmarkCleanup.dropSchema(store, schema) }
            await store.close()
            print(
                String(
                    format: "ingest %@: %8.0f notifications/s durable (ratio to ES256 limit %.2f%@); %@%@ %@", label, run.rate,
                    run.rate / limit, label == "SQLite" ? ", target 0.5" : "", run.cpu, run.database, run.errors))
            if label == "SQLite" {
                (figures.durableRate, figures.durableCPU) = (run.rate, run.micros)
                if let line = APISummary.ledgerLine(figures) { print(line) }
            }

            // The same for Google Play pushes, on a store of its own with the same customers.
            let playSchema = schema.map { $0 + "_play" }
            storeConfiguration.postgresSchema = playSchema
            let playStore = try await openStore(
                url: schema == nil ? "sqlite:\(folder.path)/ingest-play.sqlite" : url, configuration: storeConfiguration)
            try await _StorageBenchmark.bulkLoad(playStore, customers: 0..<notificationCount, now: now)
            let workload = try await playWorkload(base: configuration, count: notificationCount, folder: folder)
            let playRun: (rate: Double, errors: String, cpu: String, micros: Double, database: String)
            do {
                playRun = try await ingest(commit: true, play: workload, into: playStore)
            } catch {
                await workload.fake.shutdown()
                await playStore.close()
                throw error
            }
            await workload.fake.shutdown()
            if let playSchema { try? await _StorageBenchmarkCleanup.dropSchema(playStore, playSchema) }
            await playStore.close()
            print(
                String(
                    format: "ingest Play %@: %8.0f notifications/s durable (OIDC verify, Developer API fetch, commit); %@ (the fake Google's side included)%@ %@",
                    label, playRun.rate, playRun.cpu, playRun.database, playRun.errors))
        }

        if only != "sqlite", let postgresURL {
            let runs = try await processComparison(
                postgresURL: postgresURL, bodies: bodies, folder: folder, rootFile: rootFile, duration: duration,
                connections: connections, now: now, wrk: wrk)
            (figures.postgresOneRate, figures.postgresTwoRate) = (runs[0].ingestRate, runs[1].ingestRate)
        }

        if only != "postgres" && options.webhookRounds > 0 {
            try await webhookComparison(
                rounds: options.webhookRounds, configuration: configuration, folder: folder, notificationCount: notificationCount,
                now: now
            ) { configuration, store, afterIngest in
                try await ingestRun(configuration: configuration, store: store, commit: true, afterIngest: afterIngest)
            }
        }

        if only != "postgres" {
            let (customers, nginx) = try await reads(
                configuration: configuration, folder: folder, customerCount: customerCount, duration: duration, connections: connections,
                now: now, fastPaths: fastPaths, wrk: wrk)
            (figures.readRate, figures.readP99) = (customers.requestsPerSecond, WrkReport.milliseconds(customers.p99))
            (figures.nginxRate, figures.nginxP99) = (nginx?.requestsPerSecond, nginx.flatMap { WrkReport.milliseconds($0.p99) })
            if let line = APISummary.nginxComparisonLine(figures) { print(line) }
        }

        if only != "postgres" { figures.sqliteBytes = try await storedBytes(label: "SQLite", url: "sqlite:\(folder.path)/bytes.sqlite", schema: nil) }
        if only != "sqlite", let postgresURL {
            figures.postgresBytes = try await storedBytes(
                label: "PostgreSQL", url: postgresURL, schema: "bench_bytes_" + String(UInt32.random(in: 0...UInt32.max), radix: 16))
        }
        print("summary, the targets against this run's figures:")
        print(APISummary.table(APISummary.judgements(figures)))
        return true
    }

    /// Writes wrk's scripts into `folder`, both before any part of the run: the ingest's, and the
    /// reads' (the in-process reads and the scale-out run's reads both use it).
    static func writeScripts(in folder: URL) throws -> (ingest: URL, read: URL) {
        let (ingest, read) = (folder.appendingPathComponent("ingest.lua"), folder.appendingPathComponent("read.lua"))
        try Data(ingestLua.utf8).write(to: ingest)
        try Data(readLua.utf8).write(to: read)
        return (ingest, read)
    }

    /// CPU time of this whole process so far (every thread), in seconds.
    static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static let bundleId = "com.example.bench"
    static let benchSecret = "bench-secret-0123456789abcdef"

    /// Runs `body` against a server on a free port over `store`, built and run as `serve` builds
    /// and runs it (the composition root's application and background services: with
    /// `configuration.webhooks`, its dispatcher delivers meanwhile), with the access log to /dev/null.
    static func withServer<T: Sendable>(
        configuration: Configuration, store: any LedgerStore, fastPaths: FastPaths, counter: CountingStore.Counter = .init(),
        commit: Bool = true,
        _ body: (Int) async throws -> T
    ) async throws -> T {
        let clock = SystemClock()
        let assembled = try await buildApplication(
            configuration: configuration, clock: clock, store: CountingStore(base: store, counter: counter, commit: commit),
            rejectionBudget: RejectionBudget(capacity: 1_000_000, refillPerSecond: 1_000_000, clock: clock), fastPaths: fastPaths)
        let application = assembled.application
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let server = HTTPServer(
            configuration: application.serverConfiguration(accessLog: LogWriter(fileDescriptor: devNull)),
            router: application.router)
        try server.start()
        let running: RunningServices
        do {
            // The endpoint is known from here: the events the body's ingest commits are its.
            try await application.webhooks?.runDue()
            running = ServiceRunner(assembled.services).start()
        } catch {
            await server.shutdown()
            throw error
        }
        do {
            let result = try await body(server.port)
            await server.shutdown()
            await running.stop()
            return result
        } catch {
            await server.shutdown()
            await running.stop()
            throw error
        }
    }

    /// ES256 verifications per second on all cores, on the server's own primitive.
    static func rawES256Rate(ca: TestCertificateAuthority, cores: Int) async throws -> Double {
        let messages = (0..<2000).map { Array(#"{"n":\#($0)}"#.utf8) }
        // Each signature with the exact input it signs: one token per message.
        let tokens = try messages.map { message throws in try CompactJWS.parse(try ca.signer.sign(payloadJSON: message)) }
        let signatures = tokens.map(\.signature)
        let inputs = tokens.map(\.signingInput)
        let key = try ca.leaf.p256PublicKey()
        let rounds = 3
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<cores {
                group.addTask {
                    var valid = 0
                    for _ in 0..<rounds {
                        for (input, signature) in zip(inputs, signatures)
                        where key.isValidES256Signature(raw: signature, for: input) {
                            valid += 1
                        }
                    }
                    return valid
                }
            }
            for try await valid in group where valid != inputs.count * rounds {
                throw BenchmarkError("raw ES256 check failed")
            }
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(inputs.count * rounds * cores) / seconds
    }

    /// `{"signedPayload": …}` of a SUBSCRIBED notification for subscription `index`, bought by
    /// synthetic customer `index` (their `appAccountToken`).
    static func notificationBody(index: Int, ca: TestCertificateAuthority, now: Int64) throws -> String {
        let day: Int64 = 86_400_000
        let transaction = JWSTransactionDecodedPayload(
            originalTransactionId: "o\(index)", transactionId: "t\(index)", bundleId: bundleId, productId: "pro.monthly",
            purchaseDate: now - day, originalPurchaseDate: now - day, expiresDate: now + 29 * day, quantity: 1,
            type: .autoRenewableSubscription, appAccountToken: _StorageBenchmark.appAccountToken(index), inAppOwnershipType: .purchased,
            signedDate: now - day, environment: .production, storefront: "USA", transactionReason: .purchase, currency: "USD",
            price: 9990)
        let renewal = JWSRenewalInfoDecodedPayload(
            originalTransactionId: "o\(index)", autoRenewProductId: "pro.monthly", productId: "pro.monthly",
            autoRenewStatus: .on, signedDate: now - day, environment: .production)
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed, subtype: .initialBuy, notificationUUID: UUID().uuidString.lowercased(),
            data: NotificationData(
                environment: .production, appAppleId: 1234, bundleId: bundleId, bundleVersion: "1",
                signedTransactionInfo: try ca.signer.sign(transaction), signedRenewalInfo: try ca.signer.sign(renewal),
                status: .active),
            version: "2.0", signedDate: now - day)
        return #"{"signedPayload":"\#(try ca.signer.sign(payload))"}"#
    }

    /// A synthetic customer's projection by the engine: one monthly subscription, active.
    static func syntheticProjection(n: Int, user: String, token: String, now: Int64, projector: Projector)
        -> CustomerProjection
    {
        let day: Int64 = 86_400_000
        let fact = Fact.transaction(
            TransactionFact(
                transactionId: "t\(n)", originalTransactionId: "o\(n)", productId: "pro.monthly", purchaseDate: now - day,
                expiresDate: now + 29 * day, productType: .autoRenewable, appAccountToken: token, signedDate: now - day,
                environment: .production))
        // Evaluating one well-formed fact cannot fail.
        return (try? projector.projection(
            customer: Storage.CustomerRecord(id: Int64(n), appUserId: user, appAccountToken: token, createdAt: now),
            facts: [fact], now: now)) ?? CustomerProjection()
    }

    /// Each wrk thread posts its share of the bodies file once, then stops; to `/v1/apple/notifications`
    /// unless a path (and an `Authorization` header) follow the file and the thread count.
    static let ingestLua = """
        local counter = 0
        function setup(thread)
          thread:set("id", counter)
          counter = counter + 1
        end
        function init(args)
          local path, threads = args[1], tonumber(args[2])
          target = args[3] or "/v1/apple/notifications"
          headers = {["Content-Type"] = "application/json"}
          if args[4] then headers["Authorization"] = args[4] end
          bodies = {}
          local i = 0
          for line in io.lines(path) do
            if i % threads == id then bodies[#bodies + 1] = line end
            i = i + 1
          end
          sent, done = 0, 0
        end
        function request()
          sent = sent + 1
          local body = bodies[((sent - 1) % #bodies) + 1]
          return wrk.format("POST", target, headers, body)
        end
        function response(status, headers, body)
          if status ~= 200 then io.stderr:write("status " .. status .. "\\n") end
          done = done + 1
          if done >= #bodies then wrk.thread:stop() end
        end
        """
}

extension WrkReport {
    /// Completed requests per second when every thread stopped after its share: `completed`
    /// divided by wrk's elapsed time ("N requests in 4.20s").
    static func throughput(_ output: String, completed: Int) throws -> Double {
        for line in output.split(separator: "\n") where line.contains("requests in") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let index = fields.firstIndex(of: "in"), index + 1 < fields.count {
                let text = fields[index + 1].trimmingCharacters(in: CharacterSet(charactersIn: ","))
                var seconds: Double?
                if text.hasSuffix("ms") { seconds = Double(text.dropLast(2)).map { $0 / 1000 } }
                else if text.hasSuffix("m") { seconds = Double(text.dropLast()).map { $0 * 60 } }
                else if text.hasSuffix("s") { seconds = Double(text.dropLast()) }
                if let seconds, seconds > 0 { return Double(completed) / seconds }
            }
        }
        throw BenchmarkError("could not read wrk's output:\n\(output)")
    }

    /// wrk's error lines (socket errors, non-2xx responses), or "" when there were none.
    static func errors(_ output: String) -> String {
        output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("Socket errors:") || $0.hasPrefix("Non-2xx") }.joined(separator: "; ")
    }
}

/// A store that counts ingests (the benchmark's progress); with `commit` false it answers
/// `.accepted` without storing anything, to measure the server without its database.
struct CountingStore: LedgerStore {
    final class Counter: Sendable {
        let atomic = Atomic<Int>(0)
        var value: Int { atomic.load(ordering: .relaxed) }
    }

    let base: any LedgerStore
    let counter: Counter
    var commit = true

    func events(after: Int64, limit: Int) async throws -> [OutboxEvent] { try await base.events(after: after, limit: limit) }
    func appendEvent(_ event: OutboxEvent) async throws -> OutboxEvent { try await base.appendEvent(event) }
    func scrubErasureEvents(recordedBefore: Int64) async throws -> Int { try await base.scrubErasureEvents(recordedBefore: recordedBefore) }

    func ingest(
        _ message: ReceivedMessage, facts: [(fact: Fact, signed: String?)], claim: Claim?, projector: Projector, now: Int64
    ) async throws -> IngestResult {
        guard commit else {
            counter.atomic.add(1, ordering: .relaxed)
            return IngestResult(status: .accepted)
        }
        let result = try await base.ingest(message, facts: facts, claim: claim, projector: projector, now: now)
        counter.atomic.add(1, ordering: .relaxed)
        return result
    }

    func migrate() async throws -> MigrationReport { try await base.migrate() }
    func recordRejected(_ message: ReceivedMessage, code: String) async throws -> Int64 {
        try await base.recordRejected(message, code: code)
    }
    func purgeRejected(receivedBefore cutoff: Int64) async throws -> Int { try await base.purgeRejected(receivedBefore: cutoff) }
    func customer(appUserId: String) async throws -> CustomerRecord? { try await base.customer(appUserId: appUserId) }
    func ensureCustomer(appUserId: String, appAccountToken: String?, projector: Projector, now: Int64) async throws
        -> CustomerRecord
    {
        try await base.ensureCustomer(appUserId: appUserId, appAccountToken: appAccountToken, projector: projector, now: now)
    }
    func projection(appUserId: String) async throws -> StoredProjection? { try await base.projection(appUserId: appUserId) }
    func reproject(appUserId: String, projector: Projector, now: Int64) async throws -> StoredProjection? {
        try await base.reproject(appUserId: appUserId, projector: projector, now: now)
    }
    func storeAnswer(_ answer: [UInt8], appUserId: String, document: [UInt8]) async throws -> Bool {
        try await base.storeAnswer(answer, appUserId: appUserId, document: document)
    }
    func stateNow(appUserId: String) throws -> ImmediateRead<StoredState?> { try base.stateNow(appUserId: appUserId) }
    func changeMarkNow() throws -> ImmediateRead<Int64> { try base.changeMarkNow() }
    func facts(appUserId: String, projector: Projector) async throws -> [StoredFact] {
        try await base.facts(appUserId: appUserId, projector: projector)
    }
    func history(appUserId: String, cursor: String?, limit: Int) async throws -> HistoryPage {
        try await base.history(appUserId: appUserId, cursor: cursor, limit: limit)
    }
    func subscription(originalTransactionId: String) async throws -> OwnedSubscription? {
        try await base.subscription(originalTransactionId: originalTransactionId)
    }
    func notificationReceivedAt(notificationUUID: String) async throws -> Int64? {
        try await base.notificationReceivedAt(notificationUUID: notificationUUID)
    }
    func ping() async throws { try await base.ping() }
    func projectionTally() async throws -> ProjectionTally { try await base.projectionTally() }
    func checkIntegrity(full: Bool, timeLimit: Duration?) async throws -> IntegrityReport {
        try await base.checkIntegrity(full: full, timeLimit: timeLimit)
    }
    func rebuild(projector: Projector, now: Int64) async throws -> RebuildReport {
        try await base.rebuild(projector: projector, now: now)
    }
    func compareProjections(projector: Projector) async throws -> RebuildReport {
        try await base.compareProjections(projector: projector)
    }
    func backup(to path: String) async throws -> BackupReport { try await base.backup(to: path) }
    func close() async { await base.close() }
}
