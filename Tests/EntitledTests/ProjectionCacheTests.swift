import AppStore
import EntitledConfig
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
        let body = CustomerBody(
            customer: CustomerRecord(id: 1, appUserId: "u/1", appAccountToken: "tok", createdAt: 1),
            state: evaluate(facts: [], policy: policy, now: Self.now), now: Self.now)
        let on = FastPaths(enabled: true).projectionCache()
        let off = FastPaths(enabled: false).projectionCache()
        let foundation = Array(try JSONEncoder.entitledDefault.encode(body))
        for _ in 0..<2 {
            #expect(try on.bytes(for: body) == foundation)
            #expect(try off.bytes(for: body) == foundation)
        }
        #expect(off.document(for: body, scope: "Production+Sandbox").isEmpty)
        let document = on.document(for: body, scope: "Production+Sandbox")
        #expect(off.storedAnswer(document) == .unusable)
        #expect(on.storedAnswer(document) == .current(try #require(RenderedCustomer(document: document))))
    }

    /// What a customer's stored state document holds before the read.
    enum Stored: String, CaseIterable, Sendable {
        /// An answer rendered by an older binary.
        case olderFormat
        /// No answer: written with the projection cache off.
        case noAnswer
        /// An answer rendered by a newer binary (during a rolling upgrade).
        case newerFormat

        var reRendered: Bool { self != .newerFormat }

        /// `document` (this binary's) as it would be stored.
        func restate(_ document: [UInt8]) -> [UInt8] {
            let header = Array("entitled-answer/\(RenderedCustomer.formatVersion) ".utf8)
            let body = document.dropFirst(header.count)
            switch self {
            case .olderFormat: return Array("entitled-answer/\(RenderedCustomer.formatVersion - 1) ".utf8) + body
            case .noAnswer: return []
            case .newerFormat: return Array("entitled-answer/\(RenderedCustomer.formatVersion + 1) ".utf8) + body
            }
        }
    }

    /// Projects as `base` does, but stores the document as another binary would have.
    struct OtherBinary: Projector {
        let base: FactLedger
        let stored: Stored
        var policy: Policy { base.policy }
        func encode(_ fact: Fact) -> String { base.encode(fact) }
        func decode(_ text: String) -> Fact? { base.decode(text) }
        func document(customer: Storage.CustomerRecord, state: CustomerState) -> [UInt8] {
            stored.restate(base.document(customer: customer, state: state))
        }
    }

    /// A stored answer of an older format (or none) is rendered again on its first read and the new
    /// one stored, with no `rebuild`; a newer binary's is left alone (and the read evaluates).
    @Test(arguments: StoredBackend.all, Stored.allCases)
    func anOlderStoredAnswerIsRenderedAgainOnRead(backend: StoredBackend, stored: Stored) async throws {
        let store = try await backend.open()
        do {
            let policy = APIHarness.configuration().policy
            let ledger = FactLedger(store: store, policy: policy, cache: FastPaths(enabled: true).projectionCache())
            let context = ledger.answerContext(now: Self.now)
            _ = try await ledger.customer(appUserId: "u1", context: context)
            let current = try #require(try await store.projection(appUserId: "u1")).projection.state
            #expect(RenderedCustomer(document: current) != nil)

            _ = try await store.rebuild(projector: OtherBinary(base: ledger, stored: stored), now: Self.now)
            let planted = try #require(try await store.projection(appUserId: "u1")).projection.state
            #expect(planted == stored.restate(current))

            let later = ledger.answerContext(now: Self.now + 1000)
            let answer = try await ledger.renderedCustomer(appUserId: "u1", context: later)
            let after = try #require(try await store.projection(appUserId: "u1"))
            if stored.reRendered {
                #expect(answer == RenderedCustomer(document: current))
                #expect(after.projection.state == current)
                #expect(after.computedAt == later.now)
            } else {
                #expect(answer == nil)
                #expect(after.projection.state == planted)
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
