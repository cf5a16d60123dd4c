import AppStore
import AppStoreSimulator
import AppStoreTesting
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Storage
import Testing

/// Runs scenario files against the real server (verifier, engine, SQLite ledger) with the simulator,
/// both on one virtual clock, the simulator in Production so that failed deliveries are retried.
enum ScenarioRunner {
    static let start = APIHarness.start
    static let sharedSecret = "scenario-shared-secret-0123456789"
    static let ca = Result { try SimulatorCA.ephemeral() }

    /// The simulator's catalog; each product also names the entitlements it grants and, when the
    /// server groups it but Apple does not (non-renewing passes), its `policyGroup`.
    static let catalog: Result<(Catalog, [Product]), any Error> = Result {
        struct ServerSide: Decodable {
            struct Item: Decodable {
                var id: String
                var kind: String
                var group: String?
                var level: Int?
                var period: String?
                var entitlements: [String]?
                var policyGroup: String?
            }
            var products: [Item]
        }
        let data = try Data(contentsOf: Scenario.folder.appendingPathComponent("catalog.json"))
        let products = try JSONDecoder().decode(ServerSide.self, from: data).products.map { item in
            guard let type = Product.Kind(rawValue: item.kind) else {
                throw Scenario.FormatError(description: "catalog.json: \(item.id) has an unknown kind \(item.kind)")
            }
            return Product(
                productId: item.id, type: type,
                subscriptionGroup: item.policyGroup ?? item.group, level: item.level,
                duration: item.kind == "nonRenewing" ? item.period : nil, entitlements: item.entitlements ?? [])
        }
        return (try Catalog.load(json: data), products)
    }

    /// Holds every body instead of posting it, and tells the simulator it was delivered.
    actor HeldTransport: NotificationTransport {
        private(set) var bodies: [[UInt8]] = []
        func post(_ body: [UInt8]) async -> TransportOutcome {
            bodies.append(body)
            return .status(200)
        }
    }

    /// The server and its store, restartable on the same port and file.
    final class Server {
        let configuration: Configuration
        let clock: AppStoreSimulator.VirtualClock
        let url: String
        var port = 0
        var http: HTTPServer?
        var store: (any LedgerStore)?
        var ledger: FactLedger?

        init(configuration: Configuration, clock: AppStoreSimulator.VirtualClock, url: String) {
            self.configuration = configuration
            self.clock = clock
            self.url = url
        }

        /// Starts on `port` (any free one the first time). A restart retries for a second: the port may
        /// briefly be held by the sockets of the previous server.
        func start() async throws {
            let store = try await openStore(url: url)
            var attempts = 0
            while true {
                do {
                    let (http, ledger) = try await startServer(configuration: configuration, store: store, clock: clock, port: port)
                    (self.http, self.store, self.ledger, port) = (http, store, ledger, http.port)
                    return
                } catch {
                    attempts += 1
                    if port == 0 || attempts == 50 {
                        await store.close()
                        throw error
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
        }

        func stop() async {
            await http?.shutdown()
            await store?.close()
            (http, store, ledger) = (nil, nil, nil)
        }
    }

    static func configuration(rootFile: URL) throws -> Configuration {
        let (catalog, products) = try self.catalog.get()
        var configuration = APIHarness.configuration()
        configuration.apps = [
            App(
                bundleId: catalog.bundleId, appAppleId: catalog.appAppleId, environments: ["Production"],
                appleRootCertificates: [rootFile.path], sharedSecret: sharedSecret, gracePeriodDays: 16, products: products)
        ]
        return configuration
    }

    static func run(_ scenario: Scenario, mode: DeliveryMode) async throws -> ScenarioOutcome {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-scenario-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ca = try self.ca.get()
        let rootFile = folder.appendingPathComponent("root.der")
        try Data(ca.rootDER).write(to: rootFile)
        let clock = AppStoreSimulator.VirtualClock(milliseconds: start)
        let server = Server(
            configuration: try configuration(rootFile: rootFile), clock: clock,
            url: "sqlite:\(folder.path)/ledger.sqlite")
        try await server.start()
        do {
            let outcome = try await Run(scenario: scenario, mode: mode, server: server, clock: clock, ca: ca).run()
            await server.stop()
            return outcome
        } catch {
            await server.stop()
            throw error
        }
    }

    /// One run's state.
    final class Run {
        let scenario: Scenario
        let mode: DeliveryMode
        let server: Server
        let clock: AppStoreSimulator.VirtualClock
        let simulator: Simulator
        let held: HeldTransport?
        let path: String
        var outcome = ScenarioOutcome()
        var tokens: [String: String] = [:]
        var customers: [String] = []
        var rng: SplitMix64
        var delivered = 0
        var outageEnd: Int64?

        init(
            scenario: Scenario, mode: DeliveryMode, server: Server, clock: AppStoreSimulator.VirtualClock, ca: SimulatorCA
        ) throws {
            self.scenario = scenario
            self.mode = mode
            self.server = server
            self.clock = clock
            path = scenario.v1 ? "/v1/apple/notifications/v1" : "/v1/apple/notifications"
            let transport: any NotificationTransport
            if case .shuffled(let seed) = mode {
                let held = HeldTransport()
                self.held = held
                transport = held
                rng = SplitMix64(seed: seed)
            } else {
                held = nil
                transport = HTTPNotificationTransport(url: URL(string: "http://127.0.0.1:\(server.port)\(path)")!)
                rng = SplitMix64(seed: 0)
            }
            simulator = Simulator(
                catalog: try ScenarioRunner.catalog.get().0, environment: .production, ca: ca, clock: clock,
                transport: transport, v1SharedSecret: scenario.v1 ? ScenarioRunner.sharedSecret : nil)
        }

        func fail(_ line: Scenario.Line?, _ message: String, known: KnownIssue? = nil) {
            let at = line?.at.map { " (at \($0))" } ?? ""
            let text = "\(scenario.name) [\(mode)]\(line.map { " line \($0.number)" } ?? "")\(at): \(message)"
            if let known { outcome.known.append("[\(known.rawValue)] \(text)") } else { outcome.failures.append(text) }
        }

        func run() async throws -> ScenarioOutcome {
            for line in scenario.lines {
                if let at = line.at { try await advance(to: at.added(to: ScenarioRunner.start)) }
                switch line.step {
                case .outage(let duration):
                    guard mode == .outage else { continue }
                    guard outageEnd == nil else {
                        fail(line, "one outage at a time")
                        continue
                    }
                    let now = clock.nowMilliseconds()
                    outageEnd = duration.added(to: now)
                    outcome.outage = now..<duration.added(to: now)
                    await server.stop()
                case .action(var request):
                    if request.action == "purchase", request.appAccountToken == nil, let customer = request.customer {
                        request.appAccountToken = tokens[customer]
                    }
                    try await simulator.perform(request)
                    if request.action == "customer", let customer = request.customer {
                        // The app asks the server first, so purchases carry the server's appAccountToken.
                        guard let token = try await answer(customer, line: line)?["appAccountToken"]?.stringValue else {
                            fail(line, "no appAccountToken for \(customer)")
                            continue
                        }
                        tokens[customer] = token
                    }
                case .client(let customer, let product):
                    try await postLatestTransaction(of: customer, product: product, line: line)
                case .expect(let customer, let expectation, let knownIssue):
                    if mode == .outage, try await !settled() {
                        outcome.skipped += 1
                        continue
                    }
                    try await deliverHeld()
                    guard let answer = try await answer(customer, line: line) else { continue }
                    outcome.checked += 1
                    let mismatches = ExpectationMatcher.mismatches(expectation, answer: answer, start: ScenarioRunner.start)
                    for mismatch in mismatches { fail(line, "\(customer): \(mismatch)", known: knownIssue) }
                    if let knownIssue, mismatches.isEmpty, mode == .inOrder {
                        fail(line, "known issue \(knownIssue.rawValue) did not occur: remove the annotation")
                    }
                }
            }
            if outageEnd != nil { fail(nil, "the outage lasts past the last line") }
            try await deliverHeld()
            outcome.records = await simulator.sender.history()
            for record in outcome.records where !record.delivered {
                fail(nil, "never delivered: \(record.notificationType) \(record.subtype ?? "") at \(record.signedDate)")
            }
            if mode != .outage {
                for record in outcome.records where record.attempts.count != 1 {
                    fail(nil, "\(record.notificationType) took \(record.attempts.count) attempts with the server up")
                }
            }
            for customer in customers {
                guard let answer = try await answer(customer, line: nil) else { continue }
                outcome.finalAnswers[customer] = answer.removing(["serverTime", "appAccountToken"])
            }
            try await checkProjections()
            return outcome
        }

        /// The stored projections must equal a recomputation from the ledger now, which is what
        /// `rebuild` checks; the stored and fresh state documents are compared first so that a
        /// difference is reported by path.
        func checkProjections() async throws {
            guard let store = server.store, let ledger = server.ledger else { return }
            let now = clock.nowMilliseconds()
            var reported: Set<String> = []
            for customer in customers {
                guard let stored = try await store.projection(appUserId: customer) else { continue }
                let facts = try await store.facts(appUserId: customer, projector: ledger.projector).compactMap(\.fact)
                // Past its next scheduled change with no fact since, a projection is stale by
                // design: reads no longer serve it (they evaluate), and rebuild refreshes it.
                if let next = CustomerDocument(encoded: stored.document)?.state.nextStatusChangeAt, next <= now {
                    reported.insert(customer)
                    continue
                }
                let fresh = try ledger.projector.projection(customer: stored.customer, facts: facts, now: now)
                guard fresh != stored.projection else { continue }
                reported.insert(customer)
                let paths = ExpectationMatcher.differences(
                    try Self.answer(stored.projection.state), try Self.answer(fresh.state))
                let rows =
                    fresh.entitlements != stored.projection.entitlements
                    || fresh.subscriptions != stored.projection.subscriptions
                fail(
                    nil, "\(customer)'s stored projection differs from a recomputation now\(rows ? " (rows too)" : ""): "
                        + "\(paths)")
            }
            let report = try await store.rebuild(projector: ledger.projector, now: now)
            let unexplained = Set(report.changedCustomers).subtracting(reported)
            if !unexplained.isEmpty { fail(nil, "rebuild changed \(unexplained.sorted())") }
        }

        /// The JSON of a projection's stored state (``Storage/CustomerDocument``).
        static func answer(_ document: [UInt8]) throws -> RawJSON {
            try RawJSON.parse(document)
        }

        /// Moves virtual time to `target`; in an outage, the server comes back at the outage's end
        /// (a millisecond before it, so that retries due at that instant find it up).
        func advance(to target: Int64) async throws {
            if let end = outageEnd, target >= end {
                if end - 1 > clock.nowMilliseconds() { try await simulator.advance(to: end - 1) }
                try await server.start()
                outageEnd = nil
            }
            if target > clock.nowMilliseconds() { try await simulator.advance(to: target) }
        }

        /// Outage mode: whether the server is up and has every notification sent so far.
        func settled() async throws -> Bool {
            guard outageEnd == nil else { return false }
            return await simulator.sender.history(onlyFailures: true).isEmpty
        }

        /// Shuffled mode: posts what was held since the last expectation in a random order, with two
        /// of the notifications sent so far delivered again at random places.
        func deliverHeld() async throws {
            guard let held else { return }
            let all = await held.bodies
            var batch = Array(all[delivered...]).shuffled(using: &rng)
            delivered = all.count
            guard !all.isEmpty else { return }
            for _ in 0..<2 {
                let again = all[Int.random(in: 0..<all.count, using: &rng)]
                batch.insert(again, at: Int.random(in: 0...batch.count, using: &rng))
            }
            for body in batch {
                let reply = try await Loopback.send(
                    port: server.port, "POST", path, headers: ["Content-Type": "application/json"], body: body)
                if reply.status != 200 { fail(nil, "POST \(path) answered \(reply.status): \(reply.text)") }
            }
        }

        func answer(_ customer: String, line: Scenario.Line?) async throws -> RawJSON? {
            if !customers.contains(customer) { customers.append(customer) }
            guard server.http != nil else {
                fail(line, "the server is down (the outage covers a line that needs it)")
                return nil
            }
            let reply = try await Loopback.send(
                port: server.port, "GET", "/v1/customers/\(customer)?environment=Production",
                headers: ["Authorization": APIHarness.reader])
            guard reply.status == 200, let answer = try? RawJSON.parse(reply.body) else {
                fail(line, "GET /v1/customers/\(customer) answered \(reply.status): \(reply.text)")
                return nil
            }
            return answer
        }

        /// What an app does with StoreKit's signed transaction: posts it for its user. Family-shared
        /// transactions carry no appAccountToken, so this is how they reach their customer.
        func postLatestTransaction(of customer: String, product: String, line: Scenario.Line) async throws {
            let store = await simulator.store
            let owner = { (tx: JWSTransactionDecodedPayload) -> String? in
                if let id = tx.originalTransactionId, let subscription = store.subscriptions[id] {
                    return subscription.customerId
                }
                return store.oneTimeCustomer[tx.transactionId ?? ""]
            }
            guard
                var transaction = store.transactionOrder.reversed().compactMap({ store.transactions[$0] })
                    .first(where: { $0.productId == product && owner($0) == customer })
            else {
                fail(line, "\(customer) has no transaction of \(product)")
                return
            }
            transaction.signedDate = clock.nowMilliseconds()
            let jws = try simulator.ca.signer.sign(transaction)
            guard server.http != nil else {
                fail(line, "the server is down (the outage covers a line that needs it)")
                return
            }
            let reply = try await Loopback.send(
                port: server.port, "POST", "/v1/customers/\(customer)/transactions",
                headers: ["Authorization": APIHarness.writer, "Content-Type": "application/json"],
                body: Array(#"{"signedTransaction":"\#(jws)"}"#.utf8))
            if reply.status != 200 { fail(line, "POST transactions answered \(reply.status): \(reply.text)") }
        }
    }
}
