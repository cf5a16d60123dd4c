import AppStore
import Entitlements
import GooglePlay
import Storage

/// `googlePlay.orderPrices`: a Play order whose price the purchase answer does not say (an
/// introductory or proration phase of a subscription, every one-time product) is asked of the
/// Orders API (`orders.get`) by a durable job after the purchase is stored, so the ingest never
/// waits on it; the answer is stored as a ``PlayOrderFact`` and the rollups count the price from
/// then on, on every day it applies to.
extension PlayIngest {
    /// Creates the price job of each stored order that needs one, once per order however often
    /// its purchase is announced. Called after the commit, like the acknowledgements.
    func enqueueOrderPrices(_ facts: [Fact], now: Int64) async throws(IngestError) {
        for fact in facts {
            guard let job = PlayOrderPrice(fact), apps[job.packageName]?.app.googlePlay.orderPrices == true else { continue }
            try await enqueueFollowUp(
                kind: PlayOrderPrice.jobKind, key: job.packageName + " " + job.orderId, packageName: job.packageName, subject: job.subject,
                subjectTime: nil, now: now, what: "order price")
        }
    }

    /// Creates the job `(kind, key)` that follows a committed Play fact unless it exists.
    func enqueueFollowUp(
        kind: String, key: String, packageName: String, subject: String, subjectTime: Int64?, now: Int64, what: String
    ) async throws(IngestError) {
        do {
            _ = try await ingest.jobs.enqueueJob(
                kind: kind, key: key, bundleId: packageName, subject: subject, subjectTime: subjectTime, now: now, unlessFactsOf: nil)
        } catch {
            throw .storage(StorageError(.unavailable, "the \(what) job could not be stored", detail: "\(error)"))
        }
    }
}

/// One order to price, as its job's subject carries it: `<orderId> <purchaseToken>`.
struct PlayOrderPrice: Sendable, Equatable {
    /// The job kind that asks the Orders API for an order's price.
    static let jobKind = "playOrderPrice"

    var packageName: String
    var orderId: String
    var purchaseToken: String

    /// The order of `fact` when its price is not known from it: a paid subscription order
    /// without a price, a paid one-time purchase.
    init?(_ fact: Fact) {
        switch fact {
        case .playSubscription(let s):
            guard s.price == nil, s.state.isGranted, let orderId = s.latestOrderId else { return nil }
            self.init(packageName: s.packageName, orderId: orderId, purchaseToken: s.purchaseToken)
        case .playProduct(let p):
            guard p.purchaseState == 0, let orderId = p.orderId else { return nil }
            self.init(packageName: p.packageName, orderId: orderId, purchaseToken: p.purchaseToken)
        default:
            return nil
        }
        // The subject is split at its one space.
        guard !orderId.isEmpty, !orderId.contains(" "), !purchaseToken.contains(" ") else { return nil }
    }

    init(packageName: String, orderId: String, purchaseToken: String) {
        self.packageName = packageName
        self.orderId = orderId
        self.purchaseToken = purchaseToken
    }

    var subject: String { orderId + " " + purchaseToken }

    /// The order of a price job; nil when the job is not one.
    init?(_ job: DurableJob) {
        let parts = job.subject.split(separator: " ", omittingEmptySubsequences: false)
        guard job.kind == Self.jobKind, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        self.init(packageName: job.bundleId, orderId: String(parts[0]), purchaseToken: String(parts[1]))
    }

    /// When the purchase began as the stored snapshots of the token tell (the earliest
    /// `startTime` or `purchaseTimeMillis`, or answer naming the order), and its environment;
    /// nil when no stored snapshot names the order.
    func purchase(in facts: [Fact]) -> (time: Int64, environment: Environment)? {
        var times: [Int64] = []
        var environment: Environment?
        for fact in facts {
            switch fact {
            case .playSubscription(let s) where s.purchaseToken == purchaseToken:
                if let start = s.startTime { times.append(start) }
                if s.latestOrderId == orderId {
                    times.append(s.observedAt)
                    environment = environment ?? s.environment
                }
            case .playProduct(let p) where p.purchaseToken == purchaseToken && p.orderId == orderId:
                times += [p.purchaseTime, p.observedAt]
                environment = environment ?? p.environment
            default:
                continue
            }
        }
        guard let environment, let time = times.min() else { return nil }
        return (time, environment)
    }
}

/// Asks the Orders API for a job's order and stores what it was charged. A run whose success was
/// lost asks again and stores the same fact (a no-op); an order already priced is not asked.
struct PlayOrderPricer: Sendable {
    let play: PlayIngest
    let clock: any EpochClock

    func run(_ job: DurableJob) async throws(JobFailure) {
        guard let order = PlayOrderPrice(job) else { throw JobFailure(retryable: false, "unreadable order price job") }
        guard let clients = play.apps[order.packageName] else {
            throw JobFailure(retryable: false, "no Google Play app \(order.packageName) is configured")
        }
        let stored: [Fact]
        do {
            stored = try await play.storedFacts(purchaseToken: order.purchaseToken)
        } catch {
            throw JobFailure(retryable: true, "storage: \(error)")
        }
        let priced = stored.contains { fact in
            if case .playOrder(let o) = fact { o.orderId == order.orderId } else { false }
        }
        guard !priced else { return }
        guard let purchase = order.purchase(in: stored) else {
            throw JobFailure(retryable: false, "no stored purchase names order \(order.orderId)")
        }
        let answer: Order
        do {
            answer = try await clients.api.order(packageName: order.packageName, orderId: order.orderId)
        } catch {
            throw JobFailure(retryable: error.isRetryable, "\(error.code): \(error.message)")
        }
        let now = clock.nowMilliseconds()
        guard answer.purchaseToken == nil || answer.purchaseToken == order.purchaseToken else {
            throw JobFailure(retryable: false, "Google's order \(order.orderId) names another purchase token")
        }
        guard let fact = PlayOrderFact(
            answer, purchaseToken: order.purchaseToken, orderId: order.orderId, packageName: order.packageName,
            purchaseTime: purchase.time, observedAt: now, environment: purchase.environment)
        else {
            ServerLog.event(
                "play price ignored", ["app": order.packageName, "reason": "the order's total or tax is not an exact ISO 4217 amount"],
                level: .warn)
            return
        }
        let message = ReceivedMessage(
            notificationUUID: nil, source: .googlePlay, body: PlayJSON.encode(answer), receivedAt: now, notificationType: "orderPrice",
            bundleId: order.packageName)
        do {
            _ = try await play.ingest.commitRecordingUnknown(message, facts: [(.playOrder(fact), nil, [])])
        } catch {
            throw JobFailure(retryable: true, "the order's price could not be stored: \(error)")
        }
    }
}
