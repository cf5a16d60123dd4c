import AppStore
import AppStoreTesting
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Storage
import Testing

/// One customer whose facts cannot be projected (here: a stored fact that no longer decodes as an
/// engine fact) next to healthy ones: ingest still commits and answers 200, that customer alone
/// answers 500 `PROJECTION_FAILED`, the others are served, and `rebuild` reports it and goes on.
@Suite struct ProjectionIsolationTests {
    static let ca = TestSigning.ca
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    /// Writes a fact row for `otid` whose payload is not an engine fact (as a damaged row, or one
    /// written by a format this binary no longer reads, would be).
    static func poison(_ store: any LedgerStore, otid: String, at now: Int64) async throws {
        try await _StorageFixtures.insertFactRow(
            store, kind: "transaction", signed: "not-a-fact-\(otid)", payload: #"{"unknown":true}"#, originalTransactionId: otid,
            signedDate: now, receivedAt: now)
    }

    /// A valid renewal info for `otid`.
    static func renewal(otid: String, at now: Int64) -> Fact {
        .renewalInfo(RenewalInfoFact(originalTransactionId: otid, productId: "pro.monthly", autoRenewStatus: true, signedDate: now))
    }

    func notification(uuid: String, otid: String, tid: String, token: String, expires: Int64) throws -> String {
        let signer = Self.ca.signer
        let transaction = Apple.transaction(otid: otid, tid: tid, purchase: t0 - Self.day, expires: expires, signed: t0, token: token)
        let payload = ResponseBodyV2DecodedPayload(
            notificationType: .didRenew, subtype: nil, notificationUUID: uuid,
            data: NotificationData(
                environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                signedTransactionInfo: try signer.sign(transaction)),
            version: "2.0", signedDate: t0)
        return try signer.sign(payload)
    }

    @Test(arguments: StoredBackend.all)
    func aPoisonedCustomerFailsAloneThroughIngestGetAndRebuild(backend: StoredBackend) async throws {
        try await StoredAPITests.run(backend) { api in
            let badToken = try #require(try await api.customer("bad").json["appAccountToken"] as? String)
            let goodToken = try #require(try await api.customer("good").json["appAccountToken"] as? String)
            #expect(try await api.postV2(try notification(uuid: "b1", otid: "ob", tid: "tb1", token: badToken, expires: t0 + 9 * Self.day)).status == 200)
            #expect(try await api.postV2(try notification(uuid: "g1", otid: "og", tid: "tg1", token: goodToken, expires: t0 + 9 * Self.day)).status == 200)

            let projector = FactLedger(
                store: api.store, policy: api.configuration.policy, cache: testFastPaths.projectionCache()).projector
            try await Self.poison(api.store, otid: "ob", at: t0)
            // The next ingest for the customer projects them from every fact: it fails for them alone.
            let poisoned = try await api.store.ingest(
                ReceivedMessage(notificationUUID: "poison-ob", source: .client, body: [], receivedAt: t0),
                facts: [(Self.renewal(otid: "ob", at: t0), nil)], claim: nil, projector: projector, now: t0)
            #expect(poisoned.failedCustomers.map(\.appUserId) == ["bad"])

            // Apple's next notification for the poisoned customer still commits: 200, stored.
            let renewal = try notification(uuid: "b2", otid: "ob", tid: "tb2", token: badToken, expires: t0 + 40 * Self.day)
            let accepted = try await api.postV2(renewal)
            #expect(accepted.status == 200)
            #expect(accepted.json["status"] as? String == "accepted")
            #expect(
                try await api.store.facts(appUserId: "bad").contains {
                    if case .transaction(let transaction)? = $0.fact { transaction.transactionId == "tb2" } else { false }
                })
            #expect(try await api.postV2(renewal).json["status"] as? String == "duplicate")

            // Reading it: 500 PROJECTION_FAILED, for that customer only.
            let failed = try await api.customer("bad")
            #expect(failed.status == 500)
            #expect(failed.code == "PROJECTION_FAILED")
            api.clock.advance(by: 20 * Self.day)  // past the stored answer's validity: the evaluating path
            #expect(try await api.customer("bad").code == "PROJECTION_FAILED")
            api.clock.advance(by: -20 * Self.day)
            #expect(try await api.postV2(try notification(uuid: "g2", otid: "og", tid: "tg2", token: goodToken, expires: t0 + 40 * Self.day)).status == 200)
            let good = try await api.customer("good")
            #expect(good.status == 200)
            #expect(good.entitlement("pro")?["status"] as? String == "active")

            let report = try await api.store.rebuild(projector: projector, now: api.clock.nowMilliseconds())
            #expect(report.customers == 2)
            #expect(report.failedCustomers.map(\.appUserId) == ["bad"])
            #expect(report.failedCustomers.first?.reason.contains("does not decode") == true)
            #expect(try await api.customer("good").status == 200)
        }
    }

    @Test func rebuildCommandReportsTheFailingCustomerFinishesTheOthersAndExitsOne() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-isolation-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = "sqlite:\(folder.path)/ledger.sqlite"
        let configuration = try SignedAPITests.configuration(trusting: Self.ca)
        let store = try await openStore(url: database)
        let ledger = FactLedger(store: store, policy: configuration.policy, cache: testFastPaths.projectionCache())
        for name in ["a-good", "b-bad", "c-good"] {
            // c-good's stored projection is a placeholder, so the rebuild has work to do after b-bad.
            let projector: Projector = name == "c-good" ? trivialTestProjector : ledger.projector
            _ = try await store.ensureCustomer(appUserId: name, appAccountToken: nil, projector: projector, now: t0)
        }
        // b-bad claims a subscription, then one of its fact rows turns undecodable.
        _ = try await store.ingest(
            ReceivedMessage(notificationUUID: nil, source: .client, body: [], receivedAt: t0),
            facts: [(Self.renewal(otid: "o-b-bad", at: t0), nil)], claim: Claim(appUserId: "b-bad"), projector: ledger.projector, now: t0)
        try await Self.poison(store, otid: "o-b-bad", at: t0)
        await store.close()

        let configFile = folder.appendingPathComponent("entitled.json")
        let root = try #require(configuration.apps.first?.appleRootCertificates.first)
        try Data(
            """
            {"apps": [{"bundleId": "\(APIHarness.bundleId)", "appAppleId": 1234, "environments": ["Production"],
                       "appleRootCertificates": ["\(root)"],
                       "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro",
                                     "level": 1, "entitlements": ["pro"]}]}]}
            """.utf8
        ).write(to: configFile)
        let rebuild = try await CLI.run(["rebuild", "--config", configFile.path, "--database", database])
        #expect(rebuild.status == 1, "\(rebuild.stdout) \(rebuild.stderr)")
        #expect(rebuild.stdout.contains("customers: 3"), "\(rebuild.stdout)")
        #expect(rebuild.stdout.contains("failed: b-bad: fact"), "\(rebuild.stdout)")
        #expect(rebuild.stdout.contains("changed: c-good"), "\(rebuild.stdout)")
    }
}

/// Stores the primary environment's state alone, so that a rebuild with the server's projector
/// (which merges its grant environments) finds a difference.
let trivialTestProjector = Projector(policy: Policy())
