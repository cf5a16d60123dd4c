import Foundation
import Testing

@testable import Storage

/// The storage contract, run against every backend.
@Suite("Ledger conformance")
struct ConformanceTests {
    let projector = testProjector

    @Test("migrations are idempotent and a newer schema is refused", arguments: Backend.durable)
    func migrations(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await database.open()
        let again = try await store.migrate()
        #expect(again.applied.isEmpty)
        #expect(again.currentVersion == Schema.latestVersion)
        #expect(try await store.rows("schema_migrations") == Int64(Schema.migrations.count))
        await store.close()

        // Reopening migrates nothing and keeps the data.
        let reopened = try await database.open()
        #expect(try await reopened.migrate().applied.isEmpty)
        try await reopened.raw("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')")
        await #expect(throws: StorageError(.schemaTooNew)) { try await reopened.migrate() }
        await reopened.close()

        await #expect(throws: StorageError(.schemaTooNew)) { _ = try await database.open() }
        await #expect(throws: StorageError(.schemaTooNew)) { _ = try await database.open(migrate: false) }
        await database.destroy()
    }

    /// A version numbered below one the database already has (17 landing after 19) is still
    /// applied: the migrator runs every version not recorded, not only those above the highest.
    @Test("a migration below the highest applied one still runs", arguments: Backend.durable)
    func migrationsFillGaps(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await database.open()
        // As a binary with 19 but not yet 17 left it.
        try await store.raw("DELETE FROM schema_migrations WHERE version = 17")
        if backend != .sqliteFile {
            try await store.raw("DROP TRIGGER customer_states_commit_lsn ON customer_states")
            try await store.raw("DROP FUNCTION customer_states_commit_lsn()")
            try await store.raw("ALTER TABLE customer_states DROP COLUMN commit_lsn")
        }
        let report = try await store.migrate()
        #expect(report.applied == [17])
        #expect(report.currentVersion == Schema.latestVersion)
        #expect(try await store.rows("schema_migrations") == Int64(Schema.migrations.count))
        await store.close()
        await database.destroy()
    }

    @Test("a fresh in-memory database migrates once", arguments: [Backend.sqliteMemory])
    func memoryMigrations(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            #expect(try await store.migrate().applied.isEmpty)
            try await store.raw("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')")
            await #expect(throws: StorageError(.schemaTooNew)) { try await store.migrate() }
            try await store.raw("DELETE FROM schema_migrations WHERE version = 999")
        }
    }

    @Test("a repeated notificationUUID is a duplicate and changes nothing", arguments: Backend.all)
    func duplicateNotification(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "alice", appAccountToken: nil, projector: projector, now: testNow)
            let fact = Fixture.transaction(otid: "1000", tid: "1000", expires: testNow + 30 * day, signed: testNow - day, token: customer.appAccountToken)
            let batch = Fixture.batch(uuid: "uuid-dup", facts: [fact])
            let first = try await store.ingest(batch, projector: projector, now: testNow)
            #expect(first.status == .accepted)
            #expect(first.insertedFacts == 1)
            #expect(first.affectedCustomers == ["alice"])
            let before = try await store.projection(appUserId: "alice")

            var repeated = batch
            repeated.facts.append(Fixture.renewal(otid: "1000", autoRenew: false, signed: testNow))
            let second = try await store.ingest(repeated, projector: projector, now: testNow + day)
            #expect(second.status == .duplicate)
            #expect(try await store.rows("notifications") == 1)
            #expect(try await store.rows("facts") == 1)
            #expect(try await store.projection(appUserId: "alice") == before)
        }
    }

    @Test("replaying a fact under a new notification is a no-op", arguments: Backend.all)
    func factReplay(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "bob", appAccountToken: nil, projector: projector, now: testNow)
            let facts = [
                Fixture.transaction(otid: "2000", tid: "2001", expires: testNow + 30 * day, signed: testNow - day, token: customer.appAccountToken),
                Fixture.renewal(otid: "2000", autoRenew: true, signed: testNow - day),
            ]
            let first = try await store.ingest(Fixture.batch(facts: facts), projector: projector, now: testNow)
            #expect(first.insertedFacts == 2)
            let second = try await store.ingest(Fixture.batch(facts: facts), projector: projector, now: testNow)
            #expect(second.status == .accepted)
            #expect(second.insertedFacts == 0)
            #expect(second.replayedFacts == 2)
            #expect(try await store.facts(appUserId: "bob").count == 2)
            #expect(try await store.rows("facts") == 2)
            #expect(try await store.rows("notifications") == 2)
        }
    }

    @Test("a fact carrying an appAccountToken links once the customer exists", arguments: Backend.all)
    func tokenLinkingFactFirst(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let token = UUID().uuidString
            let fact = Fixture.transaction(otid: "3000", tid: "3000", expires: testNow + 10 * day, signed: testNow - day, token: token)
            let result = try await store.ingest(Fixture.batch(facts: [fact]), projector: projector, now: testNow)
            #expect(result.affectedCustomers.isEmpty)
            #expect(try await store.subscription(originalTransactionId: "3000") == nil)

            // The app creates the customer with the token it already used for the purchase.
            let customer = try await store.ensureCustomer(appUserId: "carol", appAccountToken: token, projector: projector, now: testNow)
            #expect(customer.appAccountToken == token.lowercased())
            let projection = try #require(try await store.projection(appUserId: "carol"))
            #expect(projection.projection.subscriptions.map(\.originalTransactionId) == ["3000"])
            #expect(projection.projection.entitlements.first?.entitlement == "pro")
            #expect(projection.projection.entitlements.first?.active == true)
            #expect(try await store.subscription(originalTransactionId: "3000")?.appUserId == "carol")

            // A later renewal without a token follows the link.
            let renewal = Fixture.transaction(otid: "3000", tid: "3001", expires: testNow + 40 * day, signed: testNow)
            let renewed = try await store.ingest(Fixture.batch(facts: [renewal]), projector: projector, now: testNow)
            #expect(renewed.affectedCustomers == ["carol"])
            #expect(try await store.subscription(originalTransactionId: "3000")?.subscription.expiresAt == testNow + 40 * day)
        }
    }

    @Test("a customer's appAccountToken links facts that arrive later", arguments: Backend.all)
    func tokenLinkingCustomerFirst(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try #require(
                try await store.customer(appUserId: "dave", createIfMissing: true, projector: projector, now: testNow))
            #expect(UUID(uuidString: customer.appAccountToken) != nil)
            // Stable: reading or "creating" again returns the same token.
            let again = try await store.ensureCustomer(appUserId: "dave", appAccountToken: nil, projector: projector, now: testNow + 1)
            #expect(again == customer)
            #expect(try await store.projection(appUserId: "dave")?.projection.subscriptions.isEmpty == true)

            let fact = Fixture.transaction(
                otid: "4000", tid: "4000", expires: testNow - day, signed: testNow - 31 * day, token: customer.appAccountToken.uppercased())
            let result = try await store.ingest(Fixture.batch(facts: [fact]), projector: projector, now: testNow)
            #expect(result.affectedCustomers == ["dave"])
            let projection = try #require(try await store.projection(appUserId: "dave"))
            #expect(projection.projection.subscriptions.first?.status == "expired")
            #expect(projection.projection.entitlements.first?.active == false)
            #expect(projection.computedAt == testNow)
            let state = try #require(
                try JSONSerialization.jsonObject(with: Data(projection.projection.state)) as? [String: Any])
            #expect(state["appUserId"] as? String == "dave")
        }
    }

    @Test("the immediate state read answers the stored answer on a SQLite file, and defers elsewhere", arguments: Backend.all)
    func immediateStateRead(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "erin", appAccountToken: nil, projector: projector, now: testNow)
            let fact = Fixture.transaction(
                otid: "4100", tid: "4100", expires: testNow + day, signed: testNow, token: customer.appAccountToken)
            _ = try await store.ingest(Fixture.batch(facts: [fact]), projector: projector, now: testNow)
            let stored = try #require(try await store.projection(appUserId: "erin"))
            #expect(try await store.storeAnswer(Array("rendered".utf8), appUserId: "erin", document: stored.document))
            switch (backend, try store.stateNow(appUserId: "erin"), try store.stateNow(appUserId: "nobody")) {
            case (.sqliteFile, .done(let state), .done(nil)):
                #expect(state == StoredState(customer: stored.customer, answer: Array("rendered".utf8), computedAt: stored.computedAt))
            case (.sqliteMemory, .wouldWait, .wouldWait), (.postgres, .wouldWait, .wouldWait):
                break
            case (_, let found, let missing):
                Issue.record("unexpected immediate reads on \(backend): \(found), \(missing)")
            }
        }
    }

    @Test("restore: transfer moves a subscription, keep leaves it with its first owner", arguments: Backend.all)
    func transferAndKeep(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let fact = Fixture.transaction(otid: "5000", tid: "5000", expires: testNow + 10 * day, signed: testNow - day)
            // A client post for "erin" claims the subscription.
            let posted = try await store.ingest(
                Fixture.batch(uuid: nil, facts: [fact], source: .client, claim: Claim(appUserId: "erin", behaviour: .transfer)),
                projector: projector, now: testNow)
            #expect(posted.links == [LinkResult(originalTransactionId: "5000", outcome: .linked)])
            #expect(posted.affectedCustomers == ["erin"])

            // "frank" restores it with keep: erin keeps it.
            let kept = try await store.ingest(
                Fixture.batch(uuid: nil, facts: [fact], source: .client, claim: Claim(appUserId: "frank", behaviour: .keep)),
                projector: projector, now: testNow)
            #expect(kept.links == [LinkResult(originalTransactionId: "5000", outcome: .kept(owner: "erin"))])
            #expect(try await store.subscription(originalTransactionId: "5000")?.appUserId == "erin")
            #expect(try await store.projection(appUserId: "frank")?.projection.entitlements.isEmpty == true)

            // The same restore posted with the transaction and transfer: it moves to frank.
            let moved = try await store.ingest(
                Fixture.batch(uuid: nil, facts: [fact], source: .client, claim: Claim(appUserId: "frank", behaviour: .transfer)),
                projector: projector, now: testNow)
            #expect(moved.links == [LinkResult(originalTransactionId: "5000", outcome: .transferred(from: "erin"))])
            #expect(moved.affectedCustomers == ["erin", "frank"])
            #expect(try await store.subscription(originalTransactionId: "5000")?.appUserId == "frank")
            #expect(try await store.projection(appUserId: "erin")?.projection.entitlements.isEmpty == true)
            #expect(try await store.projection(appUserId: "frank")?.projection.entitlements.first?.active == true)
            #expect(try await store.facts(appUserId: "erin").isEmpty)
            #expect(try await store.facts(appUserId: "frank").count == 1)

            let again = try await store.ingest(
                Fixture.batch(uuid: nil, facts: [fact], source: .client, claim: Claim(appUserId: "frank", behaviour: .transfer)),
                projector: projector, now: testNow)
            #expect(again.links == [LinkResult(originalTransactionId: "5000", outcome: .alreadyLinked)])
        }
    }

    @Test("the projection is written in the ingest's transaction", arguments: Backend.all)
    func projectionInSameTransaction(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "gina", appAccountToken: nil, projector: projector, now: testNow)
            let fact = Fixture.transaction(otid: "6000", tid: "6000", expires: testNow + day, signed: testNow, token: customer.appAccountToken)
            _ = try await store.ingest(Fixture.batch(facts: [fact]), projector: projector, now: testNow)
            // No separate step: the read right after the acknowledged ingest already sees it.
            let projection = try #require(try await store.projection(appUserId: "gina"))
            #expect(projection.projection.subscriptions.count == 1)
            #expect(projection.projection.entitlements.first?.expiresAt == testNow + day)
        }
    }

    @Test("a fault at any point leaves nothing behind", arguments: Backend.all, FaultPoint.allCases)
    func faultInjection(backend: Backend, point: FaultPoint) async throws {
        let faults = FaultSwitch()
        try await withStore(backend, fault: faults.injector) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "hank", appAccountToken: nil, projector: projector, now: testNow)
            let before = try await store.projection(appUserId: "hank")
            let facts = [
                Fixture.transaction(otid: "7000", tid: "7000", expires: testNow + day, signed: testNow, token: customer.appAccountToken),
                Fixture.renewal(otid: "7000", autoRenew: true, signed: testNow),
            ]
            let batch = Fixture.batch(uuid: "uuid-fault", facts: facts, claim: Claim(appUserId: "ivan"))
            faults.arm(point)
            await #expect(throws: StorageError(.faultInjected)) {
                _ = try await store.ingest(batch, projector: projector, now: testNow)
            }
            faults.arm(nil)
            #expect(try await store.rows("notifications") == 0)
            #expect(try await store.rows("facts") == 0)
            #expect(try await store.rows("links") == 0)
            #expect(try await store.customer(appUserId: "ivan") == nil)
            #expect(try await store.rows("subscription_projections") == 0)
            #expect(try await store.projection(appUserId: "hank") == before)

            // The UUID was not consumed: the retry Apple sends applies fully.
            let retried = try await store.ingest(batch, projector: projector, now: testNow)
            #expect(retried.status == .accepted)
            #expect(retried.insertedFacts == 2)
            #expect(try await store.subscription(originalTransactionId: "7000")?.appUserId == "ivan")
        }
    }

    @Test("concurrent ingests commit together; a failing one doesn't poison the group", arguments: Backend.all)
    func groupCommit(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let projector = self.projector
            let count = 64
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<count {
                    group.addTask {
                        // A product each: every subscription is its own group, with its own row.
                        let fact = Fixture.transaction(
                            otid: "8\(index)", tid: "8\(index)", product: "com.example.p\(index)", expires: testNow + day,
                            signed: testNow)
                        // Every 16th batch claims for an invalid (empty) user and must fail alone.
                        let claim = Claim(appUserId: index % 16 == 5 ? "" : "user\(index % 8)")
                        do {
                            let result = try await store.ingest(Fixture.batch(facts: [fact], claim: claim), projector: projector, now: testNow)
                            return result.status == .accepted
                        } catch let error as StorageError where error.code == .invalidArgument {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == count - count / 16)
            #expect(try await store.rows("notifications") == Int64(count - count / 16))
            #expect(try await store.rows("links") == Int64(count - count / 16))
            let total = try await (0..<8).asyncReduce(0) { sum, user in
                sum + (try await store.projection(appUserId: "user\(user)")?.projection.subscriptions.count ?? 0)
            }
            #expect(total == count - count / 16)
        }
    }

    @Test("history pages newest first with a cursor", arguments: Backend.all)
    func history(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "jill", appAccountToken: nil, projector: projector, now: testNow)
            for step in 0..<3 {
                let signed = testNow + Int64(step) * day
                let facts = [
                    Fixture.transaction(otid: "9000", tid: "900\(step)", expires: signed + 30 * day, signed: signed, token: customer.appAccountToken),
                    Fixture.renewal(otid: "9000", autoRenew: true, signed: signed),
                ]
                _ = try await store.ingest(Fixture.batch(uuid: "hist-\(step)", facts: facts, receivedAt: signed), projector: projector, now: signed)
            }
            var entries: [HistoryEntry] = []
            var cursor: String? = nil
            var pages = 0
            repeat {
                let page = try await store.history(appUserId: "jill", cursor: cursor, limit: 4)
                entries += page.entries
                cursor = page.nextCursor
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages == 3)
            #expect(entries.count == 9)
            #expect(entries.filter { $0.kind == .notification }.map(\.notificationUUID) == ["hist-2", "hist-1", "hist-0"])
            #expect(Set(entries.map { "\($0.kind)-\($0.id)" }).count == 9)
            #expect(entries.first?.kind == .fact)
            // The ingests were stamped with the `now` they ran at; facts are newest first.
            let times = entries.filter { $0.kind == .fact }.map(\.receivedAt)
            #expect(times == times.sorted(by: >))
            #expect(entries.first(where: { $0.kind == .notification })?.source == .appleV2)
            await #expect(throws: StorageError(.invalidArgument)) {
                _ = try await store.history(appUserId: "jill", cursor: "garbage", limit: 4)
            }
            #expect(try await store.history(appUserId: "nobody", cursor: nil, limit: 10).entries.isEmpty)
        }
    }

    @Test("a rejected notification is audited and does not take its UUID", arguments: Backend.all)
    func rejected(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let forged = ReceivedMessage(notificationUUID: "uuid-r", source: .appleV2, body: [0, 1, 2], receivedAt: testNow)
            _ = try await store.recordRejected(forged, code: "SIGNATURE_INVALID")
            #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE outcome = 'rejected'") == 1)
            let real = try await store.ingest(Fixture.batch(uuid: "uuid-r", facts: []), projector: projector, now: testNow)
            #expect(real.status == .accepted)
            #expect(try await store.count("SELECT COUNT(*) FROM facts") == 0)
        }
    }

    @Test("environments stay apart", arguments: Backend.all)
    func environments(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "liz", appAccountToken: nil, projector: projector, now: testNow)
            let facts = [
                Fixture.transaction(otid: "11", tid: "11", expires: testNow + day, signed: testNow, token: customer.appAccountToken),
                Fixture.transaction(
                    otid: "12", tid: "12", expires: testNow - day, signed: testNow, token: customer.appAccountToken, environment: "Sandbox"),
            ]
            _ = try await store.ingest(Fixture.batch(facts: facts), projector: projector, now: testNow)
            let rows = try #require(try await store.projection(appUserId: "liz")).projection.entitlements
            #expect(rows.map(\.environment) == ["Production", "Sandbox"])
            #expect(rows.map(\.active) == [true, false])
        }
    }

    @Test("ping answers and a closed store refuses work", arguments: Backend.all)
    func pingAndClose(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await database.open()
        try await store.ping()
        await store.close()
        await #expect(throws: StorageError(.closed)) { try await store.ping() }
        await database.destroy()
    }

    @Test("rebuild reports and repairs a projection that drifted", arguments: Backend.all)
    func rebuildRepairs(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "mo", appAccountToken: nil, projector: projector, now: testNow)
            let fact = Fixture.transaction(otid: "13", tid: "13", expires: testNow + day, signed: testNow, token: customer.appAccountToken)
            _ = try await store.ingest(Fixture.batch(facts: [fact]), projector: projector, now: testNow)
            try await store.raw("UPDATE subscription_projections SET status = 'tampered'")
            let report = try await store.rebuild(projector: projector, now: testNow)
            #expect(report.customers == 1)
            #expect(report.changedCustomers == ["mo"])
            #expect(try await store.rebuild(projector: projector, now: testNow).differences == 0)
        }
    }
}

extension Sequence {
    func asyncReduce<Result>(_ initial: Result, _ next: (Result, Element) async throws -> Result) async rethrows -> Result {
        var result = initial
        for element in self { result = try await next(result, element) }
        return result
    }
}
