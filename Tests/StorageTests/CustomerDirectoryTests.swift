import AppStoreTesting
import Entitlements
import Foundation
import Testing

@testable import Storage

// Customers as people in storage: aliases (merges), promotional grants as facts, export and erasure, on every
// backend. Every test ends with a rebuild that must find no difference (`withStore`).

private let tokenA = "aaaaaaaa-0000-4000-8000-000000000001"
private let tokenB = "bbbbbbbb-0000-4000-8000-000000000002"

private func grant(_ id: String, token: String, from: Int64 = testNow, until: Int64) -> Fact {
    .promotionalGrant(
        PromotionalGrantFact(
            grantId: id, entitlement: "pro", grantedAt: from, expiresDate: until, reason: "support", grantedBy: "admin",
            appAccountToken: token))
}

extension LedgerStore {
    var directory: any CustomerDirectory { self as! any CustomerDirectory }

}

@Suite("Customer directory (aliases, grants, export, erasure)")
struct CustomerDirectoryTests {
    /// Purchases on both sides of an alias, delivered in every order around the merge: the same
    /// customer, the same rows, read by either id.
    @Test(arguments: Backend.all, [UInt64(1), 2, 3, 4, 5, 6])
    func aliasWithPurchasesOnBothSidesUnderShuffledDelivery(backend: Backend, seed: UInt64) async throws {
        enum Step: CaseIterable { case factA, renewalA, factB, factB2, alias }
        var rng = SplitMix64(seed: seed)
        let order = Step.allCases.shuffled(using: &rng)
        try await withStore(backend) { store, _ in
            _ = try await store.ensureCustomer(appUserId: "a", appAccountToken: tokenA, projector: testProjector, now: testNow)
            _ = try await store.ensureCustomer(appUserId: "b", appAccountToken: tokenB, projector: testProjector, now: testNow)
            for step in order {
                switch step {
                case .factA:
                    _ = try await store.ingest(
                        Fixture.batch(facts: [Fixture.transaction(otid: "oa", tid: "ta", expires: testNow + 10 * day, signed: testNow - day, token: tokenA)]),
                        projector: testProjector, now: testNow)
                case .renewalA:
                    _ = try await store.ingest(
                        Fixture.batch(facts: [Fixture.renewal(otid: "oa", autoRenew: false, signed: testNow - day / 2)]),
                        projector: testProjector, now: testNow)
                case .factB:
                    _ = try await store.ingest(
                        Fixture.batch(facts: [Fixture.transaction(otid: "ob", tid: "tb", expires: testNow + 20 * day, signed: testNow - day, token: tokenB)]),
                        projector: testProjector, now: testNow)
                case .factB2:
                    _ = try await store.ingest(
                        Fixture.batch(facts: [Fixture.transaction(otid: "ob2", tid: "tb2", expires: testNow - day, signed: testNow - 30 * day, token: tokenB)]),
                        projector: testProjector, now: testNow)
                case .alias:
                    let outcome = try await store.directory.addAlias("b", to: "a", actor: "key", projector: testProjector, now: testNow)
                    #expect(outcome == .merged)
                }
            }
            let a = try #require(try await store.customer(appUserId: "a"))
            let b = try #require(try await store.customer(appUserId: "b"))
            #expect(a.aliases == ["b"] && b.aliases == ["a"])
            #expect(a.id == b.id)
            #expect(a.appAccountToken == tokenA && b.appAccountToken == tokenB)
            let stored = try #require(try await store.projection(appUserId: "a"))
            // One row per group's current subscription; every purchase's facts count.
            #expect(stored.projection.subscriptions.map(\.originalTransactionId) == ["ob"])
            #expect(Set(try await store.facts(appUserId: "a").compactMap(\.fact?.ledgerOriginalTransactionId)) == ["oa", "ob", "ob2"])
            let pro = try #require(stored.projection.entitlements.first { $0.entitlement == "pro" })
            #expect(pro.originalTransactionId == "ob" && pro.active)
            #expect(try await store.projection(appUserId: "b") == nil)
            #expect(Set(try await store.facts(appUserId: "b").map(\.id)) == Set(try await store.facts(appUserId: "a").map(\.id)))
            #expect(try await store.subscription(originalTransactionId: "ob")?.appUserId == "a")
            #expect(try await store.count("SELECT COUNT(*) FROM customer_events WHERE kind = 'merged'") == 1)
            // The merge is in the ledger: projections rebuilt from nothing are the same.
            for table in ["entitlement_projections", "subscription_projections", "customer_states"] {
                try await store.raw("DELETE FROM \(table)")
            }
            let rebuilt = try await store.rebuild(projector: testProjector, now: testNow)
            // A renewal info that came before its token-bearing transaction was held by a
            // placeholder meanwhile; it stays, with nothing linked (its empty answer rewritten).
            #expect(rebuilt.changedCustomers.filter { !UnlinkedSubscription.isKey($0) } == ["a"])
            #expect(try await store.projection(appUserId: "a")?.projection == stored.projection)
            #expect(try await store.projection(appUserId: "b") == nil)
        }
    }

    @Test(arguments: Backend.all)
    func anIdBelongsToOneCustomerOnly(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            func alias(_ alias: String, to target: String) async throws -> AliasOutcome {
                try await store.directory.addAlias(alias, to: target, actor: nil, projector: testProjector, now: testNow)
            }
            let outcomes = [
                try await alias("b", to: "a"), try await alias("d", to: "c"), try await alias("b", to: "a"),
                try await alias("a", to: "b"),
            ]
            #expect(outcomes == [.added, .added, .alreadyAlias, .alreadyAlias])
            for (id, target) in [("b", "c"), ("c", "a"), ("d", "x")] {
                await #expect(throws: StorageError(.aliasConflict, "")) { try await alias(id, to: target) }
            }
            await #expect(throws: StorageError(.invalidArgument, "")) { try await alias("a", to: "a") }
            // A third id through an alias joins the same customer.
            let third = try await alias("e", to: "b")
            #expect(third == .added)
            #expect(try await store.customer(appUserId: "a")?.aliases == ["b", "e"])
        }
    }

    /// A restore posted under an alias follows the app's restore rules for the merged customer:
    /// a subscription of a third customer moves (`transfer`) or stays (`keep`); one of the merged
    /// customer's own ids is already its own.
    @Test(arguments: Backend.all, [
        (behaviour: RestoreBehavior.transfer, otid: "oc", outcome: LinkOutcome.transferred(from: "c"), owner: "a"),
        (.keep, "oc", .kept(owner: "c"), "c"),
        (.keep, "ob", .alreadyLinked, "a"),
        (.transfer, "ob", .alreadyLinked, "a"),
    ])
    func restoreUnderAnAliasFollowsTheRestoreRules(
        backend: Backend, restore: (behaviour: RestoreBehavior, otid: String, outcome: LinkOutcome, owner: String)
    ) async throws {
        try await withStore(backend) { store, _ in
            for (user, otid) in [("b", "ob"), ("c", "oc")] {
                _ = try await store.ingest(
                    Fixture.batch(
                        uuid: nil, facts: [Fixture.transaction(otid: otid, tid: otid + "-t", expires: testNow + day, signed: testNow - day)],
                        source: .client, claim: Claim(appUserId: user)),
                    projector: testProjector, now: testNow)
            }
            _ = try await store.directory.addAlias("b", to: "a", actor: nil, projector: testProjector, now: testNow)
            let result = try await store.ingest(
                Fixture.batch(
                    uuid: nil,
                    facts: [Fixture.transaction(otid: restore.otid, tid: restore.otid + "-t2", expires: testNow + 2 * day, signed: testNow)],
                    source: .client, claim: Claim(appUserId: "b", behaviour: restore.behaviour)),
                projector: testProjector, now: testNow)
            #expect(result.links.map(\.outcome) == [restore.outcome])
            #expect(try await store.subscription(originalTransactionId: restore.otid)?.appUserId == restore.owner)
        }
    }

    /// A grant is a fact: replayed it is a no-op; an end is a second fact; both count for the
    /// customer by its token, whichever id it was merged under.
    @Test(arguments: Backend.all)
    func grantsAreFactsOfTheCustomer(backend: Backend) async throws {
        try await withStore(backend, now: testNow + 1) { store, _ in
            let customer = try await store.ensureCustomer(appUserId: "g", appAccountToken: tokenA, projector: testProjector, now: testNow)
            #expect(try await store.directory.appendCustomerFact(grant("g1", token: customer.appAccountToken, until: testNow + day), projector: testProjector, now: testNow))
            #expect(!(try await store.directory.appendCustomerFact(grant("g1", token: customer.appAccountToken, until: testNow + day), projector: testProjector, now: testNow)))
            var pro = try #require(try await store.projection(appUserId: "g")?.projection.entitlements.first)
            #expect(pro.active && pro.originalTransactionId == "g1")
            let end = Fact.promotionalGrantEnd(PromotionalGrantEndFact(grantId: "g1", endedAt: testNow + 1, appAccountToken: tokenA))
            try await store.directory.appendCustomerFact(end, projector: testProjector, now: testNow + 1)
            pro = try #require(try await store.projection(appUserId: "g")?.projection.entitlements.first)
            #expect(!pro.active && pro.status == "expired")
            #expect(try await store.facts(appUserId: "g").map(\.kind) == ["promotionalGrant", "promotionalGrantEnd"])
        }
    }

    /// Every row of the database that belongs to a customer is in that customer's export, and in
    /// no one else's.
    @Test(arguments: Backend.all)
    func exportsPartitionEveryCustomerRow(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            // A webhook endpoint (its cursor set before any event) gets a delivery of every event.
            let hooks = store
            _ = try await hooks.fanOut(endpoint: "https://hooks.example/a", wants: { _, _ in true }, limit: 10, now: testNow)
            try await Self.populate(store, prefix: "x", tag: "1")
            try await Self.populate(store, prefix: "y", tag: "2")
            #expect(try await hooks.fanOut(endpoint: "https://hooks.example/a", wants: { _, _ in true }, limit: 1000, now: testNow) > 0)
            let x = try #require(try await store.directory.exportCustomer(appUserId: "x-alias"))
            let y = try #require(try await store.directory.exportCustomer(appUserId: "y-main"))
            #expect(try await store.directory.exportCustomer(appUserId: "nobody") == nil)
            for table in x.tables.map(\.table) {
                let total = try await store.rows(table)
                #expect(Int64(x.rows(table).count + y.rows(table).count) == total, "\(table)")
                #expect(!x.rows(table).isEmpty, "\(table) has no row of the customer")
            }
            #expect(Set(x.tables.map(\.table)).isSuperset(of: ["events", "webhook_deliveries"]))
            let ids = x.rows("customers").compactMap { row in row.first { $0.column == "app_user_id" }?.value }
            #expect(Set(ids) == [.text("x-main"), .text("x-alias")])
            // Integers are integers on every backend.
            #expect(x.rows("customers").allSatisfy { row in
                if case .int = row.first(where: { $0.column == "created_at" })?.value { true } else { false }
            })
        }
    }

    /// After an erasure no table holds an erased id; Apple's facts and notifications stay, linked
    /// to nobody; a later notification does not link them again; a later claim links them to its
    /// poster; the erasure is recorded with its key and without the ids.
    @Test(arguments: Backend.all)
    func erasureLeavesNoErasedIdInAnyTable(backend: Backend) async throws {
        try await withStore(backend, now: testNow + day) { store, _ in
            try await Self.populate(store, prefix: "erase-me", tag: "1")
            try await Self.populate(store, prefix: "keep", tag: "2")
            let appleFacts = try await store.count("SELECT COUNT(*) FROM facts WHERE kind IN ('transaction', 'renewal')")
            let notifications = try await store.rows("notifications")
            let token = try #require(try await store.customer(appUserId: "erase-me-main")).appAccountToken
            #expect(try await Self.occurrences(of: "erase-me", in: store) > 0)

            let report = try #require(try await store.directory.eraseCustomer(appUserId: "erase-me-alias", actor: "ops-key", now: testNow))
            #expect(report == ErasureReport(ids: 2, subscriptions: 3, ownFacts: 2))
            // Only the `customer.deleted` event names the erased ids, until it is scrubbed.
            let tables = try await Self.tables(in: store)
            #expect(try await Self.occurrences(of: "erase-me", in: store, tables: tables.subtracting(["events"])) == 0)
            #expect(try await Self.occurrences(of: "erase-me", in: store, tables: ["events"]) > 0)
            #expect(try await store.scrubErasureEvents(recordedBefore: testNow + 1) == 1)
            #expect(try await Self.occurrences(of: "erase-me", in: store) == 0)
            #expect(try await Self.occurrences(of: token, in: store, tables: ["customers", "customer_states", "links"]) == 0)
            #expect(try await store.count("SELECT COUNT(*) FROM facts WHERE kind IN ('transaction', 'renewal')") == appleFacts)
            #expect(try await store.rows("notifications") == notifications)
            #expect(try await store.subscription(originalTransactionId: "1-o1") == nil)
            #expect(try await store.count("SELECT COUNT(*) FROM customer_events WHERE kind = 'erased' AND actor = 'ops-key'") == 1)
            #expect(try await store.directory.eraseCustomer(appUserId: "erase-me-main", actor: nil, now: testNow) == nil)
            // The other customer is untouched.
            #expect(try await store.customer(appUserId: "keep-main")?.aliases == ["keep-alias"])
            #expect(try await store.projection(appUserId: "keep-main")?.projection.subscriptions.count == 1)

            // Apple renews the erased customer's subscription: its token no longer resolves.
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "1-o1", tid: "renewed", expires: testNow + 40 * day, signed: testNow + day, token: token)]),
                projector: testProjector, now: testNow + day)
            #expect(try await store.subscription(originalTransactionId: "1-o1") == nil)
            #expect(try await store.customer(appUserId: "erase-me-main") == nil)
            let check = try await store.compareProjections(projector: testProjector)
            #expect(check.differences == 0 && check.failedCustomers.isEmpty)
            // The app posts it for someone: it is theirs.
            _ = try await store.ingest(
                Fixture.batch(
                    uuid: nil, facts: [Fixture.transaction(otid: "1-o1", tid: "renewed", expires: testNow + 40 * day, signed: testNow + day, token: token)],
                    source: .client, claim: Claim(appUserId: "new-owner")),
                projector: testProjector, now: testNow + day)
            #expect(try await store.subscription(originalTransactionId: "1-o1")?.appUserId == "new-owner")
        }
    }

    /// `PREFIX-main` with alias `PREFIX-alias`, each with a purchase (one by token, one by claim;
    /// Apple's ids `TAG-o1`, `TAG-o2`), a grant, an offer signature, a consent, and coins bought
    /// (`TAG-c1`) and one spent, and attributes (`$email` `PREFIX@example.com`).
    static func populate(_ store: any LedgerStore, prefix: String, tag: String) async throws {
        let main = try await store.ensureCustomer(appUserId: "\(prefix)-main", appAccountToken: nil, projector: testProjector, now: testNow)
        _ = try await store.ingest(
            Fixture.batch(facts: [
                Fixture.transaction(otid: "\(tag)-o1", tid: "\(tag)-t1", expires: testNow + 10 * day, signed: testNow - day, token: main.appAccountToken),
                Fixture.renewal(otid: "\(tag)-o1", autoRenew: true, signed: testNow - day + 1),
            ]),
            projector: testProjector, now: testNow)
        _ = try await store.ingest(
            Fixture.batch(
                uuid: nil, facts: [Fixture.transaction(otid: "\(tag)-o2", tid: "\(tag)-t2", expires: testNow + 5 * day, signed: testNow - 2 * day)],
                source: .client, claim: Claim(appUserId: "\(prefix)-alias")),
            projector: testProjector, now: testNow)
        _ = try await store.directory.addAlias("\(prefix)-alias", to: "\(prefix)-main", actor: "key", projector: testProjector, now: testNow)
        try await store.directory.appendCustomerFact(
            grant("\(tag)-grant", token: main.appAccountToken, until: testNow + 3 * day), projector: testProjector, now: testNow)
        try await (store as! any OfferSignatureLog).recordOfferSignature(
            OfferSignatureRecord(
                appUserId: "\(prefix)-alias", bundleId: "com.example", productId: "com.example.pro", offerId: "o", kind: "promotional",
                format: "jws", nonce: UUID().uuidString.lowercased(), signedAt: testNow))
        try await (store as! any ConsentStore).recordConsent(appUserId: "\(prefix)-main", consented: true, now: testNow)
        // Coins bought, and one spent through the server under the alias.
        let coins = Fact.transaction(
            TransactionFact(
                transactionId: "\(tag)-c1", originalTransactionId: "\(tag)-c1", productId: "coins", purchaseDate: testNow - day,
                quantity: 5, productType: .consumable, appAccountToken: main.appAccountToken, signedDate: testNow - day))
        _ = try await store.ingest(Fixture.batch(facts: [(coins, Fixture.signed(coins))]), projector: testProjector, now: testNow)
        let spent = try await (store as! any ConsumableSpending).spend(
            SpendRequest(appUserId: "\(prefix)-alias", productId: "coins", quantity: 1, idempotencyKey: "k-\(tag)", environments: [.production]),
            projector: testProjector, now: testNow)
        guard case .spent = spent else { throw StorageError(.internal, "the spend failed: \(spent)") }
        // Attributes set under both ids, one of them naming the customer.
        let attributes = store as any CustomerAttributeStore
        let email = try await attributes.setAttributes(
            appUserId: "\(prefix)-alias", changes: ["$email": "\(prefix)@example.com"], maxCount: 10, now: testNow)
        guard case .stored = email else { throw StorageError(.internal, "the attributes were not stored: \(email)") }
        _ = try await attributes.setAttributes(appUserId: "\(prefix)-main", changes: ["plan": "team"], maxCount: 10, now: testNow)
        // Enrolled in an experiment.
        let enrolment = ExperimentEnrolment(experimentId: "spring", variant: 1, offeringId: "cheaper", enrolledAt: testNow)
        guard try await store.enrol(appUserId: "\(prefix)-alias", enrolment, now: testNow)?.recorded == true else {
            throw StorageError(.internal, "the enrolment was not recorded")
        }
    }

    /// Every table's name.
    static func tables(in store: any LedgerStore) async throws -> Set<String> {
        let sql: SQLQuery =
            store is PostgresStore
            ? "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            : "SELECT name FROM sqlite_master WHERE type = 'table'"
        return Set(try await store.texts(sql).compactMap { $0[0] })
    }

    /// Rows of every table (every column, as text; PostgreSQL's `bytea` as its UTF-8 text) that
    /// contain `needle`.
    static func occurrences(of needle: String, in store: any LedgerStore, tables only: Set<String>? = nil) async throws -> Int64 {
        let postgres = store is PostgresStore
        let columns: [[String?]] =
            postgres
            ? try await store.texts(
                "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema()")
            : try await store.texts(
                "SELECT m.name, p.name, p.type FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'")
        #expect(Set(columns.compactMap { $0[0] }).isSuperset(of: ["customers", "facts", "notifications", "offer_signatures", "jobs"]))
        // One statement per table, summing a count per column: a round trip per table, not per column.
        var counts: [String: [SQLQuery]] = [:]
        for column in columns {
            guard let table = column[0], let name = column[1], only?.contains(table) ?? true else { continue }
            // `escape`: packed signed text (schema 14) is bytes, not UTF-8; its text parts stay readable.
            let value = postgres && column[2] == "bytea" ? "encode(\"\(name)\", 'escape')" : "CAST(\"\(name)\" AS TEXT)"
            counts[table, default: []].append(
                SQLQuery(verbatim: "(SELECT COUNT(*) FROM \"\(table)\" WHERE \(value) LIKE ") + "\("%" + needle + "%"))")
        }
        var total: Int64 = 0
        for sums in counts.values {
            total += try await store.count(SQLQuery(verbatim: "SELECT ") + .joined(sums, separator: " + "))
        }
        return total
    }
}

extension LedgerStore {
    func texts(_ sql: SQLQuery) async throws -> [[String?]] {
        switch self {
        case let store as SQLiteStore: return try await store._texts(sql)
        case let store as PostgresStore: return try await store._texts(sql)
        default: return []
        }
    }
}
