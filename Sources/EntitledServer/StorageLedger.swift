import EntitledConfig
import Entitlements
import Foundation
import Storage
import Synchronization

/// `LedgerStoring` on a `Storage.LedgerStore`: the API's facts become ledger rows (the engine's
/// `Fact` JSON beside the signed text it came from), and projections come from `EngineProjector`.
public final class StorageLedger: LedgerStoring {
    public let store: any LedgerStore
    public let projector: EngineProjector

    /// - Parameters:
    ///   - store: the opened ledger.
    ///   - policy: the policy projections are evaluated with (the API's customer policy).
    public init(store: any LedgerStore, policy: Policy) {
        self.store = store
        self.projector = EngineProjector(policy: policy)
    }

    public func checkReady() async throws { try await store.ping() }

    public func ingest(_ batch: LedgerBatch) async throws(LedgerError) -> IngestOutcome {
        try await mapped {
            var claim: Claim?
            var looseToken: String?
            if let link = batch.link {
                claim = Claim(appUserId: link.appUserId, behaviour: link.restoreBehavior)
                if link.originalTransactionIds.isEmpty {
                    // Facts without a subscription (an app transaction) belong to the customer
                    // through their token: give them the customer's.
                    let customer = try await store.ensureCustomer(
                        appUserId: link.appUserId, appAccountToken: nil, projector: projector, now: batch.receivedAt)
                    looseToken = customer.appAccountToken
                }
            }
            let message: ReceivedMessage
            switch batch.source {
            case .notificationV2(let uuid, let type, let subtype):
                message = ReceivedMessage(
                    notificationUUID: uuid.isEmpty ? nil : uuid, source: .appleV2, body: batch.rawBody,
                    receivedAt: batch.receivedAt, notificationType: type, subtype: subtype)
            case .notificationV1(let key, let type):
                // V1 has no id: the body's digest (without the password) stands in for one.
                message = ReceivedMessage(
                    notificationUUID: "v1:" + key, source: .appleV1, body: batch.rawBody, receivedAt: batch.receivedAt,
                    notificationType: type)
            case .client:
                message = ReceivedMessage(
                    notificationUUID: nil, source: .client, body: batch.rawBody, receivedAt: batch.receivedAt)
            }
            let incoming = batch.facts.map { fact in
                let row = Self.incoming(fact, signed: batch.signed, bundleId: batch.bundleId, looseToken: looseToken)
                projector.recent.remember(fact, as: row.payload)
                return row
            }
            let result = try await store.ingest(
                IngestBatch(message: message, facts: incoming, claim: claim), projector: projector, now: batch.receivedAt)
            var links: [String: IngestOutcome.LinkResult] = [:]
            for link in result.links {
                switch link.outcome {
                case .linked, .alreadyLinked: links[link.originalTransactionId] = .linked
                case .transferred: links[link.originalTransactionId] = .transferred
                case .kept: links[link.originalTransactionId] = .keptByOther
                }
            }
            return IngestOutcome(status: result.status == .duplicate ? .duplicate : .accepted, links: links)
        }
    }

    public func recordRejected(_ delivery: RejectedDelivery) async throws(LedgerError) {
        let source: IngestSource =
            switch delivery.endpoint {
            case "/v1/apple/notifications": .appleV2
            case "/v1/apple/notifications/v1": .appleV1
            default: .client
            }
        _ = try await mapped {
            try await store.recordRejected(
                ReceivedMessage(notificationUUID: nil, source: source, body: delivery.rawBody, receivedAt: delivery.receivedAt),
                code: delivery.code)
        }
    }

    public func renderedCustomer(appUserId: String, context: EvaluationContext) async throws(LedgerError) -> RenderedCustomer? {
        try await mapped {
            guard let stored = try await store.projection(appUserId: appUserId) else { return nil }
            try Self.checkProjected(stored.failure)
            return fresh(stored.projection.state, computedAt: stored.computedAt, context: context)
        }
    }

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
        guard context.policy == projector.policy,
            // A projection computed after `now` (a clock that went back) cannot vouch for `now`.
            computedAt <= context.now,
            let answer = RenderedCustomer(document: document),
            answer.holds(at: context.now, environment: context.environment)
        else { return nil }
        return answer
    }

    public func customer(appUserId: String, context: EvaluationContext) async throws(LedgerError) -> CustomerSnapshot {
        try await mapped {
            guard
                let customer = try await store.customer(
                    appUserId: appUserId, createIfMissing: true, projector: projector, now: context.now)
            else { throw StorageError(.internal, "customer was not created") }
            let facts: [Fact]
            do {
                facts = try EngineProjector.decode(try await store.facts(appUserId: appUserId))
            } catch let error as EngineProjector.UndecodableFact {
                throw LedgerError(.projectionFailed, detail: "\(appUserId): \(error)")
            }
            let state = evaluate(facts: facts, policy: context.policy, now: context.now, environment: context.environment)
            return CustomerSnapshot(customer: Self.record(customer), state: state)
        }
    }

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
                    if needed.contains(stored.id) { factsById[stored.id] = EngineProjector.fact(stored.fact.payload) }
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

    public func subscription(originalTransactionId: String) async throws(LedgerError) -> SubscriptionRecord? {
        try await mapped {
            guard let owned = try await store.subscription(originalTransactionId: originalTransactionId) else {
                return nil
            }
            let customer = try await store.customer(appUserId: owned.appUserId)
            let stored = try await store.facts(appUserId: owned.appUserId)
                .filter { $0.fact.originalTransactionId == originalTransactionId }
            let pairs = stored.compactMap { entry in EngineProjector.fact(entry.fact.payload).map { (entry, $0) } }
            let facts = pairs.map(\.1)
            let notifications = pairs.compactMap { entry, fact -> LedgerHistoryEntry? in
                guard case .notification = fact else { return nil }
                return LedgerHistoryEntry(fact: fact, id: "fact-\(entry.id)", receivedAt: entry.receivedAt)
            }
            return SubscriptionRecord(
                originalTransactionId: originalTransactionId, bundleId: stored.first?.fact.bundleId,
                customer: customer.map(Self.record), facts: facts, notifications: notifications.reversed())
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

    static func record(_ customer: Storage.CustomerRecord) -> CustomerRecord {
        CustomerRecord(appUserId: customer.appUserId, appAccountToken: customer.appAccountToken, createdAt: customer.createdAt)
    }


    /// The engine fact's canonical JSON (its ledger payload): the projector's sorted-keys
    /// encoder's bytes, written by ``SortedJSONEncoder`` where it can.
    static func key(_ fact: Fact) -> String {
        if let bytes = try? SortedJSONEncoder.encode(fact) { return String(decoding: bytes, as: UTF8.self) }
        return (try? EngineProjector.encoder.encode(fact)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// A ledger row for an engine fact: its JSON, its keys, and the signed text it came from (V1
    /// and receipt facts have none: their ``Fact/identity`` stands in, so that a replay is a no-op
    /// whatever JSON this binary encodes them to).
    /// `looseToken` is given to facts without a subscription (app transactions), which belong to
    /// the customer holding that token.
    static func incoming(_ fact: Fact, signed: SignedPayloads, bundleId: String?, looseToken: String?) -> IncomingFact {
        let payload = key(fact)
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
