import EntitledConfig
import Entitlements
import Foundation
import Storage
import Synchronization

/// The one way between the API and storage: it appends verified facts, each with the signed text
/// it came from, with their message through Storage's `LedgerStore`, which stores the engine's
/// `Fact`s and projects every affected customer in the same transaction, and reads customers,
/// history and subscriptions back.
///
/// It holds the store's ``projector``: the ``policy``, the ``grantEnvironments`` stored states
/// merge and the JSON seam (the ``ProjectionCache``'s codec) Storage writes and reads the facts'
/// text with. Storage stores each customer's evaluated state in its own encoding; the customer's
/// rendered answer is this server's, rendered from that state on the first read after it changes
/// and stored beside it, keyed by
/// ``RenderedCustomer/formatVersion`` (``renderedCustomer(appUserId:context:)``).
///
/// Every call is one database transaction on storage's own threads. The projections are evaluated
/// with the one policy merged from every configured app (``EntitledConfig/Configuration/policy``
/// over the configuration): customers are not per app, and every answer about them, customer or
/// admin, uses it.
public final class FactLedger: ReadinessProbe {
    public let store: any LedgerStore
    public let policy: Policy
    /// The projection path's fast paths and codec.
    public let cache: ProjectionCache
    /// The environments whose purchases the stored answer merges, primary first
    /// (``EntitledConfig/Configuration/grantEnvironments``).
    private let merged: [Environment]
    /// `merged` as stored answers name it (``EvaluationContext/scope``), written once, not per read.
    private let mergedScope: String
    /// The stored answers the poll-thread reads serve, held while the database is unchanged
    /// (``renderedCustomerNow(appUserId:context:)``, ``renderedHeadNow(appUserId:now:)``).
    let held = HeldAnswers()
    /// Ingest commit latency goes here (nil: not measured).
    let metrics: ServerMetrics?
    /// Rung after every committed ingest: wakes the event feed's long polls.
    public let events = EventBell()
    /// How long answer-change events are held back (`events`); nil: derived at the commit.
    public let eventHold: EventHold?
    /// How storage evaluates and encodes: this ledger's policy, grant environments, event hold
    /// and fact codec, with the console's metric rollups.
    public let projector: Projector

    /// - Parameters:
    ///   - store: the opened ledger.
    ///   - policy: the policy projections are evaluated with (the configuration's merged policy).
    ///   - cache: the projection path's fast paths and codec (share the API's).
    ///   - grantEnvironments: the environments stored answers merge
    ///     (``EntitledConfig/Configuration/grantEnvironments``).
    ///   - eventHold: how long answer-change events are held back; nil derives them at the commit.
    public init(
        store: any LedgerStore, policy: Policy, cache: ProjectionCache = ProjectionCache(),
        grantEnvironments: [Environment] = FactLedger.defaultGrantEnvironments, metrics: ServerMetrics? = nil,
        eventHold: EventHold? = nil
    ) {
        self.eventHold = eventHold
        self.store = store
        self.policy = policy
        self.cache = cache
        self.merged = grantEnvironments
        self.mergedScope = EvaluationContext.scope(grantEnvironments)
        self.metrics = metrics
        projector = Projector(
            policy: policy, grantEnvironments: grantEnvironments, maintainsMetrics: true, eventHold: eventHold,
            codec: cache.codec)
    }

    /// The ledger a configuration's server uses: its merged policy and grant environments.
    public convenience init(
        store: any LedgerStore, configuration: Configuration, cache: ProjectionCache = ProjectionCache(), metrics: ServerMetrics? = nil
    ) {
        self.init(
            store: store, policy: configuration.policy, cache: cache,
            grantEnvironments: configuration.grantEnvironments, metrics: metrics,
            eventHold: EventHold(settleSeconds: configuration.events.settleSeconds, maxHoldSeconds: configuration.events.maxHoldSeconds))
    }

    /// `apps[].grantEnvironments`' default.
    public static let defaultGrantEnvironments: [Environment] = [.production, .sandbox]

    /// The environments stored answers merge.
    public var grantEnvironments: [Environment] { merged }

    /// The context of a customer answer at `now` over the environments stored answers merge.
    public func answerContext(now: Int64) -> EvaluationContext {
        EvaluationContext(policy: policy, environments: merged, now: now)
    }

    /// For `/readyz`: the database answers.
    public func checkReady() async throws { try await store.ping() }

    /// Commits a verified delivery: its message (kept for audit; a repeated `notificationUUID` is a
    /// duplicate and changes nothing), its facts, each with the signed text it came from (a fact
    /// already stored is a no-op) and, for a client post, its `claim` on the facts' subscriptions,
    /// then re-projects every affected customer, all at once. Facts without a subscription (an app
    /// transaction) that come with a claim belong to the claiming customer through their token,
    /// whichever arrives first.
    /// - Returns: `.accepted`, or `.duplicate` when the message was committed before.
    public func ingest(
        _ message: ReceivedMessage, facts: [(fact: Fact, signed: String?)], claim: Claim? = nil
    ) async throws(StorageError) -> IngestResult.Status {
        try await mapped {
            let started = ContinuousClock.now
            let result = try await store.ingest(message, facts: facts, claim: claim, projector: projector, now: message.receivedAt)
            metrics?.ledgerCommitDuration.observe([], (ContinuousClock.now - started).seconds)
            if result.status == .accepted { events.ring() }
            return result.status
        }
    }

    /// Records a rejected delivery for audit; nothing of it is applied.
    public func recordRejected(_ message: ReceivedMessage, code: String) async throws(StorageError) {
        _ = try await mapped { try await store.recordRejected(message, code: code) }
    }

    /// The stored answer when it holds for `context`. None stored for the customer's current
    /// state (a write changed it), or one of an older format, is rendered from the stored state and
    /// stored first: a new answer format needs no `rebuild`.
    public func renderedCustomer(appUserId: String, context: EvaluationContext) async throws(StorageError) -> RenderedCustomer? {
        try await mapped {
            guard var stored = try await store.projection(appUserId: appUserId) else { return nil }
            try Self.checkProjected(stored.failure)
            switch cache.storedAnswer(stored.answer) {
            case .current(let answer): return fresh(answer, computedAt: stored.computedAt, context: context)
            case .unusable: return nil
            case .outdated: break
            }
            // Another context (`?environment=`) is never served a stored answer: none to render.
            guard context.policy == policy, context.environments == merged else { return nil }
            var rendered = cache.answer(rendering: stored.document)
            if rendered == nil {
                // A state stored before storage kept its own encoding: projected again first.
                guard let renewed = try await store.reproject(appUserId: appUserId, projector: projector, now: context.now)
                else { return nil }
                try Self.checkProjected(renewed.failure)
                stored = renewed
                rendered = cache.answer(rendering: stored.document)
            }
            guard let rendered else { return nil }
            // Not stored when a write changed the state meanwhile: the next read renders that one.
            // A cache fill: failing to store it does not fail the read it answers.
            _ = try? await store.storeAnswer(rendered.document, appUserId: appUserId, document: stored.document)
            return fresh(rendered, computedAt: stored.computedAt, context: context)
        }
    }

    /// ``renderedCustomer(appUserId:context:)`` on the calling thread, when the store can read at
    /// once (an HTTP poll thread must not wait) and holds a current answer; nil means "use the
    /// asynchronous calls".
    public func renderedCustomerNow(appUserId: String, context: EvaluationContext) throws(StorageError) -> RenderedCustomer? {
        guard let held = try heldNow(appUserId: appUserId) else { return nil }
        return fresh(held.rendered, computedAt: held.computedAt, context: context)
    }

    /// The head of ``renderedCustomerNow(appUserId:context:)``'s answer for the merged answer at
    /// `now` (``answerContext(now:)``, which the stored answers are by construction, so no context
    /// is compared), its body not copied: what the offerings read needs.
    func renderedHeadNow(appUserId: String, now: Int64) throws(StorageError) -> RenderedCustomer.Head? {
        guard let held = try heldNow(appUserId: appUserId), held.computedAt <= now, held.rendered.holds(at: now, scope: mergedScope)
        else { return nil }
        return held.rendered.head
    }

    /// The customer's stored answer (``storedNow(appUserId:)``), served from ``held`` while the
    /// database is unchanged since it was read, else read from the store and held.
    private func heldNow(appUserId: String) throws(StorageError) -> HeldAnswers.Held? {
        // The mark before the row: the row read after it is current while the store answers it.
        let mark = changeMark()
        if let mark, let found = held.held(appUserId: appUserId, mark: mark) { return found }
        guard let stored = try storedNow(appUserId: appUserId),
            let rendered = RenderedCustomer(head: stored.head, bodyStart: stored.bodyStart, document: stored.answer)
        else { return nil }
        let answer = HeldAnswers.Held(rendered: rendered, computedAt: stored.computedAt)
        if let mark { held.hold(answer, appUserId: appUserId, mark: mark) }
        return answer
    }

    /// The store's change mark when it reads one at once and the fast paths are on; nil: nothing
    /// is served from ``held`` or held in it.
    private func changeMark() -> Int64? {
        guard cache.enabled, case .done(let mark)? = try? store.changeMarkNow() else { return nil }
        return mark
    }

    /// The customer's stored row read at once with the head of its current answer; nil when the
    /// store cannot read at once, there is no such customer or no current answer is stored. A
    /// customer whose projection failed throws.
    private func storedNow(
        appUserId: String
    ) throws(StorageError) -> (answer: [UInt8], head: RenderedCustomer.Head, bodyStart: Int, computedAt: Int64)? {
        do {
            guard case .done(let stored) = try store.stateNow(appUserId: appUserId), let stored else { return nil }
            try Self.checkProjected(stored.failure)
            guard let answer = stored.answer, let (head, bodyStart) = cache.storedHead(answer) else { return nil }
            return (answer, head, bodyStart, stored.computedAt)
        } catch {
            throw Self.storageError(error)
        }
    }

    /// A customer whose last projection failed has no answer to give, stored or evaluated.
    private static func checkProjected(_ failure: String?) throws(StorageError) {
        if let failure { throw StorageError(.projectionFailed, "this customer's projection failed", detail: failure) }
    }

    /// The stored answer when it holds for `context`.
    private func fresh(_ answer: RenderedCustomer, computedAt: Int64, context: EvaluationContext) -> RenderedCustomer? {
        guard context.policy == policy, context.environments == merged,
            // A projection computed after `now` (a clock that went back) cannot vouch for `now`.
            computedAt <= context.now,
            // The context's environments are `merged`, so its scope is `mergedScope`.
            answer.holds(at: context.now, scope: mergedScope)
        else { return nil }
        return answer
    }

    /// The customer with their state evaluated from the ledger; creates the customer (with a new
    /// random `appAccountToken`) on first sight.
    public func customer(appUserId: String, context: EvaluationContext) async throws(StorageError) -> CustomerSnapshot {
        try await mapped {
            guard
                let customer = try await store.customer(
                    appUserId: appUserId, createIfMissing: true, projector: projector, now: context.now)
            else { throw StorageError(.internal, "customer was not created") }
            // Every stored fact is an engine fact: one that no longer decodes (a damaged row, a format
            // this binary does not know) leaves no answer to give.
            let facts = try await store.facts(appUserId: appUserId, projector: projector).map { stored throws(StorageError) in
                guard let fact = stored.fact else {
                    throw StorageError(
                        .projectionFailed, "this customer's projection failed",
                        detail: "\(appUserId): fact \(stored.id) (\(stored.kind)) does not decode as an engine fact")
                }
                return fact
            }
            let state = evaluate(facts: facts, policy: context.policy, now: context.now, environments: context.environments)
            return CustomerSnapshot(customer: customer, state: state)
        }
    }

    /// Logs an offer signature before it is answered.
    public func recordOfferSignature(_ record: OfferSignatureRecord) async throws(StorageError) {
        try await mapped { try await store.recordOfferSignature(record) }
    }

    /// Spends units of a consumable (``Storage/ConsumableSpending``), from the first of the
    /// ``grantEnvironments`` whose balance covers them; the customer's stored answer is
    /// re-projected in the same transaction.
    public func spend(
        appUserId: String, productId: String, quantity: Int, idempotencyKey: String, now: Int64
    ) async throws(StorageError) -> SpendOutcome {
        let request = SpendRequest(
            appUserId: appUserId, productId: productId, quantity: quantity, idempotencyKey: idempotencyKey,
            environments: merged)
        return try await mapped { try await store.spend(request, projector: projector, now: now) }
    }

    /// A page of the customer's timeline, newest first, or nil when the customer does not exist.
    /// `cursor` is a `nextCursor` from an earlier page; a malformed one is `INVALID_ARGUMENT`.
    public func history(appUserId: String, cursor: String?, limit: Int) async throws(StorageError) -> LedgerHistoryPage? {
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
                for stored in try await store.facts(appUserId: appUserId, projector: projector) {
                    if needed.contains(stored.id) { factsById[stored.id] = stored.fact }
                    if let id = stored.notificationID, notifications.contains(id), let fact = stored.fact {
                        environments[id] = fact.environment
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

    /// When the notification Apple numbered `notificationUUID` was committed here, if it was.
    public func notificationReceivedAt(notificationUUID: String) async throws(StorageError) -> Int64? {
        try await mapped { try await store.notificationReceivedAt(notificationUUID: notificationUUID) }
    }

    /// One subscription by `originalTransactionId`, or nil when nothing is known about it.
    public func subscription(originalTransactionId: String) async throws(StorageError) -> SubscriptionRecord? {
        try await mapped {
            guard let owned = try await store.subscription(originalTransactionId: originalTransactionId) else {
                return nil
            }
            // An unlinked subscription's placeholder is nobody's: answered without a customer.
            let customer = UnlinkedSubscription.isKey(owned.appUserId) ? nil : try await store.customer(appUserId: owned.appUserId)
            let stored = try await store.facts(appUserId: owned.appUserId, projector: projector)
                .filter { $0.fact?.ledgerOriginalTransactionId == originalTransactionId }
            let pairs = stored.compactMap { entry in entry.fact.map { (entry, $0) } }
            let facts = pairs.map(\.1)
            let notifications = pairs.compactMap { entry, fact -> LedgerHistoryEntry? in
                guard case .notification = fact else { return nil }
                return LedgerHistoryEntry(fact: fact, id: "fact-\(entry.id)", receivedAt: entry.receivedAt)
            }
            return SubscriptionRecord(
                originalTransactionId: originalTransactionId, bundleId: stored.first?.bundleId,
                customer: customer, facts: facts, notifications: notifications.reversed())
        }
    }

    /// The facts of subscription `originalTransactionId` (its owner's facts about it), without the
    /// owner's record: the retention endpoint's one read. Empty when nothing is known of it.
    public func subscriptionFacts(originalTransactionId: String) async throws(StorageError) -> [Fact] {
        try await mapped {
            guard let owned = try await store.subscription(originalTransactionId: originalTransactionId) else { return [] }
            return try await store.facts(appUserId: owned.appUserId, projector: projector).compactMap { entry in
                entry.fact.flatMap { $0.ledgerOriginalTransactionId == originalTransactionId ? $0 : nil }
            }
        }
    }

    // MARK: - Mapping

    /// Runs `body`, its failures as storage's own errors (anything else: the store is unavailable).
    func mapped<T>(_ body: () async throws -> T) async throws(StorageError) -> T {
        do {
            return try await body()
        } catch {
            throw Self.storageError(error)
        }
    }

    static func storageError(_ error: any Error) -> StorageError {
        (error as? StorageError) ?? StorageError(.unavailable, "storage is unavailable", detail: String(describing: error))
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
