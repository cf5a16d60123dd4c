import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
@testable import Storage
import Testing

/// A scenario's deliveries recorded once, then posted to fresh servers in any order: what the
/// event-order tests compare.
struct RecordedDeliveries: Sendable {
    struct Delivery: Sendable {
        var path: String
        var body: [UInt8]
        /// The virtual instant the simulator (or the app) sent it.
        var sentAt: Int64
        var authorization: String?
    }

    var name: String
    var v1: Bool
    /// Each customer's appAccountToken (fixed, so that every run links the same facts).
    var tokens: [String: String]
    var deliveries: [Delivery]

    /// Plays the scenario's actions on the simulator, holding every notification it sends (and
    /// every transaction an app posts) with the instant it was sent. Expectations are skipped.
    static func record(_ scenario: Scenario) async throws -> RecordedDeliveries {
        let clock = AppStoreSimulator.VirtualClock(milliseconds: ScenarioRunner.start)
        let transport = Recorder(clock: clock)
        let ca = try ScenarioRunner.ca.get()
        let simulator = Simulator(
            catalog: try ScenarioRunner.catalog.get().0, environment: .production, ca: ca, clock: clock, transport: transport,
            v1SharedSecret: scenario.v1 ? ScenarioRunner.sharedSecret : nil)
        let path = scenario.v1 ? "/v1/apple/notifications/v1" : "/v1/apple/notifications"
        var tokens: [String: String] = [:]
        var posted: [(Int, Delivery)] = []
        for line in scenario.lines {
            if let at = line.at {
                let target = at.added(to: ScenarioRunner.start)
                if target > clock.nowMilliseconds() { _ = try await simulator.advance(to: target) }
            }
            switch line.step {
            case .action(var request):
                if request.action == "customer", let customer = request.customer {
                    tokens[customer] = String(format: "00000000-0000-4000-8000-%012d", tokens.count + 1)
                }
                if request.action == "purchase", request.appAccountToken == nil, let customer = request.customer {
                    request.appAccountToken = tokens[customer]
                }
                _ = try await simulator.perform(request)
            case .client(let customer, let product):
                let store = await simulator.store
                let owner = { (tx: JWSTransactionDecodedPayload) -> String? in
                    if let id = tx.originalTransactionId, let subscription = store.subscriptions[id] { return subscription.customerId }
                    return store.oneTimeCustomer[tx.transactionId ?? ""]
                }
                var transaction = try #require(
                    store.transactionOrder.reversed().compactMap { store.transactions[$0] }
                        .first { $0.productId == product && owner($0) == customer })
                transaction.signedDate = clock.nowMilliseconds()
                let jws = try ca.signer.sign(transaction)
                posted.append(
                    (
                        await transport.count,
                        Delivery(
                            path: "/v1/customers/\(customer)/transactions", body: Array(#"{"signedTransaction":"\#(jws)"}"#.utf8),
                            sentAt: clock.nowMilliseconds(), authorization: APIHarness.writer)
                    ))
            case .expect, .outage:
                continue
            }
        }
        var deliveries = await transport.sent.map { Delivery(path: path, body: $0.body, sentAt: $0.at, authorization: nil) }
        for (index, delivery) in posted.reversed() { deliveries.insert(delivery, at: index) }
        return RecordedDeliveries(name: scenario.name, v1: scenario.v1, tokens: tokens, deliveries: deliveries)
    }

    /// Holds every body with the virtual instant it was sent, and reports it delivered.
    actor Recorder: NotificationTransport {
        let clock: AppStoreSimulator.VirtualClock
        private(set) var sent: [(body: [UInt8], at: Int64)] = []
        var count: Int { sent.count }
        init(clock: AppStoreSimulator.VirtualClock) { self.clock = clock }
        func post(_ body: [UInt8]) async -> TransportOutcome {
            sent.append((body, clock.nowMilliseconds()))
            return .status(200)
        }
    }

    /// What one run left in the outbox, and how many events a rebuild afterwards added.
    struct Outcome: Sendable {
        var events: [OutboxEvent]
        var addedByRebuild: Int
    }

    /// Posts the deliveries at `order`'s indexes (repeats allowed) to a fresh server on `backend`,
    /// each when the newest one posted so far was sent (virtual time never goes back), then rebuilds.
    ///
    /// Events are held (``EventHold``, `settleSeconds` of the configuration, 0: at the commit).
    /// `releasing`: before each delivery the holds due then are released, as a server's loop
    /// releases them as time goes by; without, the whole run came within one settle window and
    /// is released after the last delivery. Either way, the holds left are released at the end,
    /// `maxHoldSeconds` after the newest delivery.
    func deliver(order: [Int], backend: EventOrderBackend, releasing: Bool = true, settleSeconds: Int = 5) async throws -> Outcome {
        try await serve(backend: backend, settleSeconds: settleSeconds) { server in
            for index in order {
                server.clock.set(milliseconds: deliveries[index].sentAt)
                if releasing { try await server.releaser.releaseDue() }
                try await server.post(index)
            }
            server.clock.advance(milliseconds: Int64(server.configuration.events.maxHoldSeconds) * 1000)
            try await server.releaser.releaseDue()
            let events = try await Self.events(server.store)
            _ = try await server.store.rebuild(projector: server.ledger.projector, now: server.clock.nowMilliseconds())
            return Outcome(events: events, addedByRebuild: try await Self.events(server.store).count - events.count)
        }
    }

    /// A fresh server on `backend` for this scenario's customers, on a virtual clock at the start.
    struct Served {
        var recorded: RecordedDeliveries
        var port: Int
        var store: any LedgerStore
        var ledger: FactLedger
        var clock: AppStoreSimulator.VirtualClock
        var releaser: EventReleaser
        var configuration: Configuration

        /// Posts delivery `index` now.
        func post(_ index: Int) async throws {
            let delivery = recorded.deliveries[index]
            var headers = ["Content-Type": "application/json"]
            if let authorization = delivery.authorization { headers["Authorization"] = authorization }
            let reply = try await Loopback.send(port: port, "POST", delivery.path, headers: headers, body: delivery.body)
            #expect(reply.status == 200, "\(recorded.name) delivery \(index): \(reply.status) \(reply.text)")
        }
    }

    func serve<T: Sendable>(backend: EventOrderBackend, settleSeconds: Int, _ body: (Served) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-events-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let rootFile = folder.appendingPathComponent("root.der")
        try Data(try ScenarioRunner.ca.get().rootDER).write(to: rootFile)
        let clock = AppStoreSimulator.VirtualClock(milliseconds: ScenarioRunner.start)
        let store = try await backend.open()
        do {
            var configuration = try ScenarioRunner.configuration(rootFile: rootFile)
            configuration.events.settleSeconds = settleSeconds
            let (http, ledger) = try await startServer(configuration: configuration, store: store, clock: clock)
            defer { Task { await http.shutdown() } }
            let releaser = EventReleaser(store: store, ledger: ledger, clock: clock)
            for (customer, token) in tokens.sorted(by: { $0.key < $1.key }) {
                _ = try await store.ensureCustomer(appUserId: customer, appAccountToken: token, projector: ledger.projector, now: clock.nowMilliseconds())
            }
            let result = try await body(
                Served(
                    recorded: self, port: http.port, store: store, ledger: ledger, clock: clock, releaser: releaser,
                    configuration: configuration))
            await http.shutdown()
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }

    static func events(_ store: any LedgerStore) async throws -> [OutboxEvent] {
        let events = store
        var all: [OutboxEvent] = []
        while true {
            let page = try await events.events(after: all.last?.sequence ?? 0, limit: 1000)
            all += page
            if page.count < 1000 { return all }
        }
    }
}

/// Where an event-order run keeps its ledger: a private in-memory SQLite database, or a PostgreSQL
/// schema of its own.
enum EventOrderBackend: String, Sendable, CustomTestStringConvertible {
    case sqliteMemory, postgres
    var testDescription: String { rawValue }

    static var all: [EventOrderBackend] { StoredBackend.all.contains(.postgres) ? [.sqliteMemory, .postgres] : [.sqliteMemory] }

    func open() async throws -> any LedgerStore {
        switch self {
        case .sqliteMemory: try await openStore(url: "sqlite::memory:", configuration: SQLiteStore.migratedTemplateConfiguration())
        case .postgres: try await StoredBackend.postgres.open()
        }
    }
}

extension OutboxEvent {
    /// Events a message is by itself, appended at its commit rather than held: their answer is
    /// the customer's at that commit (docs/storage.md).
    static let immediateTypes: Set<String> = ["consumption.requested", "customer.transferred"]

    /// Every field but what only the release that appended it says (`sequence`, `recordedAt`):
    /// what must be the same whatever the delivery order. `answer: false` leaves the answer out.
    func orderIndependent(answer withAnswer: Bool = true) -> String {
        let details = details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        return [
            id, type, String(occurredAt), appUserId ?? "-", appAccountToken ?? "-", environment ?? "-", bundleId ?? "-",
            productId ?? "-", originalTransactionId ?? "-", entitlements.joined(separator: ","), details, cause,
            withAnswer ? String(decoding: answer, as: UTF8.self) : "(answer not compared)",
        ].joined(separator: " | ")
    }
}
