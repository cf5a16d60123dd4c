import AppStore
import AppStoreTesting
import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Storage
import Testing

@testable import EntitledServer
@testable import Storage

/// The stored answers held in memory (``HeldAnswers``) for the customer and offerings reads:
/// served only while the database is unchanged, whoever writes it, so the poll thread's answer is
/// always the storage read's.
@Suite struct HeldAnswerTests {
    static let now = APIHarness.start
    static let day: Int64 = 86_400_000

    /// The store's database opened a second time: another connection, as another process's (an
    /// `entitled import`, a `backfill`, a second server) writes it. Nil for PostgreSQL, whose
    /// stores give no change mark (nothing is held there, whoever writes).
    static func otherWriter(_ store: any LedgerStore) async throws -> (any LedgerStore)? {
        guard let sqlite = store as? SQLiteStore, case .file(let path) = sqlite.location else { return nil }
        return try await openStore(url: "sqlite:\(path)")
    }

    /// A subscription of `user`'s, bought at `bought`, that ends at `expires`.
    static func purchase(_ id: String, bought: Int64, expires: Int64) -> Fact {
        .transaction(
            TransactionFact(
                transactionId: "t-\(id)", originalTransactionId: "o-\(id)", productId: "pro.monthly", purchaseDate: bought,
                expiresDate: expires, productType: .autoRenewable, signedDate: bought))
    }

    static func ingest(_ ledger: FactLedger, _ fact: Fact, for user: String, at now: Int64) async throws {
        _ = try await ledger.ingest(
            ReceivedMessage(notificationUUID: nil, source: .client, body: [], receivedAt: now), facts: [(fact, nil)],
            claim: Claim(appUserId: user))
    }

    /// A paywall whose lapsed customers see another offering: a customer's state changes their answer.
    static func seedPaywall(_ store: any LedgerStore) async throws {
        let standard = #"{"id":"default","packages":[{"id":"$monthly","products":{"appStore":"pro.monthly"}}]}"#
        let winback = #"{"id":"winback","packages":[{"id":"$monthly","products":{"appStore":"pro.monthly"}}]}"#
        _ = try await store.changePaywall(actor: "test", now: now) { _ in
            [.putOffering(id: "default", document: standard), .putOffering(id: "winback", document: winback), .setCurrent(offeringId: "default"),
             .setTargeting(document: #"{"rules":[{"id":"lapsed","when":{"states":["inactive"]},"offeringId":"winback"}]}"#)]
        }
    }

    /// Generated customers and writes — this server's ingests, another connection's ingests and
    /// stored answers, time passing a subscription's end, a projection marked failed and healed by
    /// another connection — with the poll thread's answer (when it gives one) checked against the
    /// storage read's after each, first before anything reads the write (what a head held from
    /// before it would get wrong), then twice (the second from the held head).
    @Test(arguments: StoredBackend.all)
    func heldAnswersAreTheStorageReadsOverGeneratedWrites(backend: StoredBackend) async throws {
        let store = try await backend.open()
        let other = try await Self.otherWriter(store)
        do {
            try await Self.seedPaywall(store)
            let clock = VirtualClock(Self.now)
            let (ledger, offerings) = OfferingReadTests.offerings(store, clock: clock)
            let otherLedger = other.map { FactLedger(store: $0, configuration: OfferingAPITests.configuration(), cache: ledger.cache) }
            let users = (0..<6).map { "u\($0)" }
            for user in users {
                _ = try await ledger.customer(appUserId: user, context: ledger.answerContext(now: Self.now))
            }
            var random = SplitMix64(seed: 37)
            var served = 0
            var servedCustomer = 0
            /// The poll thread's answer before anything else reads, then the storage read's, then
            /// the poll thread's twice more; each given must be the storage read's bytes.
            func check(_ user: String, _ step: Int) async throws {
                /// The customer read's body on the poll thread (nil where it gives none).
                func customerNow() -> [UInt8]? {
                    (try? ledger.renderedCustomerNow(appUserId: user, context: ledger.answerContext(now: clock.nowMilliseconds())))?
                        .body(serverTime: 0)
                }
                let firstCustomer = customerNow()
                let first = try offerings.answerNow(appUserId: user, asked: .init())
                let stored: [UInt8]?
                do {
                    stored = try await offerings.answer(appUserId: user, asked: .init())
                } catch let error as HTTPError {
                    // A failed projection has no answer on either path.
                    #expect(error.code == ProblemCode.projectionFailed.rawValue, "step \(step)")
                    #expect(first == nil, "step \(step): \(user)'s failed projection was answered from memory")
                    #expect(try offerings.answerNow(appUserId: user, asked: .init()) == nil)
                    #expect(firstCustomer == nil, "step \(step): \(user)'s failed projection was answered from memory")
                    #expect(customerNow() == nil)
                    return
                }
                if let first { #expect(first == stored, "step \(step): \(user) answered from a stale head") }
                // The storage read rendered and stored the answer if none was: now it is held.
                let storedCustomer = try await ledger.renderedCustomer(appUserId: user, context: ledger.answerContext(now: clock.nowMilliseconds()))?
                    .body(serverTime: 0)
                if let firstCustomer { #expect(firstCustomer == storedCustomer, "step \(step): \(user) answered from a stale answer") }
                for _ in 0..<2 {
                    let now = try offerings.answerNow(appUserId: user, asked: .init())
                    if let now {
                        served += 1
                        #expect(now == stored, "step \(step): \(user)")
                    }
                    if let customer = customerNow() {
                        servedCustomer += 1
                        #expect(customer == storedCustomer, "step \(step): \(user)")
                    }
                }
            }
            for step in 0..<60 {
                let user = users[Int.random(in: 0..<users.count, using: &random)]
                let now = clock.nowMilliseconds()
                let writer = otherLedger.flatMap { Bool.random(using: &random) ? $0 : nil } ?? ledger
                switch Int.random(in: 0..<6, using: &random) {
                case 0, 1:
                    // A purchase that ends within the next days, or one that already ended.
                    let ends = now + Int64.random(in: -5...5, using: &random) * Self.day + Self.day / 2
                    try await Self.ingest(writer, Self.purchase("\(step)", bought: now - 20 * Self.day, expires: ends), for: user, at: now)
                case 2:
                    // The answer rendered and stored by whichever writer (none for a failed projection).
                    do {
                        _ = try await writer.renderedCustomer(appUserId: user, context: writer.answerContext(now: now))
                    } catch {
                        #expect(error.code == .projectionFailed)
                    }
                case 3:
                    // Time passes: a subscription may end, which changes the answer without a write.
                    clock.advance(by: Int64.random(in: 1...3, using: &random) * Self.day)
                case 4:
                    // The projection fails (as a rebuild by another process records it), later heals.
                    try await executeSQL(other ?? store, "UPDATE customer_states SET projection_error = 'poisoned' WHERE app_user_id = '\(user)'")
                default:
                    try await executeSQL(other ?? store, "UPDATE customer_states SET projection_error = NULL WHERE app_user_id = '\(user)'")
                }
                try await check(user, step)
            }
            if other == nil {
                // PostgreSQL: no change mark, so nothing is held and every read is the store's.
                #expect(ledger.held.count == 0)
            } else {
                #expect(served > 0)
                #expect(servedCustomer > 0)
            }
        } catch {
            await other?.close()
            await store.close()
            throw error
        }
        await other?.close()
        await store.close()
    }

    /// The regression: an answer held in memory is never served once a transaction committed after
    /// its row was read — this server's own write, another connection's, or a failed projection.
    @Test func aHeldAnswerIsDroppedByEveryCommit() async throws {
        let store = try await StoredBackend.sqlite.open()
        let other = try #require(try await Self.otherWriter(store))
        do {
            let (ledger, _) = OfferingReadTests.offerings(store, clock: VirtualClock(Self.now))
            let otherLedger = FactLedger(store: other, configuration: OfferingAPITests.configuration(), cache: ledger.cache)
            let context = ledger.answerContext(now: Self.now)
            _ = try await ledger.customer(appUserId: "u1", context: context)
            _ = try await ledger.renderedCustomer(appUserId: "u1", context: context)
            /// The head the storage read gives, read again: the second from memory.
            /// The customer read's answer too: the head's, whole, or none when the head is none.
            func head() throws -> RenderedCustomer.Head? {
                let first = try ledger.renderedHeadNow(appUserId: "u1", now: Self.now)
                #expect(try ledger.renderedHeadNow(appUserId: "u1", now: Self.now) == first)
                let customer = try ledger.renderedCustomerNow(appUserId: "u1", context: context)
                #expect(customer?.head == first)
                #expect(try ledger.renderedCustomerNow(appUserId: "u1", context: context)?.body(serverTime: 0) == customer?.body(serverTime: 0))
                return first
            }
            func mark() throws -> Int64? { if case .done(let mark) = try store.changeMarkNow() { mark } else { nil } }
            let new = try #require(try head())
            #expect(ledger.held.held(appUserId: "u1", mark: try #require(try mark()))?.rendered.head == new)

            // Another connection's write: the stored answer is gone until rendered again.
            try await Self.ingest(otherLedger, Self.purchase("a", bought: Self.now - Self.day, expires: Self.now + 30 * Self.day), for: "u1", at: Self.now)
            #expect(try head() == nil)
            _ = try await otherLedger.renderedCustomer(appUserId: "u1", context: context)
            let active = try #require(try head())
            #expect(active != new)
            #expect(active.audience(codec: ledger.cache.codec)?.states.contains(.active) == true)

            // This server's own write.
            try await Self.ingest(ledger, Self.purchase("b", bought: Self.now - 40 * Self.day, expires: Self.now - 10 * Self.day), for: "u1", at: Self.now)
            #expect(try head() == nil)
            _ = try await ledger.renderedCustomer(appUserId: "u1", context: context)
            #expect(try head() == active)

            // A projection marked failed by another connection: the read fails, as the storage read does.
            try await executeSQL(other, "UPDATE customer_states SET projection_error = 'poisoned' WHERE app_user_id = 'u1'")
            #expect(throws: StorageError.self) { try ledger.renderedHeadNow(appUserId: "u1", now: Self.now) }
            #expect(throws: StorageError.self) { try ledger.renderedCustomerNow(appUserId: "u1", context: context) }
            try await executeSQL(other, "UPDATE customer_states SET projection_error = NULL WHERE app_user_id = 'u1'")
            #expect(try head() == active)

            // Time alone: a held head that no longer holds (the subscription's end) is not served.
            let next = try #require(active.nextChangeAt)
            #expect(try ledger.renderedHeadNow(appUserId: "u1", now: next - 1) == active)
            #expect(try ledger.renderedHeadNow(appUserId: "u1", now: next) == nil)
            // A clock gone back before the row was computed.
            #expect(try ledger.renderedHeadNow(appUserId: "u1", now: Self.now - 1) == nil)
        } catch {
            await other.close()
            await store.close()
            throw error
        }
        await other.close()
        await store.close()
    }

    /// The seam alone: an answer is served only at the mark it was held with; a new mark drops
    /// the rest; never more than its budget of bytes, and one larger than the budget is not held.
    @Test func answersAreServedOnlyAtTheirMark() throws {
        let document = Array(#"entitled-answer/\#(RenderedCustomer.formatVersion) P - 15\#n{}\#n{"serverTime":"1970-01-01T00:00:00.000Z"}"#.utf8)
        let rendered = try #require(RenderedCustomer(document: document))
        let head = rendered.head
        let held = HeldAnswers.Held(rendered: rendered, computedAt: 1)
        let answers = HeldAnswers(budget: 2 * held.size + held.size / 2)
        answers.hold(held, appUserId: "a", mark: 7)
        #expect(answers.held(appUserId: "a", mark: 7)?.rendered.head == head)
        #expect(answers.held(appUserId: "a", mark: 7)?.rendered.document == document)
        #expect(answers.held(appUserId: "a", mark: 8) == nil)
        #expect(answers.held(appUserId: "b", mark: 7) == nil)
        answers.hold(held, appUserId: "b", mark: 7)
        answers.hold(held, appUserId: "b", mark: 7)
        #expect(answers.count == 2)
        // Full: the third empties it first.
        answers.hold(held, appUserId: "c", mark: 7)
        #expect(answers.count == 1)
        #expect(answers.held(appUserId: "c", mark: 7) != nil)
        answers.hold(held, appUserId: "d", mark: 9)
        #expect(answers.count == 1)
        #expect(answers.held(appUserId: "c", mark: 7) == nil)
        #expect(answers.held(appUserId: "d", mark: 9) != nil)
        let small = HeldAnswers(budget: held.size - 1)
        small.hold(held, appUserId: "a", mark: 7)
        #expect(small.count == 0)
    }
}
