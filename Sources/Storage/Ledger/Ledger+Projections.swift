import Entitlements

// Projections: a customer's facts read back, evaluated and stored as rows and an encoded state.

extension Ledger {
    static func factColumns(jws: Bool) -> SQLQuery {
        let signed: SQLQuery = jws ? "f.jws" : "''"
        let signedPacked: SQLQuery = jws ? "f.signed_packed" : "NULL"
        return """
            f.id, f.notification_id, f.received_at, f.kind, \(signed) AS jws, f.payload, f.transaction_id,
            f.original_transaction_id, f.app_account_token, f.environment, f.bundle_id, f.signed_date, f.jws_sha256,
            \(signedPacked) AS signed_packed, f.payload_packed
            """
    }

    /// The facts of the customer `id` (its own ids' and its aliases'), in evaluation order.
    static func facts(of id: Int64, jws: Bool) -> SQLQuery {
        """
        SELECT * FROM (
            SELECT \(factColumns(jws: jws)) FROM facts f JOIN links l ON l.original_transaction_id = f.original_transaction_id
            WHERE l.customer_id IN (SELECT id FROM customers WHERE id = \(id) OR merged_into = \(id))
            UNION ALL
            SELECT \(factColumns(jws: jws)) FROM facts f
            WHERE f.original_transaction_id IS NULL
              AND f.app_account_token IN (SELECT app_account_token FROM customers WHERE id = \(id) OR merged_into = \(id))
        ) AS cf ORDER BY COALESCE(signed_date, 0), id
        """
    }

    /// A customer's facts without their signed text.
    func factsWithoutJWS(of id: Int64) -> SQLQuery { Self.facts(of: id, jws: false) }

    /// A customer's facts: those of every subscription linked to any of its ids, plus those without
    /// a subscription that carry any of its ids' tokens, each decoded by `projector` (nil when it does not decode).
    func facts(of customer: CustomerRecord, projector: Projector) throws -> [StoredFact] {
        let reader = SignedTextReader(session: session)
        return try session.query(Self.facts(of: customer.id, jws: true)).map { row in
            let texts = try FactPayload.texts(row)
            let columns = try row.decode(StoredFactColumns.self)
            let signed = try reader.text(raw: Array(columns.jws.utf8), packed: columns.signedPacked, context: texts, message: columns.notificationId)
            return StoredFact(
                id: columns.id, notificationID: columns.notificationId, receivedAt: columns.receivedAt, kind: columns.kind,
                signed: String(decoding: signed, as: UTF8.self), bundleId: columns.bundleId,
                fact: projector.decode(String(decoding: texts.json, as: UTF8.self)))
        }
    }

    /// The engine facts of a customer's fact rows (``factsWithoutJWS``), in order: `known` ones as
    /// they are, the others decoded.
    /// - Throws: ``UndecodableFact`` for a row that is no engine fact: the customer cannot be
    ///   projected (an answer computed without it could grant or deny wrongly).
    static func engineFacts(_ rows: [SQLRow], projector: Projector, known: [String: Fact]) throws -> [Fact] {
        var facts: [Fact] = []
        facts.reserveCapacity(rows.count)
        for row in rows {
            let text = try FactPayload.text(row)
            guard let fact = known[text] ?? projector.decode(text) else {
                throw try row.decode(UndecodableFact.self)
            }
            facts.append(fact)
        }
        return facts
    }

    /// A fact's columns as ``facts(of:projector:)`` returns them (its JSON: ``FactPayload``).
    private struct StoredFactColumns: Decodable {
        var id: Int64
        var notificationId: Int64?
        var receivedAt: Int64
        var kind: String
        var jws: String
        var signedPacked: [UInt8]?
        var bundleId: String?
    }

    /// A stored fact whose text is no engine fact this binary knows.
    struct UndecodableFact: Error, CustomStringConvertible, Decodable {
        var id: Int64
        var kind: String
        var description: String { "fact \(id) (\(kind)) does not decode as an engine fact" }
    }

    /// Evaluates a customer from the ledger; throws when a fact does not decode or the projector
    /// fails for them.
    func project(
        _ customer: CustomerRecord, rows: [SQLRow], projector: Projector, now: Int64, known: [String: Fact] = [:]
    ) throws -> CustomerProjection {
        try projectWithFacts(customer, rows: rows, projector: projector, now: now, known: known).projection
    }

    /// ``project(_:rows:projector:now:known:)`` with the engine facts it evaluated (for the rollups).
    func projectWithFacts(
        _ customer: CustomerRecord, rows: [SQLRow], projector: Projector, now: Int64, known: [String: Fact] = [:]
    ) throws -> (projection: CustomerProjection, facts: [Fact]) {
        let facts = try Self.engineFacts(rows, projector: projector, known: known)
        return (try projector.projection(customer: customer, facts: facts, now: now).canonical, facts)
    }

    /// Recomputes and stores one customer's projection. Returns the customer and, when the
    /// projector failed for it, the failure (then marked on the customer's stored projection
    /// instead: one customer that cannot be projected must not fail everyone's transaction).
    /// With a `cause`, the change of the customer's answer is written to the outbox as events, or
    /// held back (``Projector/eventHold``); `releasing` releases a hold: the events of the
    /// customer's history from that signed date (``emitEvents(for:facts:origins:after:document:projector:cause:from:now:)``).
    @discardableResult
    func recompute(
        customerID: Int64, projector: Projector, now: Int64, known: [String: Fact] = [:], cause: EventCause? = nil,
        releasing: Int64? = nil
    ) throws -> (CustomerRecord, ProjectionFailure?) {
        // Lock (PostgreSQL) and load the customer, its facts and its stored projection: one round trip.
        let results = try session.pipeline([
            isPostgres ? Self.customerForUpdate(id: customerID) : Self.customer(id: customerID),
            factsWithoutJWS(of: customerID),
            Self.state(customerID: customerID),
            Self.group(customerID),
        ])
        guard var customer = try results[0].first.map(Self.decodeCustomer) else {
            throw StorageError(.notFound, "customer not found", detail: "id \(customerID)")
        }
        // Merged meanwhile (another transaction made it an alias): its merged customer is projected.
        if let root = try results[0].first?.optionalInt(4), root != customerID {
            return try recompute(customerID: root, projector: projector, now: now, known: known, releasing: releasing)
        }
        customer.aliases = Self.others(try results[3].map { try $0.text(1) }, than: customer.appUserId)
        let stored = try results[2].first.map(Self.decodeState)
        let projection: CustomerProjection
        let document: CustomerDocument
        let facts: [Fact]
        do {
            facts = try Self.engineFacts(results[1], projector: projector, known: known)
            let projected = try projector.projectionAndDocument(customer: customer, facts: facts, now: now)
            (projection, document) = (projected.projection.canonical, projected.document)
        } catch {
            let failure = ProjectionFailure(appUserId: customer.appUserId, reason: String(describing: error))
            try markFailed(customer, failure: failure, kept: stored?.projection, now: now)
            return (customer, failure)
        }
        // A failure mark is only cleared by rewriting every row (the rows kept may be stale).
        try write(projection, for: customer, now: now, previous: stored?.failure == nil ? stored?.projection : nil)
        noteProjection(stored?.projection, projection)
        try updateMetrics(customerID: customer.id, facts: facts, ids: try results[1].map { try $0.int(0) }, projector: projector)
        if let cause, let hold = projector.eventHold {
            try holdEvents(customerID: customer.id, earliestSignedDate: cause.earliestSignedDate, hold: hold, now: now)
        } else if cause != nil || releasing != nil {
            let origins = try results[1].map {
                FactOrigin(
                    notificationID: try $0.optionalInt(1), transactionId: try $0.optionalText(6), signedDate: try $0.optionalInt(11) ?? 0,
                    bundleId: try $0.optionalText(10))
            }
            try emitEvents(
                for: customer, facts: facts, origins: origins, after: projection, document: document, projector: projector, cause: cause,
                from: cause?.earliestSignedDate ?? releasing ?? 0, now: now)
        }
        return (customer, nil)
    }

    /// Stores a projection: the state row (encoded state + encoded rows, the hot read) and the
    /// indexed row tables. Only rows that differ from `previous` are written; without `previous`
    /// every row of the customer is replaced. The reader's answer stored beside the state is kept
    /// while the state is the same, and dropped when it changes (it was rendered from the old one).
    func write(_ projection: CustomerProjection, for customer: CustomerRecord, now: Int64, previous: CustomerProjection?) throws {
        typealias EntitlementKey = String
        func key(_ row: EntitlementRow) -> EntitlementKey { row.entitlement + "\u{0}" + row.environment }
        let oldEntitlements = Dictionary((previous?.entitlements ?? []).map { (key($0), $0) }, uniquingKeysWith: { a, _ in a })
        let oldSubscriptions = Dictionary((previous?.subscriptions ?? []).map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { a, _ in a })
        // Every write below goes in one pipeline (one round trip on PostgreSQL).
        var statements: [SQLQuery] = []
        if previous == nil {
            statements.append(("DELETE FROM entitlement_projections WHERE customer_id = \(customer.id)" as SQLQuery))
            statements.append(("DELETE FROM subscription_projections WHERE customer_id = \(customer.id)" as SQLQuery))
        }
        let newEntitlementKeys = Set(projection.entitlements.map(key))
        for (entitlementKey, row) in oldEntitlements where !newEntitlementKeys.contains(entitlementKey) {
            statements.append((
                "DELETE FROM entitlement_projections WHERE customer_id = \(customer.id) AND entitlement = \(row.entitlement) AND environment = \(row.environment)" as SQLQuery))
        }
        for row in projection.entitlements where oldEntitlements[key(row)] != row {
            statements.append((
                """
                INSERT INTO entitlement_projections (customer_id, entitlement, environment, status, active, product_id,
                    original_transaction_id, expires_at, grace_until, will_renew)
                VALUES (\(customer.id), \(row.entitlement), \(row.environment), \(row.status), \(row.active), \(row.productId), \(row.originalTransactionId), \(row.expiresAt), \(row.graceUntil), \(row.willRenew))
                ON CONFLICT (customer_id, entitlement, environment) DO UPDATE SET status = excluded.status,
                    active = excluded.active, product_id = excluded.product_id,
                    original_transaction_id = excluded.original_transaction_id, expires_at = excluded.expires_at,
                    grace_until = excluded.grace_until, will_renew = excluded.will_renew
                """ as SQLQuery))
        }
        let newOTIDs = Set(projection.subscriptions.map(\.originalTransactionId))
        for otid in oldSubscriptions.keys where !newOTIDs.contains(otid) {
            // Only if still ours: after a transfer the new owner may already have taken the row.
            statements.append((
                "DELETE FROM subscription_projections WHERE original_transaction_id = \(otid) AND customer_id = \(customer.id)" as SQLQuery))
        }
        for row in projection.subscriptions where oldSubscriptions[row.originalTransactionId] != row {
            statements.append((
                """
                INSERT INTO subscription_projections (original_transaction_id, customer_id, product_id, group_id, status,
                    expires_at, grace_until, auto_renew, environment)
                VALUES (\(row.originalTransactionId), \(customer.id), \(row.productId), \(row.group), \(row.status), \(row.expiresAt), \(row.graceUntil), \(row.autoRenew), \(row.environment))
                ON CONFLICT (original_transaction_id) DO UPDATE SET customer_id = excluded.customer_id,
                    product_id = excluded.product_id, group_id = excluded.group_id, status = excluded.status,
                    expires_at = excluded.expires_at, grace_until = excluded.grace_until,
                    auto_renew = excluded.auto_renew, environment = excluded.environment
                """ as SQLQuery))
        }
        statements.append((
            """
            INSERT INTO customer_states (app_user_id, customer_id, app_account_token, created_at, state, projection_rows,
                                         computed_at, projection_error)
            VALUES (\(customer.appUserId), \(customer.id), \(customer.appAccountToken), \(customer.createdAt), \(String(decoding: projection.state, as: UTF8.self)), \(RowCodec.encode(projection)), \(now), NULL)
            ON CONFLICT (app_user_id) DO UPDATE SET state = excluded.state, projection_rows = excluded.projection_rows,
                computed_at = excluded.computed_at, projection_error = NULL,
                answer = CASE WHEN customer_states.state = excluded.state THEN customer_states.answer ELSE NULL END
            """ as SQLQuery))
        _ = try session.pipeline(statements)
    }

    static let stateColumns: SQLQuery =
        "customer_id AS id, app_user_id, app_account_token, created_at, state, projection_rows, computed_at, projection_error, answer"
    /// The hot read's statement, its text built once.
    private static let stateByUser = SQLFixedQuery<String> { appUserId in
        "SELECT \(stateColumns) FROM customer_states WHERE app_user_id = \(appUserId)"
    }
    static func state(appUserId: String) -> SQLQuery { stateByUser(appUserId) }
    static func state(customerID: Int64) -> SQLQuery {
        "SELECT \(stateColumns) FROM customer_states WHERE customer_id = \(customerID)"
    }

    /// A stored state's columns, its customer's included (``stateColumns``): the hot reads decode
    /// their row once.
    struct StateColumns: Decodable {
        var id: Int64
        var appUserId: String
        var appAccountToken: String
        var createdAt: Int64
        var state: String
        var projectionRows: String
        var computedAt: Int64
        var projectionError: String?
        var answer: String?

        var customer: CustomerRecord {
            CustomerRecord(id: id, appUserId: appUserId, appAccountToken: appAccountToken, createdAt: createdAt)
        }
    }

    /// A stored answer's columns, its customer's included (``answer(appUserId:)``).
    struct AnswerColumns: Decodable {
        var id: Int64
        var appUserId: String
        var appAccountToken: String
        var createdAt: Int64
        var answer: String?
        var computedAt: Int64
        var projectionError: String?

        var customer: CustomerRecord {
            CustomerRecord(id: id, appUserId: appUserId, appAccountToken: appAccountToken, createdAt: createdAt)
        }
    }

    static func decodeState(_ row: SQLRow) throws -> StoredProjection {
        let columns = try row.read(StateColumns.self)
        let projection = try RowCodec.decode(columns.projectionRows, state: Array(columns.state.utf8))
        return StoredProjection(
            customer: columns.customer, projection: projection, computedAt: columns.computedAt, failure: columns.projectionError,
            answer: columns.answer.map { Array($0.utf8) })
    }

    /// The hot read: one primary-key lookup of one row.
    func projection(appUserId: String) throws -> StoredProjection? {
        try session.query(Self.state(appUserId: appUserId)).first.map(Self.decodeState)
    }

    /// The hot read's statement, its text built once.
    private static let answerByUser = SQLFixedQuery<String> { appUserId in
        """
        SELECT customer_id AS id, app_user_id, app_account_token, created_at, answer, computed_at, projection_error
        FROM customer_states WHERE app_user_id = \(appUserId)
        """
    }
    static func answer(appUserId: String) -> SQLQuery { answerByUser(appUserId) }

    /// The hot read: the stored answer alone (neither the state nor the rows: a served answer
    /// needs neither).
    func state(appUserId: String) throws -> StoredState? {
        try session.query(Self.answer(appUserId: appUserId)).first.map { row in
            let columns = try row.read(AnswerColumns.self)
            return StoredState(
                customer: columns.customer, answer: columns.answer.map { Array($0.utf8) }, computedAt: columns.computedAt,
                failure: columns.projectionError)
        }
    }

    /// Stores the reader's answer for the customer's state `document`; false (nothing written) when
    /// the stored state is no longer that one (a write came between) or the projection failed.
    func storeAnswer(_ answer: [UInt8], appUserId: String, document: [UInt8]) throws -> Bool {
        let rows = try session.query(
            """
            UPDATE customer_states SET answer = \(String(decoding: answer, as: UTF8.self))
            WHERE app_user_id = \(appUserId) AND state = \(String(decoding: document, as: UTF8.self)) AND projection_error IS NULL
            RETURNING customer_id
            """)
        return !rows.isEmpty
    }

    func storedState(customerID: Int64) throws -> StoredProjection? {
        try session.query(Self.state(customerID: customerID)).first.map(Self.decodeState)
    }

    /// The projection as the indexed row tables hold it (what `subscription` reads).
    func tableRows(customerID: Int64) throws -> CustomerProjection {
        var projection = CustomerProjection(entitlements: [], subscriptions: [], state: [])
        projection.entitlements = try session.query(
            """
            SELECT entitlement, status, active, product_id, original_transaction_id, expires_at, grace_until, will_renew,
                   environment
            FROM entitlement_projections WHERE customer_id = \(customerID)
            """
        ).map { try $0.decode(EntitlementRow.self) }
        projection.subscriptions = try session.query(
            """
            SELECT original_transaction_id, product_id, group_id, status, expires_at, grace_until, auto_renew, environment
            FROM subscription_projections WHERE customer_id = \(customerID)
            """
        ).map { try $0.decode(SubscriptionRow.self) }
        return projection.canonical
    }
}

// The hot rows' initialisers read in the Codable decoding's order, so that the two share the
// statement's plan.

extension Ledger.StateColumns: SQLRowReadable {
    init(row: SQLRowReader) throws {
        (id, appUserId, appAccountToken, createdAt) = try row.customerColumns()
        (state, projectionRows, computedAt) = (try row.text("state"), try row.text("projectionRows"), try row.int("computedAt"))
        (projectionError, answer) = (try row.optionalText("projectionError"), try row.optionalText("answer"))
    }
}

extension Ledger.AnswerColumns: SQLRowReadable {
    init(row: SQLRowReader) throws {
        (id, appUserId, appAccountToken, createdAt) = try row.customerColumns()
        (answer, computedAt, projectionError) =
            (try row.optionalText("answer"), try row.int("computedAt"), try row.optionalText("projectionError"))
    }
}

extension SQLRowReader {
    /// The customer's columns both hot rows start with, in their order.
    fileprivate func customerColumns() throws -> (id: Int64, appUserId: String, appAccountToken: String, createdAt: Int64) {
        (try int("id"), try text("appUserId"), try text("appAccountToken"), try int("createdAt"))
    }
}
