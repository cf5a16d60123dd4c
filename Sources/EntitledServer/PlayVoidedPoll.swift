import AppStore
import Entitlements
import GooglePlay
import HTTPClient
import Storage

/// What one voided-purchases pass did (``PlayVoidedPoll/runOnce()``).
public enum PlayVoidedPollResult: Sendable, Equatable {
    /// Not due, or another process runs it.
    case notDue
    /// Every voided purchase Google listed in the window was handled and the watermark moved to `through`.
    case committed(through: Int64, report: PlayVoidedReport)
}

/// The voided purchases of one pass, by what became of them.
public struct PlayVoidedReport: Sendable, Equatable, CustomStringConvertible {
    /// Listed by Google in the window.
    public var listed = 0
    /// Stored now: no notification had told the server.
    public var new = 0
    /// Already stored (by a notification or an earlier pass).
    public var known = 0
    /// Entries without a purchase token or a voiding time, or refused by the ledger (recorded as rejected).
    public var rejected = 0

    public init() {}

    public var description: String {
        "listed \(listed), new \(new), known \(known)" + (rejected > 0 ? ", rejected \(rejected)" : "")
    }
}

/// Why a pass failed; its window is redone by the next attempt.
public struct PlayVoidedPollError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// `googlePlay.voidedPurchasesPollMinutes`: the backstop for refunds, chargebacks and revocations
/// whose voided-purchase notification never arrived. Every ``pollMilliseconds`` it tries to claim
/// the app's pass (``ExportStateStore``, under ``name``: at most once per interval across every
/// server on the database), lists `purchases.voidedpurchases` (subscriptions included) from the
/// committed watermark minus ``overlapMilliseconds`` (Google's 30 days back the first time) to
/// now, stores each voided purchase the server does not know yet as the fact its notification
/// would have given, and only then commits the watermark. A pass that fails is redone over the
/// same window (what it stored is known the second time).
public struct PlayVoidedPoll: Service {
    /// Each window starts this much before the watermark: a purchase voided just before the last
    /// pass ended but listed by Google only later is still read.
    public static let overlapMilliseconds: Int64 = 3_600_000
    /// How far back Google lists voided purchases (and the first window's start).
    public static let historyLimitMilliseconds: Int64 = 30 * 86_400_000
    /// How long a claim holds without renewal.
    public static let leaseMilliseconds: Int64 = 15 * 60_000
    /// How often the service asks whether its pass is due.
    public static let pollMilliseconds: Int64 = 60_000

    public let packageName: String
    /// The interval between passes (`voidedPurchasesPollMinutes`).
    public let everyMinutes: Int
    let play: PlayIngest
    let state: any ExportStateStore
    let clock: any EpochClock
    let owner: String

    init(packageName: String, everyMinutes: Int, play: PlayIngest, state: any ExportStateStore, clock: any EpochClock, owner: String) {
        self.packageName = packageName
        self.everyMinutes = everyMinutes
        self.play = play
        self.state = state
        self.clock = clock
        self.owner = owner
    }

    /// The pass's row in `export_state` (export names are `s3://…` or `file://…`, never this).
    public var name: String { "google-play-voided:" + packageName }

    public func run() async {
        await run(sleeper: TaskSleeper())
    }

    /// Tries a pass now and then every ``pollMilliseconds`` until the task is cancelled.
    public func run(sleeper: any Sleeper) async {
        while !Task.isCancelled {
            do {
                if case .committed(let through, let report) = try await runOnce() {
                    ServerLog.event(
                        "play voided purchases polled",
                        ["app": packageName, "through": "\(through)", "listed": "\(report.listed)", "new": "\(report.new)",
                         "rejected": "\(report.rejected)"])
                }
            } catch {
                ServerLog.event("play voided purchases poll failed", ["app": packageName, "error": error.description], level: .error)
            }
            do {
                try await sleeper.sleep(milliseconds: Self.pollMilliseconds)
            } catch {
                return
            }
        }
    }

    /// Claims the pass if it is due and runs it.
    /// - Throws: ``PlayVoidedPollError`` when the pass failed (it is retried later over the same window).
    @discardableResult
    public func runOnce() async throws(PlayVoidedPollError) -> PlayVoidedPollResult {
        let started = clock.nowMilliseconds()
        let claim: ExportClaim
        do {
            guard let claimed = try await state.claimExport(
                name, owner: owner, now: started, leaseUntil: started + Self.leaseMilliseconds, through: started)
            else { return .notDue }
            claim = claimed
        } catch {
            throw PlayVoidedPollError(message: "storage: \(error)")
        }
        let interval = Int64(everyMinutes) * 60_000
        let report: PlayVoidedReport
        do throws(PlayVoidedPollError) {
            // Google refuses a start older than its 30 days; a minute's margin for the request's flight.
            let oldest = started - Self.historyLimitMilliseconds + 60_000
            let start = max((claim.after ?? oldest) - Self.overlapMilliseconds, oldest)
            report = try await pass(from: min(start, claim.through), through: claim.through, now: started)
        } catch {
            let now = clock.nowMilliseconds()
            let retryAt = now + min(interval, 60_000 << Int64(min(claim.failures, 4)))
            _ = try? await state.finishExport(name, owner: owner, outcome: .failed(retryAt: retryAt, error: error.message), now: now)
            play.ingest.metrics.playVoidedPolls.add([packageName, "failed"])
            throw error
        }
        let committed: Bool
        do {
            committed = try await state.finishExport(
                name, owner: owner, outcome: .committed(nextRunAt: started + interval), now: clock.nowMilliseconds())
        } catch {
            throw PlayVoidedPollError(message: "storage: \(error)")
        }
        guard committed else { throw PlayVoidedPollError(message: "lost the lease of \(name) to another process") }
        play.ingest.metrics.playVoidedPolls.add([packageName, "ok"])
        play.ingest.metrics.playVoidedFound.add([packageName], Double(report.new))
        return .committed(through: claim.through, report: report)
    }

    /// Lists the window's voided purchases and stores the new ones.
    private func pass(from start: Int64, through end: Int64, now: Int64) async throws(PlayVoidedPollError) -> PlayVoidedReport {
        guard let clients = play.apps[packageName] else { throw PlayVoidedPollError(message: "no Google Play app \(packageName)") }
        let listed: [VoidedPurchase]
        do {
            listed = try await clients.api.allVoidedPurchases(
                packageName: packageName, startTimeMillis: start, endTimeMillis: end, includeSubscriptions: true,
                includeQuantityBasedPartialRefunds: true)
        } catch {
            throw PlayVoidedPollError(message: "Google: \(error.code): \(error.message)")
        }
        var report = PlayVoidedReport()
        report.listed = listed.count
        for purchase in listed {
            do throws(IngestError) {
                switch try await play.listedVoided(purchase, packageName: packageName, now: now) {
                case .accepted: report.new += 1
                case .duplicate: report.known += 1
                }
            } catch {
                switch error {
                case .rejected(let rejection) where !rejection.isRetryable:
                    await play.ingest.recordRejected(rejection, source: .googlePlay, body: PlayJSON.encode(purchase), now: now)
                    report.rejected += 1
                case .rejected(let rejection): throw PlayVoidedPollError(message: rejection.message)
                case .storage(let failure): throw PlayVoidedPollError(message: "storage: \(failure.message)")
                }
            }
        }
        return report
    }
}

extension PlayIngest {
    /// What the ledger holds of a purchase token (snapshots and voidings), whoever holds it.
    func storedFacts(purchaseToken: String) async throws(IngestError) -> [Fact] {
        let ledger = self.ledger
        do {
            return try await ledger.mapped { try await ledger.store.playFacts(purchaseToken: purchaseToken, projector: ledger.projector) }
        } catch {
            throw .storage(error)
        }
    }

    /// A voided purchase Google listed, stored as the fact its notification would have given
    /// (``voidedFact(purchaseToken:orderId:productType:refundType:voidedTime:voidedSource:voidedReason:voidedQuantity:)``),
    /// with Google's fresh answer for a partial refund; `.duplicate` when the server knows that voiding already.
    func listedVoided(_ purchase: VoidedPurchase, packageName: String, now: Int64) async throws(IngestError) -> IngestResult.Status {
        guard !purchase.purchaseToken.isEmpty, purchase.purchaseToken.utf8.count <= DeveloperNotification.maximumTokenBytes,
            let time = purchase.voidedTimeMillis?.value
        else {
            throw .rejected(Rejection(.invalidRequest, "a listed voided purchase without a purchase token or voidedTimeMillis"))
        }
        guard let clients = apps[packageName] else { throw .rejected(Rejection(.appNotFound, "no Google Play app \(packageName)")) }
        guard let fact = try await voidedFact(
            purchaseToken: purchase.purchaseToken, orderId: purchase.orderId, productType: nil, refundType: purchase.refundType?.rawValue,
            voidedTime: time, voidedSource: purchase.voidedSource, voidedReason: purchase.voidedReason,
            voidedQuantity: purchase.voidedQuantity)
        else { return .duplicate }
        let message = ReceivedMessage(
            notificationUUID: nil, source: .googlePlay, body: PlayJSON.encode(purchase), receivedAt: now,
            notificationType: "voidedPurchasesList", bundleId: packageName)
        return try await commit(message, facts: try await withRefundedUnits(fact, clients: clients, now: now), claim: nil)
    }

    /// The fact of a voiding, in the environment of what is stored about its token (a license
    /// tester's purchase is Sandbox; Production when nothing is), its product type from the
    /// stored purchase when the caller does not know it; nil when that voiding is stored already:
    /// for a full one, a full voiding of that order (a notification and the voided-purchases list
    /// report one voiding at different times: it stays one fact); for a quantity-based partial
    /// one, the same report (one order may be refunded by quantity several times).
    func voidedFact(
        purchaseToken: String, orderId: String?, productType: Int?, refundType: Int?, voidedTime: Int64, voidedSource: Int?,
        voidedReason: Int?, voidedQuantity: Int?
    ) async throws(IngestError) -> Fact? {
        let stored = try await storedFacts(purchaseToken: purchaseToken)
        let partial = refundType == RefundType.quantityBasedPartialRefund.rawValue || voidedQuantity != nil
        var environment = Environment.production
        var knownType: Int?
        for fact in stored {
            switch fact {
            case .playVoided(let v) where v.purchaseToken == purchaseToken && v.orderId == orderId
                && (partial ? v.isPartial && v.voidedTime == voidedTime && v.voidedQuantity == voidedQuantity : !v.isPartial):
                return nil
            case .playSubscription(let s) where s.purchaseToken == purchaseToken: (environment, knownType) = (s.environment, 1)
            case .playProduct(let p) where p.purchaseToken == purchaseToken: (environment, knownType) = (p.environment, 2)
            default: continue
            }
        }
        let fact = Fact.playVoided(
            PlayVoidedPurchaseFact(
                purchaseToken: purchaseToken, orderId: orderId, productType: productType ?? knownType, refundType: refundType,
                voidedTime: voidedTime, voidedSource: voidedSource, voidedReason: voidedReason, environment: environment,
                voidedQuantity: voidedQuantity))
        do throws(MappingError) {
            return try Self.checked(fact)
        } catch {
            throw .rejected(Ingest.rejection(error))
        }
    }
}
