import EntitledConfig
import Entitlements
import Foundation
import Storage
import Synchronization

/// The one way between the API and storage: it turns verified facts into ledger rows (the
/// engine's `Fact` JSON beside the signed text it came from, or its ``Fact/identity``), appends
/// them with their message through Storage's `LedgerStore`, which projects every affected customer
/// with ``EngineProjector`` in the same transaction, and reads customers, history and
/// subscriptions back.
///
/// Every call is one database transaction on storage's own threads. The projections are evaluated
/// with the one policy merged from every configured app (``FactMapper/policy(for:)-swift.type.method``
/// over the configuration): customers are not per app, and every answer about them, customer or
/// admin, uses it.
public final class FactLedger: ReadinessProbe {
    public let store: any LedgerStore
    public let projector: EngineProjector
    /// Ingest commit latency goes here (nil: not measured).
    let metrics: ServerMetrics?

    /// - Parameters:
    ///   - store: the opened ledger.
    ///   - policy: the policy projections are evaluated with (the configuration's merged policy).
    ///   - cache: the projection path's fast paths and codec (share the API's).
    ///   - grantEnvironments: the environments stored answers merge
    ///     (``FactMapper/grantEnvironments(for:)``).
    public init(
        store: any LedgerStore, policy: Policy, cache: ProjectionCache = ProjectionCache(),
        grantEnvironments: [Environment] = EngineProjector.defaultGrantEnvironments, metrics: ServerMetrics? = nil
    ) {
        self.store = store
        self.metrics = metrics
        self.projector = EngineProjector(policy: policy, cache: cache, grantEnvironments: grantEnvironments)
    }

    /// The context of a customer answer at `now` over the environments stored answers merge.
    public func answerContext(now: Int64) -> EvaluationContext {
        EvaluationContext(policy: projector.policy, environments: projector.grantEnvironments, now: now)
    }

    private var cache: ProjectionCache { projector.cache }

    /// For `/readyz`: the database answers.
    public func checkReady() async throws { try await store.ping() }

    /// Commits a verified delivery: its message (kept for audit; a repeated `notificationUUID` is a
    /// duplicate and changes nothing), its facts (a fact already stored is a no-op) and, for a
    /// client post, its `claim` on the facts' subscriptions, then re-projects every affected
    /// customer, all at once. Facts without a subscription (an app transaction) that come with a
    /// claim belong to the claiming customer through their token, whichever arrives first.
    /// - Returns: `.accepted`, or `.duplicate` when the message was committed before.
    public func ingest(
        _ message: ReceivedMessage, facts: [Fact], signed: SignedPayloads = SignedPayloads(), bundleId: String?,
        claim: Claim? = nil
    ) async throws(LedgerError) -> IngestResult.Status {
        try await mapped {
            var looseToken: String?
            if let claim, facts.contains(where: { if case .appTransaction = $0 { true } else { false } }) {
                let customer = try await store.ensureCustomer(
                    appUserId: claim.appUserId, appAccountToken: nil, projector: projector, now: message.receivedAt)
                looseToken = customer.appAccountToken
            }
            let incoming = facts.map { fact in
                let row = Self.incoming(
                    fact, payload: cache.payload(fact), signed: signed, bundleId: bundleId, looseToken: looseToken)
                cache.remember(fact, as: row.payload)
                return row
            }
            let started = ContinuousClock.now
            let result = try await store.ingest(
                IngestBatch(message: message, facts: incoming, claim: claim), projector: projector, now: message.receivedAt)
            metrics?.ledgerCommitDuration.observe([], (ContinuousClock.now - started).seconds)
            return result.status
        }
    }

    /// Records a rejected delivery for audit; nothing of it is applied.
    public func recordRejected(_ message: ReceivedMessage, code: String) async throws(LedgerError) {
        _ = try await mapped { try await store.recordRejected(message, code: code) }
    }

    /// The stored answer when it holds for `context`. One stored in an older format (or none, by a
    /// server with the cache off) is rendered again and stored first: a new answer format needs no
    /// `rebuild`.
    public func renderedCustomer(appUserId: String, context: EvaluationContext) async throws(LedgerError) -> RenderedCustomer? {
        try await mapped {
            guard var stored = try await store.projection(appUserId: appUserId) else { return nil }
            try Self.checkProjected(stored.failure)
            if cache.storedAnswer(stored.projection.state) == .outdated {
                guard let renewed = try await store.reproject(appUserId: appUserId, projector: projector, now: context.now)
                else { return nil }
                try Self.checkProjected(renewed.failure)
                stored = renewed
            }
            return fresh(stored.projection.state, computedAt: stored.computedAt, context: context)
        }
    }

    /// ``renderedCustomer(appUserId:context:)`` on the calling thread, when the store can read at
    /// once (an HTTP poll thread must not wait); nil means "use the asynchronous calls".
    public func renderedCustomerNow(appUserId: String, context: EvaluationContext) throws(LedgerError) -> RenderedCustomer? {
        do {
            guard case .done(let stored) = try store.stateNow(appUserId: appUserId), let stored else { return nil }
            try Self.checkProjected(stored.failure)
            return fresh(stored.state, computedAt: stored.computedAt, context: context)
        } catch {
            throw Self.ledgerError(error)
        }
    }

    /// A customer whose last projection failed has no answer to give, stored or evaluated.
    private static func checkProjected(_ failure: String?) throws(LedgerError) {
        if let failure { throw LedgerError(.projectionFailed, detail: failure) }
    }

    /// The stored answer when it holds for `context`.
    private func fresh(_ document: [UInt8], computedAt: Int64, context: EvaluationContext) -> RenderedCustomer? {
        guard context.policy == projector.policy, context.environments == projector.grantEnvironments,
            // A projection computed after `now` (a clock that went back) cannot vouch for `now`.
            computedAt <= context.now,
            case .current(let answer) = cache.storedAnswer(document),
            answer.holds(at: context.now, scope: context.scope)
        else { return nil }
        return answer
    }

    /// The customer with their state evaluated from the ledger; creates the customer (with a new
    /// random `appAccountToken`) on first sight.
    public func customer(appUserId: String, context: EvaluationContext) async throws(LedgerError) -> CustomerSnapshot {
        try await mapped {
            guard
                let customer = try await store.customer(
                    appUserId: appUserId, createIfMissing: true, projector: projector, now: context.now)
            else { throw StorageError(.internal, "customer was not created") }
            let facts: [Fact]
            do {
                facts = try projector.decode(try await store.facts(appUserId: appUserId))
            } catch let error as EngineProjector.UndecodableFact {
                throw LedgerError(.projectionFailed, detail: "\(appUserId): \(error)")
            }
            let state = evaluate(facts: facts, policy: context.policy, now: context.now, environments: context.environments)
            return CustomerSnapshot(customer: customer, state: state)
        }
    }

    /// A page of the customer's timeline, newest first, or nil when the customer does not exist.
    /// `cursor` is a `nextCursor` from an earlier page; a malformed one is `.invalidRequest`.
    public func history(appUserId: String, cursor: String?, limit: Int) async throws(LedgerError) -> LedgerHistoryPage? {
        try await mapped {
            guard try await store.customer(appUserId: appUserId) != nil else { return nil }
            let page = try await store.history(appUserId: appUserId, cursor: cursor, limit: limit)
            // Facts' product, price and currency live in their payloads: look them up by id. A
            // notification row has no environment of its own: it is its facts' (Apple signs one
            // environment into the notification and everything it carries).
            let needed = Set(page.entries.filter { $0.kind == .fact }.map(\.id))
            let notifications = Set(page.entries.filter { $0.kind == .notification }.map(\.id))
            var factsById: [Int64: Fact] = [:]
            var environments: [Int64: Environment] = [:]
            if !needed.isEmpty || !notifications.isEmpty {
                for stored in try await store.facts(appUserId: appUserId) {
                    if needed.contains(stored.id) { factsById[stored.id] = cache.fact(stored.fact.payload) }
                    if let id = stored.notificationID, notifications.contains(id), let environment = stored.fact.environment {
                        environments[id] = Environment(rawValue: environment)
                    }
                }
            }
            let entries = page.entries.map { entry in
                Self.historyEntry(
                    entry, fact: factsById[entry.id], environment: entry.kind == .notification ? environments[entry.id] : nil)
            }
            return LedgerHistoryPage(entries: entries, nextCursor: page.nextCursor)
        }
    }

    /// One subscription by `originalTransactionId`, or nil when nothing is known about it.
    public func subscription(originalTransactionId: String) async throws(LedgerError) -> SubscriptionRecord? {
        try await mapped {
            guard let owned = try await store.subscription(originalTransactionId: originalTransactionId) else {
                return nil
            }
            let customer = try await store.customer(appUserId: owned.appUserId)
            let stored = try await store.facts(appUserId: owned.appUserId)
                .filter { $0.fact.originalTransactionId == originalTransactionId }
            let pairs = stored.compactMap { entry in cache.fact(entry.fact.payload).map { (entry, $0) } }
            let facts = pairs.map(\.1)
            let notifications = pairs.compactMap { entry, fact -> LedgerHistoryEntry? in
                guard case .notification = fact else { return nil }
                return LedgerHistoryEntry(fact: fact, id: "fact-\(entry.id)", receivedAt: entry.receivedAt)
            }
            return SubscriptionRecord(
                originalTransactionId: originalTransactionId, bundleId: stored.first?.fact.bundleId,
                customer: customer, facts: facts, notifications: notifications.reversed())
        }
    }

    // MARK: - Mapping

    /// Runs `body`, turning storage failures into the API's ledger errors (details kept for logs).
    private func mapped<T>(_ body: () async throws -> T) async throws(LedgerError) -> T {
        do {
            return try await body()
        } catch {
            throw Self.ledgerError(error)
        }
    }

    private static func ledgerError(_ error: any Error) -> LedgerError {
        switch error {
        case let error as LedgerError: error
        case let error as StorageError:
            LedgerError(error.code == .invalidArgument ? .invalidRequest : .unavailable, detail: error.debugDescription)
        default: LedgerError(.unavailable, detail: String(describing: error))
        }
    }



    /// A ledger row for an engine fact: its JSON (`payload`, ``ProjectionCache/payload(_:)``), its
    /// keys, and the signed text it came from (V1 and receipt facts have none: their
    /// ``Fact/identity`` stands in, so that a replay is a no-op whatever JSON this binary encodes
    /// them to). `looseToken` is given to facts without a subscription (app transactions), which
    /// belong to the customer holding that token.
    static func incoming(
        _ fact: Fact, payload: String, signed: SignedPayloads, bundleId: String?, looseToken: String?
    ) -> IncomingFact {
        let identity = fact.identity ?? payload
        switch fact {
        case .transaction(let f):
            return IncomingFact(
                kind: .transaction, jws: signed.transaction ?? payload, payload: payload, transactionId: f.transactionId,
                originalTransactionId: f.originalTransactionId, appAccountToken: f.appAccountToken,
                environment: f.environment.rawValue, bundleId: bundleId, signedDate: f.signedDate)
        case .renewalInfo(let f):
            return IncomingFact(
                kind: .renewal, jws: signed.renewalInfo ?? payload, payload: payload,
                originalTransactionId: f.originalTransactionId, environment: f.environment.rawValue, bundleId: bundleId,
                signedDate: f.signedDate)
        case .notification(let f):
            return IncomingFact(
                kind: .notification, jws: signed.notification ?? payload, payload: payload, transactionId: f.transactionId,
                originalTransactionId: f.originalTransactionId, environment: f.environment.rawValue, bundleId: bundleId,
                signedDate: f.signedDate)
        case .appTransaction(let f):
            return IncomingFact(
                kind: .appTransaction, jws: signed.appTransaction ?? payload, payload: payload,
                appAccountToken: looseToken, environment: f.environment.rawValue, bundleId: bundleId,
                signedDate: f.signedDate)
        case .receiptEntry(let f):
            return IncomingFact(
                kind: .receipt, jws: identity, payload: payload, transactionId: f.transactionId,
                originalTransactionId: f.originalTransactionId, appAccountToken: f.appAccountToken,
                environment: f.environment.rawValue, bundleId: bundleId, signedDate: f.receiptDate)
        case .pendingRenewal(let f):
            return IncomingFact(
                kind: FactKind(rawValue: "pendingRenewal"), jws: identity, payload: payload,
                originalTransactionId: f.originalTransactionId, environment: f.environment.rawValue, bundleId: bundleId,
                signedDate: f.receiptDate)
        case .v1Notification(let f):
            return IncomingFact(
                kind: FactKind(rawValue: "v1Notification"), jws: identity, payload: payload, transactionId: f.transactionId,
                originalTransactionId: f.originalTransactionId, environment: f.environment.rawValue, bundleId: bundleId,
                signedDate: f.date)
        }
    }

    /// `environment` is a notification row's (its facts'); Production when unknown.
    static func historyEntry(_ entry: HistoryEntry, fact: Fact?, environment: Environment? = nil) -> LedgerHistoryEntry {
        let id = "\(entry.kind.rawValue)-\(entry.id)"
        guard entry.kind == .fact, let fact else {
            return LedgerHistoryEntry(
                id: id, kind: entry.kind == .notification && entry.source == .appleV1 ? .v1Notification : .notification,
                type: entry.notificationType, subtype: entry.subtype, occurredAt: entry.signedDate ?? entry.receivedAt,
                receivedAt: entry.receivedAt, environment: environment ?? .production, transactionId: entry.transactionId,
                originalTransactionId: entry.originalTransactionId)
        }
        return LedgerHistoryEntry(fact: fact, id: id, receivedAt: entry.receivedAt)
    }
}
