import AppStore
import EntitledConfig
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Storage
import Testing

@testable import EntitledServer

/// The ingest as reconciliation, backfill and import use it: no request, no router, no HTTP
/// error anywhere (this file imports no HTTP module; this suite starts no server), the rejection's
/// source named by the caller.
@Suite struct IngestTests {
    let t0 = APIHarness.start

    /// An ingest over the real ledger on `sqlite::memory:` and the stub verifier, as
    /// ``Application`` builds it for its routes and workers.
    func withIngest(_ body: (Ingest, TestLedger) async throws -> Void) async throws {
        let configuration = APIHarness.configuration()
        let cache = testFastPaths.projectionCache()
        let ledger = try await TestLedger(policy: configuration.policy, cache: cache, grantEnvironments: configuration.grantEnvironments)
        let ingest = Ingest(
            configuration: configuration, verifier: StubVerifier(), ledger: ledger.ledger, clock: VirtualClock(t0),
            codec: cache.codec, metrics: ServerMetrics())
        do {
            try await body(ingest, ledger)
        } catch {
            await ledger.store.close()
            throw error
        }
        await ledger.store.close()
    }

    @Test func reconciliationStoresANotificationAndRecordsARefusalUnderItsSource() async throws {
        try await withIngest { (ingest: Ingest, ledger: TestLedger) async throws in
            let signed = Apple.notification(
                .subscribed, .initialBuy, uuid: "n-1", signed: t0 - 1_000,
                transaction: Apple.transaction(purchase: t0 - 1_000, expires: t0 + 600_000))
            #expect(try await ingest.notificationRecordingRejection(signedPayload: signed, source: .reconcile) == .accepted)
            #expect(try await ingest.notificationRecordingRejection(signedPayload: signed, source: .reconcile) == .duplicate)
            #expect(try await ledger.acceptedCount() == 1)
            #expect(try await ledger.texts("SELECT source FROM notifications WHERE notification_uuid = 'n-1'") == ["reconcile"])

            let forged = Apple.notification(.didRenew, uuid: "n-2", signed: t0, signature: "forged")
            await #expect {
                _ = try await ingest.notificationRecordingRejection(signedPayload: forged, source: .reconcile)
            } throws: { error in
                guard case .rejected(let rejection) = error as? IngestError else { return false }
                return rejection.code == .invalidSignature
            }
            #expect(try await ledger.rejectedCodes() == ["INVALID_SIGNATURE"])
            #expect(try await ledger.texts("SELECT source FROM notifications WHERE outcome = 'rejected'") == ["reconcile"])
        }
    }

    @Test func aRetryableRefusalIsNotRecorded() async throws {
        try await withIngest { (ingest: Ingest, ledger: TestLedger) async throws in
            let signed = Apple.notification(.didRenew, uuid: "n-3", signed: t0, signature: "retry")
            await #expect {
                _ = try await ingest.notificationRecordingRejection(signedPayload: signed, source: .reconcile)
            } throws: { error in
                guard case .rejected(let rejection) = error as? IngestError else { return false }
                return rejection.isRetryable
            }
            #expect(try await ledger.rejectedCodes().isEmpty)
        }
    }

    /// What `entitled import` does for each line: the transaction linked to the named customer.
    @Test func importLinksATransactionToTheNamedCustomer() async throws {
        try await withIngest { (ingest: Ingest, ledger: TestLedger) async throws in
            let jws = FakeJWS.make(Apple.transaction(otid: "o7", tid: "t7", purchase: t0 - 1_000, expires: t0 + 600_000))
            let fact = try await ingest.transaction(
                jws, source: .backfill, claim: Claim(appUserId: "imported-user", behaviour: .transfer), now: t0)
            #expect(fact.originalTransactionId == "o7")
            let owned = try await ledger.ledger.subscription(originalTransactionId: "o7")
            #expect(owned?.customer?.appUserId == "imported-user")
            #expect(try await ledger.texts("SELECT source FROM notifications") == ["backfill"])
        }
    }

    @Test func aStorageOutageIsAStorageErrorNotARejection() async throws {
        try await withIngest { (ingest: Ingest, ledger: TestLedger) async throws in
            ledger.available = false
            let signed = Apple.notification(
                .subscribed, .initialBuy, uuid: "n-4", signed: t0 - 1_000,
                transaction: Apple.transaction(purchase: t0 - 1_000, expires: t0 + 600_000))
            await #expect {
                _ = try await ingest.notificationRecordingRejection(signedPayload: signed, source: .reconcile)
            } throws: { error in
                guard case .storage = error as? IngestError else { return false }
                return true
            }
            ledger.available = true
            #expect(try await ledger.rejectedCodes().isEmpty)
        }
    }
}

/// Each route names the source its refusals are recorded under: the endpoint that refused them,
/// whatever the request's path looked like.
@Suite struct RejectionSourceTests {
    @Test func eachRouteRecordsItsRefusalsUnderItsOwnSource() async throws {
        try await APIHarness.run { api in
            let t0 = APIHarness.start
            let forged = Apple.notification(.didRenew, uuid: "n-9", signed: t0, signature: "forged")
            #expect(try await api.postV2(forged).code == "INVALID_SIGNATURE")

            var body = FactMapperTests.v1Body
            body.bid = APIHarness.bundleId
            body.password = "not-the-shared-secret"
            let v1 = try await api.send("POST", "/v1/apple/notifications/v1", body: Array(AppStoreJSON.encode(body)))
            #expect(v1.code == "INVALID_SHARED_SECRET")

            let transaction = FakeJWS.make(Apple.transaction(purchase: t0 - 1_000, expires: t0 + 600_000), signature: "forged")
            let posted = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(transaction)"}"#)
            #expect(posted.code == "INVALID_SIGNATURE")

            #expect(
                try await api.ledger.texts("SELECT source || ' ' || reject_code FROM notifications WHERE outcome = 'rejected' ORDER BY id")
                    == ["apple-v2 INVALID_SIGNATURE", "apple-v1 INVALID_SHARED_SECRET", "client INVALID_SIGNATURE"])
        }
    }
}
