import Entitlements
import Foundation
import Testing

@testable import Storage

/// Storage keeps each customer's state in its own encoding and the reader's answer beside it, as
/// bytes it never reads: the answer holds only as long as the state it was rendered from.
@Suite("Stored answers beside storage's own state")
struct StoredAnswerTests {
    static let token = "00000000-0000-4000-8000-0000000000a1"

    static func purchase(_ tid: String, expires: Int64, signed: Int64) -> SignedFact {
        Fixture.transaction(otid: "a1", tid: tid, expires: expires, signed: signed, token: token)
    }

    @Test("the state is storage's encoding; an answer is kept while the state is the same, dropped when it changes", arguments: Backend.all)
    func answerFollowsTheState(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            _ = try await store.ensureCustomer(appUserId: "ann", appAccountToken: Self.token, projector: testProjector, now: testNow)
            _ = try await store.ingest(
                Fixture.batch(facts: [Self.purchase("a1", expires: testNow + day, signed: testNow - 1)]), projector: testProjector,
                now: testNow)
            let first = try #require(try await store.projection(appUserId: "ann"))
            let document = try #require(CustomerDocument(encoded: first.document))
            #expect(document.appUserId == "ann")
            #expect(document.appAccountToken == Self.token)
            #expect(document.environments == nil)
            #expect(document.state.entitlements.map(\.id) == ["pro"])
            #expect(first.answer == nil)

            // Stored only beside the state it was rendered from.
            let answer = Array("rendered for the first state".utf8)
            #expect(try await store.storeAnswer(answer, appUserId: "ann", document: Array("{}".utf8)) == false)
            #expect(try await store.projection(appUserId: "ann")?.answer == nil)
            #expect(try await store.storeAnswer(answer, appUserId: "ann", document: first.document))
            #expect(try await store.projection(appUserId: "ann")?.answer == answer)

            // Projected again to the same state: the answer stays.
            _ = try await store.reproject(appUserId: "ann", projector: testProjector, now: testNow + 1)
            let same = try #require(try await store.projection(appUserId: "ann"))
            #expect(same.document == first.document)
            #expect(same.answer == answer)
            #expect(try await store.compareProjections(projector: testProjector).differences == 0)

            // A renewal changes the state: the answer rendered from the old one goes.
            _ = try await store.ingest(
                Fixture.batch(facts: [Self.purchase("a2", expires: testNow + 30 * day, signed: testNow)]), projector: testProjector,
                now: testNow + 2)
            let renewed = try #require(try await store.projection(appUserId: "ann"))
            #expect(renewed.document != first.document)
            #expect(renewed.answer == nil)
            #expect(try await store.storeAnswer(answer, appUserId: "ann", document: first.document) == false)
            #expect(try await store.projection(appUserId: "ann")?.answer == nil)
        }
    }

    @Test("an event carries the state in storage's encoding", arguments: Backend.all)
    func eventsCarryTheState(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            _ = try await store.ensureCustomer(appUserId: "eve", appAccountToken: Self.token, projector: testProjector, now: testNow)
            _ = try await store.ingest(
                Fixture.batch(facts: [Self.purchase("e1", expires: testNow + day, signed: testNow)]), projector: testProjector,
                now: testNow)
            let events = try await store.events(after: 0, limit: 10).filter { $0.appUserId == "eve" }
            let event = try #require(events.first)
            let document = try #require(CustomerDocument(encoded: event.answer))
            #expect(document.appUserId == "eve")
            #expect(event.answer == (try await store.projection(appUserId: "eve"))?.document)
        }
    }

    /// A database written before the answer had its own column (a checked-in ledger of schema
    /// version 15): its states were the reader's answers. They become the stored answers (reads
    /// keep serving them), the states are written again by the next projection, and until then
    /// `check` compares the rows alone.
    @Test("the upgrade moves the old states to the answers", arguments: Backend.durable)
    func upgrade(backend: Backend) async throws {
        let database = try TestDatabase(backend)
        do {
            try await database.restore(.ledgerV15)
            let before = try await RepackMigrationTests.answers(database)
            let after = try await database.open()
            do {
                for (name, old) in before where !old.document.isEmpty {
                    let moved = try #require(try await after.projection(appUserId: name))
                    #expect(moved.answer == old.document)
                    #expect(moved.document.isEmpty)
                    if case .done(let state) = try after.stateNow(appUserId: name) { #expect(state?.answer == moved.answer) }
                }
                #expect(try await after.compareProjections(projector: testProjector).differences == 0)
                // The next projection writes storage's own state; the old answer goes with the old state.
                let rebuilt = try await after.rebuild(projector: testProjector, now: testNow)
                #expect(Set(rebuilt.changedCustomers) == Set(before.filter { !$0.value.document.isEmpty }.keys))
                for name in before.keys {
                    let fresh = try #require(try await after.projection(appUserId: name))
                    #expect(CustomerDocument(encoded: fresh.document) != nil)
                    #expect(fresh.answer == nil)
                }
                #expect(try await after.rebuild(projector: testProjector, now: testNow).differences == 0)
            } catch {
                await after.close()
                throw error
            }
            await after.close()
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }
}
