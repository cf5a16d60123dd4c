import AppStore
import Foundation
import Synchronization

/// Posts with up to `concurrency` requests in flight and counts outcomes; `post` returns as soon as a slot
/// is free (the real outcome is counted, not returned), so the simulation is not paced by the server.
public actor LoadTransport: NotificationTransport {
    private let inner: any NotificationTransport
    private let concurrency: Int
    private var inFlight = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// Posts answered (any status or failure).
    public private(set) var delivered = 0
    /// Posts answered with HTTP 200–206.
    public private(set) var accepted = 0

    /// Wraps `inner`, allowing `concurrency` posts in flight.
    public init(inner: any NotificationTransport, concurrency: Int) {
        self.inner = inner
        self.concurrency = max(1, concurrency)
    }

    /// Waits for a free slot, starts the post, and answers 202 at once (the real outcome is counted).
    public func post(_ body: [UInt8]) async -> TransportOutcome {
        while inFlight >= concurrency { await withCheckedContinuation { waiters.append($0) } }
        inFlight += 1
        Task { [inner] in
            let outcome = await inner.post(body)
            self.finished(outcome)
        }
        return .status(202)
    }

    private func finished(_ outcome: TransportOutcome) {
        inFlight -= 1
        delivered += 1
        if outcome.isSuccess { accepted += 1 }
        if !waiters.isEmpty { waiters.removeFirst().resume() }
        if inFlight == 0 {
            for waiter in drainWaiters { waiter.resume() }
            drainWaiters.removeAll()
        }
    }

    /// Waits until every post has been answered.
    public func drain() async {
        if inFlight == 0 { return }
        await withCheckedContinuation { drainWaiters.append($0) }
    }
}

/// `entitled simulate --customers N --months M --load URL`: a realistic notification load. N customers
/// subscribe to the catalog's first auto-renewable product, spread over the first day, then the clock
/// runs M months (renewals); every notification is signed and posted as it happens (Sandbox: no
/// retries, no history kept).
public enum LoadBenchmark {
    /// What a run measured.
    public struct Result: Sendable, CustomStringConvertible {
        /// Notifications generated.
        public var notifications: Int
        /// Posts answered.
        public var delivered: Int
        /// Posts answered with HTTP 200–206.
        public var accepted: Int
        /// Wall-clock seconds the run took.
        public var seconds: Double

        public var description: String {
            let rate = seconds > 0 ? Double(delivered) / seconds : 0
            return "notifications \(notifications), delivered \(delivered), accepted \(accepted) (2xx) in "
                + String(format: "%.2f", seconds) + " s: " + String(format: "%.0f", rate) + " notifications/s delivered, "
                + String(format: "%.0f", seconds > 0 ? Double(accepted) / seconds : 0) + " accepted/s"
        }
    }

    /// Runs the load against `transport` with `concurrency` posts in flight.
    public static func run(
        customers: Int, months: Int, catalog: Catalog, ca: SimulatorCA, start: Int64, transport: any NotificationTransport,
        concurrency: Int
    ) async throws -> Result {
        guard let product = catalog.products.first(where: { $0.kind == .autoRenewable }) else {
            throw SimulatorError.invalid("the catalog has no auto-renewable product")
        }
        let load = LoadTransport(inner: transport, concurrency: concurrency)
        let simulator = Simulator(
            catalog: catalog, environment: .sandbox, ca: ca, clock: VirtualClock(milliseconds: start), transport: load,
            retainHistory: false)
        let began = Date()
        var notifications = 0
        let spacing = max(1, Milliseconds.day / Int64(max(1, customers)))
        for index in 0..<customers {
            var customer = ActionRequest("customer")
            customer.customer = "load\(index)"
            try await simulator.perform(customer)
            try await simulator.advance(to: start + Int64(index) * spacing)
            var purchase = ActionRequest("purchase")
            purchase.customer = "load\(index)"
            purchase.product = product.id
            notifications += try await simulator.perform(purchase).count
        }
        let end = ISODuration("P\(months)M")!.added(to: start)
        while simulator.now < end {
            notifications += try await simulator.advance(to: min(end, simulator.now + Milliseconds.day)).count
        }
        await load.drain()
        return Result(
            notifications: notifications, delivered: await load.delivered, accepted: await load.accepted,
            seconds: Date().timeIntervalSince(began))
    }
}
