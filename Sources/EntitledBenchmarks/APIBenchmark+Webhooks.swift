import AppStore
import AppStoreServerAPI
import EntitledConfig
import EntitledServer
import Foundation
import HTTPClient
import HTTPServer
import Storage
import Synchronization

/// `entitled bench api`'s webhook figures: ingest with one endpoint configured next to without
/// (the same bodies into a fresh database each run, alternated, since the machine's noise is
/// larger than the difference), and deliveries/s to a receiver on loopback.
extension APIBenchmark {
    /// A receiver on loopback answering 204, counting deliveries and when the first and last came.
    final class Receiver: Sendable {
        private struct State {
            var count = 0
            var first: ContinuousClock.Instant?
            var last: ContinuousClock.Instant?
        }

        private let state = Mutex(State())
        private let server: HTTPServer

        init() throws {
            let box = Mutex<Receiver?>(nil)
            var routes = Router()
            routes.post("/hook") { _ in
                box.withLock { $0 }?.received()
                return Response(status: 204)
            }
            var settings = HTTPServer.Configuration()
            settings.host = "127.0.0.1"
            settings.port = 0
            settings.accessLog = nil
            settings.errorLog = nil
            server = HTTPServer(configuration: settings, router: routes)
            try server.start()
            box.withLock { $0 = self }
        }

        var url: URL { URL(string: "http://127.0.0.1:\(server.port)/hook")! }

        private func received() {
            state.withLock { state in
                state.count += 1
                let now = ContinuousClock.now
                if state.first == nil { state.first = now }
                state.last = now
            }
        }

        var count: Int { state.withLock { $0.count } }

        /// Deliveries per second from the first to the last.
        var rate: Double {
            state.withLock { state in
                guard let first = state.first, let last = state.last, state.count > 1 else { return 0 }
                let span = (last - first).components
                return Double(state.count - 1) / max(Double(span.seconds) + Double(span.attoseconds) / 1e18, 0.001)
            }
        }

        func shutdown() async { await server.shutdown() }
    }

    /// The endpoint the "with webhooks" runs deliver to.
    static func endpoint(_ receiver: Receiver) -> WebhookEndpoint {
        WebhookEndpoint(url: receiver.url, secretKey: Array(repeating: 7, count: 32), timeoutSeconds: 10, retryScheduleSeconds: [1])
    }

    /// `rounds` × (ingest without webhooks, ingest with one endpoint) on fresh SQLite files;
    /// prints each figure and the deliveries/s of each run with the endpoint.
    static func webhookComparison(
        rounds: Int, configuration: Configuration, folder: URL, notificationCount: Int, now: Int64,
        ingest: (_ configuration: Configuration, _ store: any LedgerStore, _ afterIngest: @Sendable () async throws -> Void)
            async throws -> (Double, String)
    ) async throws {
        print("ingest with one webhook endpoint next to without: \(rounds) alternated rounds, a fresh SQLite file each run")
        var without: [Double] = []
        var with: [Double] = []
        for round in 1...rounds {
            for hooked in [false, true] {
                let store = try await openStore(url: "sqlite:\(folder.path)/hooks-\(round)-\(hooked).sqlite")
                try await _StorageBenchmark.bulkLoad(store, customers: 0..<notificationCount, now: now)
                let receiver = try Receiver()
                var runConfiguration = configuration
                if hooked { runConfiguration.webhooks = [endpoint(receiver)] }
                let expected = hooked ? try await eventCount(store) : 0
                var rate = 0.0
                var errors = ""
                do {
                    (rate, errors) = try await ingest(runConfiguration, store) {
                        guard hooked else { return }
                        // Delivery goes on after the ingest: wait for the held events' release
                        // (`events.settleSeconds`), then for every event to arrive.
                        let deadline = ContinuousClock.now + .seconds(300)
                        while try await store.nextEventHoldRelease() != nil, ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(50))
                        }
                        let events = try await eventCount(store) - expected
                        while receiver.count < events, ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(50))
                        }
                        print(
                            String(
                                format: "  round %d: %d deliveries to a loopback receiver, %.0f deliveries/s", round,
                                receiver.count, receiver.rate))
                    }
                } catch {
                    await receiver.shutdown()
                    await store.close()
                    throw error
                }
                await receiver.shutdown()
                await store.close()
                if hooked { with.append(rate) } else { without.append(rate) }
                print(
                    String(
                        format: "  round %d: ingest SQLite %@: %8.0f notifications/s %@", round,
                        hooked ? "with one webhook endpoint" : "without webhooks         ", rate, errors))
            }
        }
        let mean = { (values: [Double]) in values.reduce(0, +) / Double(max(values.count, 1)) }
        print(
            String(
                format: "ingest with one webhook endpoint: mean %.0f vs %.0f notifications/s without (%+.1f %%; target ≥ −10 %%)",
                mean(with), mean(without), (mean(with) / max(mean(without), 1) - 1) * 100))
    }

    /// Events in the outbox.
    static func eventCount(_ store: any LedgerStore) async throws -> Int {
        var count = 0
        var after: Int64 = 0
        while true {
            let page = try await store.events(after: after, limit: 1000)
            count += page.count
            guard let last = page.last else { return count }
            after = last.sequence
        }
    }
}

/// The delivery and hold capabilities of the store under the count, so the application's own
/// dispatcher and releaser run over it (as over the store `serve` opens).
extension CountingStore {
    func fanOut(endpoint: String, wants: @escaping @Sendable (_ type: String, _ environment: String?) -> Bool, limit: Int, now: Int64)
        async throws -> Int
    {
        try await base.fanOut(endpoint: endpoint, wants: wants, limit: limit, now: now)
    }
    func claimDeliveries(endpoint: String, owner: String, now: Int64, leaseUntil: Int64, limit: Int) async throws -> [ClaimedDelivery] {
        try await base.claimDeliveries(endpoint: endpoint, owner: owner, now: now, leaseUntil: leaseUntil, limit: limit)
    }
    func finishDelivery(_ id: Int64, owner: String, outcome: WebhookAttemptOutcome, now: Int64) async throws -> Bool {
        try await base.finishDelivery(id, owner: owner, outcome: outcome, now: now)
    }
    func finishAndClaim(
        _ finished: (id: Int64, outcome: WebhookAttemptOutcome), endpoint: String, owner: String, now: Int64, leaseUntil: Int64,
        limit: Int
    ) async throws -> [ClaimedDelivery] {
        try await base.finishAndClaim(finished, endpoint: endpoint, owner: owner, now: now, leaseUntil: leaseUntil, limit: limit)
    }
    func deliveries(status: WebhookDeliveryStatus?, before: Int64?, limit: Int) async throws -> [WebhookDelivery] {
        try await base.deliveries(status: status, before: before, limit: limit)
    }
    func retryDelivery(_ id: Int64, now: Int64) async throws -> WebhookDelivery? { try await base.retryDelivery(id, now: now) }
    func pendingDeliveries() async throws -> [String: Int] { try await base.pendingDeliveries() }
    func webhookStatus(endpoints: [String]) async throws -> [WebhookEndpointStatus] {
        try await base.webhookStatus(endpoints: endpoints)
    }
    func deliveries(customerKey: String, endpoints: [String], limit: Int) async throws -> [WebhookDelivery] {
        try await base.deliveries(customerKey: customerKey, endpoints: endpoints, limit: limit)
    }
}

extension CountingStore {
    func releaseEventHolds(projector: Projector, now: Int64, limit: Int) async throws -> Int {
        try await base.releaseEventHolds(projector: projector, now: now, limit: limit)
    }
    func nextEventHoldRelease() async throws -> Int64? { try await base.nextEventHoldRelease() }
}
