import AppStore
import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Storage
import Testing

@testable import EntitledServer

/// The fast paths' seams: the `ENTITLED_FAST_PATHS` switch, the projection cache with it off, and
/// stored answers of another format version.
@Suite struct ProjectionCacheTests {
    static let now = APIHarness.start

    @Test(arguments: [
        ([String: String](), true), (["ENTITLED_FAST_PATHS": "off"], false), (["ENTITLED_FAST_PATHS": "on"], true),
    ])
    func theEnvironmentSwitchesBothSeams(environment: [String: String], enabled: Bool) {
        let paths = FastPaths(environment: environment)
        #expect(paths.enabled == enabled)
        #expect(paths.codec.fastPaths == enabled)
        #expect(paths.projectionCache().enabled == enabled)
        #expect(paths.projectionCache().codec == paths.codec)
    }

    /// Off, nothing is stored or reused, and the answer is the same bytes, Foundation's.
    @Test func offStoresNoAnswerAndSendsTheSameBytes() throws {
        let policy = APIHarness.configuration().policy
        let customer = CustomerRecord(id: 1, appUserId: "u/1", appAccountToken: "tok", createdAt: 1)
        let state = evaluate(facts: [], policy: policy, now: Self.now)
        let body = CustomerBody(customer: customer, state: state, now: Self.now)
        let on = FastPaths(enabled: true).projectionCache()
        let off = FastPaths(enabled: false).projectionCache()
        let foundation = Array(try JSONEncoder.entitledDefault.encode(body))
        for _ in 0..<2 {
            #expect(try on.bytes(for: body) == foundation)
            #expect(try off.bytes(for: body) == foundation)
        }
        let document = try CustomerDocument(customer: customer, environments: [.production, .sandbox], state: state).encoded()
        #expect(off.answer(rendering: document) == nil)
        let rendered = try #require(on.answer(rendering: document))
        #expect(rendered.body(serverTime: Self.now) == foundation)
        #expect(off.storedAnswer(rendered.document) == .unusable)
        #expect(on.storedAnswer(rendered.document) == .current(rendered))
        #expect(on.storedAnswer(nil) == .outdated)
    }

    /// An event carries storage's state: the feed renders its `customer` in this binary's format,
    /// as the customer read answers at the event's time. An older binary's event holding a rendered
    /// answer of this format is sent as it is; none is `null`.
    @Test func anEventsCustomerIsRenderedFromTheStoredState() throws {
        let customer = CustomerRecord(id: 7, appUserId: "u/7", appAccountToken: "tok", createdAt: 1, aliases: ["other"])
        let state = evaluate(facts: [], policy: APIHarness.configuration().policy, now: Self.now)
        let expected = Array(try JSONEncoder.entitledDefault.encode(CustomerBody(customer: customer, state: state, now: Self.now)))
        let document = try CustomerDocument(customer: customer, environments: [.production, .sandbox], state: state).encoded()
        #expect(EventJSON.customerAnswer(document, serverTime: Self.now) == expected)
        let rendered = try #require(
            RenderedCustomer(body: CustomerBody(customer: customer, state: state, now: 0), scope: "Production+Sandbox"))
        #expect(EventJSON.customerAnswer(rendered.document, serverTime: Self.now) == expected)
        #expect(EventJSON.customerAnswer([], serverTime: Self.now) == Array("null".utf8))
    }

    /// What is stored as the customer's answer before the read.
    enum Stored: String, CaseIterable, Sendable {
        /// An answer rendered by an older binary.
        case olderFormat
        /// Nothing usable (no rendering stored).
        case noAnswer
        /// An answer rendered by a newer binary (during a rolling upgrade).
        case newerFormat

        var reRendered: Bool { self != .newerFormat }

        /// `answer` (this binary's) as it would be stored.
        func restate(_ answer: [UInt8]) -> [UInt8] {
            let header = Array("entitled-answer/\(RenderedCustomer.formatVersion) ".utf8)
            let body = answer.dropFirst(header.count)
            switch self {
            case .olderFormat: return Array("entitled-answer/\(RenderedCustomer.formatVersion - 1) ".utf8) + body
            case .noAnswer: return []
            case .newerFormat: return Array("entitled-answer/\(RenderedCustomer.formatVersion + 1) ".utf8) + body
            }
        }
    }

    /// The stored state is storage's own encoding, whatever the answer format: an answer of an
    /// older format (or none) is rendered again from it on the next read, stored and served, with
    /// no `rebuild` and no new projection; a newer binary's is left alone (and the read evaluates).
    @Test(arguments: StoredBackend.all, Stored.allCases)
    func anotherFormatIsRenderedAgainFromTheStoredState(backend: StoredBackend, stored: Stored) async throws {
        let store = try await backend.open()
        do {
            let policy = APIHarness.configuration().policy
            let ledger = FactLedger(store: store, policy: policy, cache: FastPaths(enabled: true).projectionCache())
            let context = ledger.answerContext(now: Self.now)
            _ = try await ledger.customer(appUserId: "u1", context: context)
            let written = try #require(try await store.projection(appUserId: "u1"))
            #expect(written.answer == nil)
            #expect(RenderedCustomer(document: written.document) == nil)
            #expect(CustomerDocument(encoded: written.document)?.appUserId == "u1")

            // The first read renders the answer and stores it beside the state.
            let first = try #require(try await ledger.renderedCustomer(appUserId: "u1", context: context))
            let current = try #require(try await store.projection(appUserId: "u1")?.answer)
            #expect(RenderedCustomer(document: current) == first)

            // Another binary's answer for the same state.
            #expect(try await store.storeAnswer(stored.restate(current), appUserId: "u1", document: written.document))
            #expect(try await store.compareProjections(projector: ledger.projector).differences == 0)

            let later = ledger.answerContext(now: Self.now + 1000)
            let answer = try await ledger.renderedCustomer(appUserId: "u1", context: later)
            let after = try #require(try await store.projection(appUserId: "u1"))
            #expect(after.document == written.document)
            #expect(after.computedAt == written.computedAt)
            if stored.reRendered {
                #expect(answer == first)
                #expect(after.answer == current)
            } else {
                #expect(answer == nil)
                #expect(after.answer == stored.restate(current))
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    /// A write that changes the customer's state drops the stored answer; one that leaves it as it
    /// was keeps it. The poll thread's read serves a stored answer and never renders one.
    @Test func aChangedStateDropsTheAnswerAndThePollThreadOnlyServesStoredOnes() async throws {
        let store = try await StoredBackend.sqlite.open()
        do {
            let ledger = FactLedger(
                store: store, configuration: APIHarness.configuration(), cache: FastPaths(enabled: true).projectionCache())
            let context = ledger.answerContext(now: Self.now)
            _ = try await ledger.customer(appUserId: "u2", context: context)
            #expect(try ledger.renderedCustomerNow(appUserId: "u2", context: context) == nil)
            let rendered = try #require(try await ledger.renderedCustomer(appUserId: "u2", context: context))
            #expect(try ledger.renderedCustomerNow(appUserId: "u2", context: context) == rendered)

            // Projected again with nothing new: same state, same answer.
            _ = try await store.reproject(appUserId: "u2", projector: ledger.projector, now: Self.now)
            #expect(try await store.projection(appUserId: "u2")?.answer == rendered.document)

            // A grant changes the state: the answer rendered from the old one goes.
            let grant = PromotionalGrantFact(
                grantId: "g1", entitlement: "pro", grantedAt: Self.now, expiresDate: Self.now + 86_400_000,
                appAccountToken: try #require(try await store.customer(appUserId: "u2")).appAccountToken)
            #expect(try await store.appendCustomerFact(.promotionalGrant(grant), projector: ledger.projector, now: Self.now))
            let changed = try #require(try await store.projection(appUserId: "u2"))
            #expect(changed.answer == nil)
            #expect(try await store.storeAnswer(rendered.document, appUserId: "u2", document: Array("{}".utf8)) == false)
            #expect(try ledger.renderedCustomerNow(appUserId: "u2", context: context) == nil)
            let renewed = try #require(try await ledger.renderedCustomer(appUserId: "u2", context: context))
            #expect(renewed != rendered)
            #expect(try ledger.renderedCustomerNow(appUserId: "u2", context: context) == renewed)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
