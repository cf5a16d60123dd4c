import AppStore
import AppStoreServerAPI
import EntitledConfig
import Foundation
import HTTPClient
import Storage

/// Delivers outbox events to the configured webhook endpoints, at least once, signed (Standard
/// Webhooks), each customer's events in order per endpoint — and, the same way, to the configured
/// integrations in their vendors' formats (``DeliveryTarget``).
///
/// Work lives in the database (``WebhookDeliveryStore``), not in memory: a pass fans new events
/// out into deliveries, then claims due ones under a lease (so several servers on one PostgreSQL
/// never attempt one delivery at once, and a crashed process's claims come back when their lease
/// expires), posts them through ``OutboundHTTP`` with at most ``maxInFlightPerEndpoint`` at once per
/// endpoint, and records each outcome: 2xx is delivered; anything else (a 3xx too: redirects are
/// never followed), or no answer within `timeoutSeconds`, is retried after the endpoint's `retryScheduleSeconds` (plus up to 10 %
/// jitter; the last wait repeats) until `maxRetryHours` after the first attempt, then failed.
/// Nothing here runs inside an ingest or a read, and each endpoint passes on its own: a slow
/// endpoint only slows its own deliveries.
public final class WebhookDispatcher: Sendable {
    /// Attempts in flight at once per endpoint.
    public static let maxInFlightPerEndpoint = 8
    /// Events read per fan-out transaction.
    static let fanOutBatch = 500
    /// How long a claim lasts beyond the endpoint's timeout: a crashed process's attempts are
    /// claimable again after `timeoutSeconds` plus this.
    static let leaseMarginMilliseconds: Int64 = 5_000
    /// The longest idle wait between passes: commits of another server, and retries falling due,
    /// are seen within it (commits of this process ring ``bell`` at once).
    static let idleWait: Duration = .seconds(1)

    let targets: [DeliveryTarget]
    let store: any WebhookDeliveryStore
    let transport: any OutboundHTTP
    let clock: any EpochClock
    let bell: EventBell
    let metrics: ServerMetrics?
    let owner: String

    /// - Parameters:
    ///   - bell: rung when events commit (``FactLedger/events``) or a delivery is retried by hand.
    public init(
        endpoints: [WebhookEndpoint], integrations: [IntegrationEndpoint] = [], store: any WebhookDeliveryStore,
        transport: any OutboundHTTP, clock: any EpochClock, bell: EventBell, metrics: ServerMetrics? = nil,
        owner: String = UUID().uuidString
    ) {
        self.targets = DeliveryTarget.all(webhooks: endpoints, integrations: integrations)
        self.store = store
        self.transport = transport
        self.clock = clock
        self.bell = bell
        self.metrics = metrics
        self.owner = owner
    }

    /// What one pass did, summed over endpoints.
    public struct Report: Sendable, Equatable {
        public var delivered = 0
        public var retried = 0
        public var failed = 0
        public init(delivered: Int = 0, retried: Int = 0, failed: Int = 0) {
            self.delivered = delivered
            self.retried = retried
            self.failed = failed
        }
    }

    /// Fans out new events and attempts every due delivery, returning when none is left due.
    /// - Throws: a storage error (the work stays for a later pass).
    @discardableResult
    public func runDue() async throws -> Report {
        try await withThrowingTaskGroup(of: Report.self) { group in
            for target in targets {
                group.addTask { try await self.runDue(target) }
            }
            var total = Report()
            for try await report in group {
                total.delivered += report.delivered
                total.retried += report.retried
                total.failed += report.failed
            }
            return total
        }
    }

    /// Passes until the task is cancelled, waiting between them for a commit (or ``idleWait``).
    ///
    /// Each endpoint passes on its own: an endpoint that hangs until its timeout holds up only its
    /// own deliveries, never another endpoint's.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for target in targets {
                group.addTask {
                    while !Task.isCancelled {
                        do {
                            _ = try await self.runDue(target)
                            // The backlog as this pass left it, so the gauge follows each pass.
                            try await self.updateBacklog()
                        } catch {
                            ServerLog.event("webhook deliveries could not be read", ["endpoint": target.label, "error": "\(error)"], level: .error)
                        }
                        await self.bell.wait(timeout: Self.idleWait)
                    }
                }
            }
            guard metrics != nil else { return }
            group.addTask {
                while !Task.isCancelled {
                    do {
                        try await self.updateBacklog()
                    } catch {
                        ServerLog.event("webhook backlog could not be read", ["error": "\(error)"], level: .error)
                    }
                    try? await Task.sleep(for: Self.idleWait)
                }
            }
        }
    }

    private func updateBacklog() async throws {
        guard let metrics else { return }
        let pending = try await store.pendingDeliveries()
        for target in targets {
            metrics.webhookPending.set([target.label], Double(pending[target.key] ?? 0))
        }
    }

    /// One pass over `endpoint`: fan out, then attempt due deliveries until none is left. While
    /// attempts are in flight, new events (a commit rings ``bell``, or ``idleWait`` passes) are fanned
    /// out and claimed into the free room, so one slow attempt does not hold up other customers.
    private func runDue(_ endpoint: DeliveryTarget) async throws -> Report {
        let key = endpoint.key
        try await fanOut(endpoint)
        let lease = Int64(endpoint.timeoutSeconds) * 1000 + Self.leaseMarginMilliseconds
        // A child's result: an attempt that ended, or nil when the wait for new events did.
        return try await withThrowingTaskGroup(of: (id: Int64, outcome: WebhookAttemptOutcome)?.self) { group in
            defer { group.cancelAll() }
            var report = Report()
            var inFlight = 0
            var waiting = false
            var finished: (id: Int64, outcome: WebhookAttemptOutcome)?
            while true {
                // Claim as many as there is room for — recording the attempt that just ended in
                // the same commit; it may have freed its customer's next event.
                let now = clock.nowMilliseconds()
                let room = Self.maxInFlightPerEndpoint - inFlight
                let claimed =
                    if let finished {
                        try await store.finishAndClaim(finished, endpoint: key, owner: owner, now: now, leaseUntil: now + lease, limit: room)
                    } else if room > 0 {
                        try await store.claimDeliveries(endpoint: key, owner: owner, now: now, leaseUntil: now + lease, limit: room)
                    } else {
                        [ClaimedDelivery]()
                    }
                finished = nil
                for claim in claimed {
                    inFlight += 1
                    group.addTask { (claim.delivery.id, await self.attempt(claim, to: endpoint)) }
                }
                guard inFlight > 0 else { return report }
                if !waiting {
                    waiting = true
                    group.addTask {
                        await self.bell.wait(timeout: Self.idleWait)
                        return nil
                    }
                }
                guard let next = try await group.next() else { return report }
                guard let next else {
                    waiting = false
                    try await fanOut(endpoint)
                    continue
                }
                inFlight -= 1
                finished = next
                switch next.outcome {
                case .delivered: report.delivered += 1
                case .retry: report.retried += 1
                case .failed: report.failed += 1
                }
            }
        }
    }

    /// Copies the events `endpoint` has not seen into its deliveries.
    private func fanOut(_ endpoint: DeliveryTarget) async throws {
        while try await store.fanOut(
            endpoint: endpoint.key, wants: endpoint.wants, limit: Self.fanOutBatch, now: clock.nowMilliseconds())
            == Self.fanOutBatch
        {}
    }

    /// One attempt: build the request (a webhook's signed now), post, decide the outcome
    /// (recorded by the caller).
    private func attempt(_ claim: ClaimedDelivery, to endpoint: DeliveryTarget) async -> WebhookAttemptOutcome {
        let delivery = claim.delivery
        let label = endpoint.label
        let request = endpoint.request(claim.event, clock.nowMilliseconds() / 1000)
        let started = ContinuousClock.now
        let answer = await Self.send(request, through: transport, within: .seconds(endpoint.timeoutSeconds))
        metrics?.webhookAttemptDuration.observe([label], (ContinuousClock.now - started).seconds)
        let now = clock.nowMilliseconds()
        let outcome: WebhookAttemptOutcome
        switch answer {
        case .success(let response) where (200..<300).contains(response.status):
            outcome = .delivered(status: response.status)
        case .success(let response) where (300..<400).contains(response.status):
            // The transport never follows one: a re-sent or re-methoded body is not a delivery.
            outcome = Self.afterFailure(
                delivery, endpoint: endpoint, status: response.status, error: "redirect (\(response.status)) not followed", now: now)
        case .success(let response):
            outcome = Self.afterFailure(delivery, endpoint: endpoint, status: response.status, error: "HTTP \(response.status)", now: now)
        case .failure(let error):
            outcome = Self.afterFailure(delivery, endpoint: endpoint, status: nil, error: error.description, now: now)
        }
        switch outcome {
        case .delivered: metrics?.webhookDeliveries.add([label, "delivered"])
        case .retry: metrics?.webhookDeliveries.add([label, "retried"])
        case .failed(_, let error):
            metrics?.webhookDeliveries.add([label, "failed"])
            ServerLog.event(
                "webhook delivery failed", ["endpoint": label, "delivery": "\(delivery.id)", "eventId": claim.event.id, "error": error],
                level: .warn)
        }
        return outcome
    }

    /// Retry after the schedule's wait for this attempt (plus up to 10 % jitter), or failed when
    /// that falls after `maxRetryHours` from the first attempt.
    static func afterFailure(
        _ delivery: WebhookDelivery, endpoint: DeliveryTarget, status: Int?, error: String, now: Int64
    ) -> WebhookAttemptOutcome {
        let schedule = endpoint.retryScheduleSeconds
        let wait = Int64(schedule[min(max(delivery.attempts - 1, 0), schedule.count - 1)]) * 1000
        let next = now + wait + Int64.random(in: 0...(wait / 10))
        let deadline = (delivery.firstAttemptAt ?? now) + Int64(endpoint.maxRetryHours) * 3_600_000
        guard next <= deadline else { return .failed(status: status, error: error) }
        return .retry(at: next, status: status, error: error)
    }

    /// Sends `request`; no answer within `limit` (also when the transport's own timeout, an idle
    /// one, has not fired) is a timeout.
    static func send(
        _ request: OutboundRequest, through transport: any OutboundHTTP, within limit: Duration
    ) async -> Result<OutboundResponse, OutboundHTTPError> {
        await withTaskGroup(of: Result<OutboundResponse, OutboundHTTPError>?.self) { group in
            group.addTask {
                do throws(OutboundHTTPError) {
                    return .success(try await transport.send(request))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return Task.isCancelled ? nil : .failure(OutboundHTTPError(message: "no answer within \(limit)", kind: .timedOut))
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .failure(OutboundHTTPError(message: "cancelled", kind: .cancelled))
        }
    }
}
