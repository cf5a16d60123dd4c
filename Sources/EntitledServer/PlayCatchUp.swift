import AppStore
import EntitledConfig
import Entitlements
import GooglePlay
import Storage

/// What one Play catch-up did (`entitled reconcile` prints its ``description``).
public struct PlayCatchUpReport: Sendable, Equatable, CustomStringConvertible {
    /// Purchase tokens the ledger holds (subscriptions and one-time products).
    public var tokens = 0
    /// Not asked again: their newest snapshot is final (a subscription expired or its pending
    /// purchase canceled; a one-time purchase canceled, voided in full or refunded to the last unit).
    public var final = 0
    /// Google's answer differed from the newest snapshot: stored.
    public var changed = 0
    /// Google's answer was the newest snapshot's: nothing stored.
    public var unchanged = 0
    /// Tokens Google did not answer for (after the client's retries), with why, at most
    /// ``PlayCatchUp/maxReportedFailures`` kept.
    public var failures: [String] = []
    public var failed = 0

    public init() {}

    public var description: String {
        "tokens \(tokens), final \(final), changed \(changed), unchanged \(unchanged), failed \(failed)"
    }
}

/// Why a catch-up stopped: storage failed (Google's failures are the report's, per token).
public struct PlayCatchUpError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The Play counterpart of reconciliation (`entitled reconcile --app PACKAGE`): Google keeps no
/// notification history to read back, so the catch-up asks the Developer API again about every
/// purchase token the ledger holds of the app (`purchases.subscriptionsv2.get` for a subscription,
/// `purchases.products.get` for a one-time product; not those whose newest snapshot is final) and
/// stores each answer that differs from the newest
/// snapshot, through the same path as a notification's (linked, acknowledged). Running it twice
/// stores nothing the second time unless Google's answer changed in between.
public struct PlayCatchUp: Sendable {
    /// Failures listed in the report; the rest are only counted.
    public static let maxReportedFailures = 100
    /// Tokens asked about at once.
    public static let concurrency = 8
    /// Tokens read from the ledger per page.
    static let pageSize = 1000

    public let packageName: String
    let play: PlayIngest

    /// One pass over every stored token of the app.
    public func run() async throws(PlayCatchUpError) -> PlayCatchUpReport {
        guard let clients = play.apps[packageName] else { throw PlayCatchUpError(message: "no Google Play app \(packageName)") }
        var report = PlayCatchUpReport()
        var after = ""
        while true {
            let tokens: [String]
            do {
                tokens = try await play.ledger.store.playPurchaseTokens(packageName: packageName, after: after, limit: Self.pageSize)
            } catch {
                throw PlayCatchUpError(message: "storage: \(error)")
            }
            report.tokens += tokens.count
            try await refresh(tokens, clients: clients, into: &report)
            guard tokens.count == Self.pageSize, let last = tokens.last else { return report }
            after = last
        }
    }

    /// Asks about `tokens`, ``concurrency`` at a time.
    private func refresh(_ tokens: [String], clients: PlayClients, into report: inout PlayCatchUpReport) async throws(PlayCatchUpError) {
        let play = self.play
        let outcomes = await withTaskGroup(of: (String, Result<PlayIngest.Refreshed, IngestError>).self) { group in
            var next = tokens.makeIterator()
            func add() -> Bool {
                guard let token = next.next() else { return false }
                group.addTask {
                    do throws(IngestError) {
                        return (token, .success(try await play.refresh(clients, token: token, now: play.ingest.clock.nowMilliseconds())))
                    } catch {
                        return (token, .failure(error))
                    }
                }
                return true
            }
            for _ in 0..<Self.concurrency where !add() { break }
            var outcomes: [(String, Result<PlayIngest.Refreshed, IngestError>)] = []
            while let outcome = await group.next() {
                outcomes.append(outcome)
                _ = add()
            }
            return outcomes
        }
        for (token, outcome) in outcomes {
            switch outcome {
            case .success(.final): report.final += 1
            case .success(.changed): report.changed += 1
            case .success(.unchanged): report.unchanged += 1
            case .failure(.storage(let failure)): throw PlayCatchUpError(message: "storage: \(failure.message)")
            case .failure(.rejected(let rejection)):
                report.failed += 1
                if report.failures.count < Self.maxReportedFailures {
                    report.failures.append("\(token.prefix(24))…: \(rejection.code.rawValue): \(rejection.message)")
                }
            }
        }
    }
}

extension PlayIngest {
    /// What asking Google again about a token did.
    enum Refreshed: Sendable, Equatable {
        /// Its newest snapshot is final: not asked.
        case final
        /// Google's answer differed: stored.
        case changed
        /// Google's answer was the newest snapshot's.
        case unchanged
    }

    /// Asks Google about a stored purchase token again (`subscriptionsv2.get` for a subscription,
    /// `products.get` for a one-time product, whichever its snapshots are) and stores the answer
    /// when it differs from the newest snapshot (its time of observation aside).
    func refresh(_ clients: PlayClients, token: String, now: Int64) async throws(IngestError) -> Refreshed {
        let stored = try await storedFacts(purchaseToken: token)
        let fact: Fact
        guard let newest = PlayStoredPurchase(stored, token: token) else {
            // Listed because it has a snapshot: only a concurrent erasure gets here.
            return .final
        }
        if newest.isFinal { return .final }
        switch newest {
        case .subscription(let newest):
            var fresh = try await subscription(clients, token: token, now: now)
            fresh.observedAt = newest.observedAt
            if fresh == newest { return .unchanged }
            fresh.observedAt = now
            fact = .playSubscription(fresh)
        case .product(let newest, _):
            var fresh = try await product(clients, productId: newest.productId, token: token, now: now)
            fresh.observedAt = newest.observedAt
            if fresh == newest { return .unchanged }
            fresh.observedAt = now
            fact = .playProduct(fresh)
        }
        let message = ReceivedMessage(
            notificationUUID: nil, source: .googlePlay, body: PlayJSON.encode(["purchaseToken": token]), receivedAt: now,
            notificationType: "catchUp", bundleId: clients.app.packageName)
        _ = try await commit(message, facts: [fact], claim: try await successorClaim([fact]))
        return .changed
    }
}

extension AssembledServer {
    /// The catch-up of the Google Play app `packageName`; nil when no such app is configured.
    public func playCatchUp(packageName: String) -> PlayCatchUp? {
        guard let play = playIngest, play.apps[packageName] != nil else { return nil }
        return PlayCatchUp(packageName: packageName, play: play)
    }
}
