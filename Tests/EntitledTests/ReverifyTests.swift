import AppStore
import AppStoreTesting
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Storage
import Testing

/// `entitled check --reverify`: every stored signature, rebuilt from the packed ledger, verified
/// again against the configured roots; one that does not verify is named and fails the check.
@Suite struct ReverifyTests {
    /// A SQLite file and a configuration whose one app trusts `ca`'s root, in a folder of its own.
    struct Fixture {
        let folder: URL
        let configuration: Configuration
        let now = Int64(Date().timeIntervalSince1970 * 1000)

        init(trusting ca: TestCertificateAuthority) throws {
            folder = try CLI.writableFolder()
            let rootFile = folder.appendingPathComponent("root.der")
            try Data(ca.rootDER).write(to: rootFile)
            var configuration = Configuration()
            configuration.database = "sqlite:" + folder.appendingPathComponent("entitled.sqlite").path
            configuration.apps = [
                App(bundleId: APIHarness.bundleId, appAppleId: 1234, environments: ["Production"], appleRootCertificates: [rootFile.path])
            ]
            self.configuration = configuration
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    /// Erasure unlinks Apple's facts from the person but keeps them as signed: the
    /// check still verifies every stored signature afterwards, and nothing is left without one.
    @Test func signaturesStillVerifyAfterTheirCustomerIsErased() async throws {
        let ca = try TestCertificateAuthority()
        let fixture = try Fixture(trusting: ca)
        defer { fixture.remove() }
        let configuration = fixture.configuration, now = fixture.now
        let store = try await openStore(url: configuration.database)
        let ledger = FactLedger(store: store, configuration: configuration, cache: FastPaths(enabled: true).projectionCache())
        for n in 1...2 {
            let transaction = Apple.transaction(otid: "o\(n)", tid: "t\(n)", purchase: now - 86_400_000, expires: now + 86_400_000)
            let fact = TransactionFact(
                transactionId: "t\(n)", originalTransactionId: "o\(n)", productId: "pro.monthly", purchaseDate: now - 86_400_000,
                expiresDate: now + 86_400_000, productType: .autoRenewable, signedDate: now - 86_400_000)
            let result = try await store.ingest(
                ReceivedMessage(notificationUUID: nil, source: .client, body: Array("{}".utf8), receivedAt: now, bundleId: APIHarness.bundleId),
                facts: [(.transaction(fact), try ca.signer.sign(transaction))], claim: Claim(appUserId: "to-be-erased"),
                projector: ledger.projector, now: now)
            #expect(result.insertedFacts == 1)
        }
        let erased = try #require(try await ledger.eraseCustomer(appUserId: "to-be-erased", actor: "ops", now: now))
        #expect(erased.ids == 1 && erased.subscriptions == 2)
        await store.close()

        let report = try await DatabaseMaintenance.check(
            configuration: configuration, full: false, fastPaths: FastPaths(enabled: true), reverify: true)
        #expect(report.succeeded, "\(report.lines)")
        #expect(report.lines.contains("signatures: 2 verified again, 0 failed, 0 without a signed form"), "\(report.lines)")
    }

    @Test func everyStoredSignatureVerifiesAgainAndAForgedOneIsNamed() async throws {
        try await storedSignaturesVerify(writtenBeforeCompression: false)
    }

    /// Schema 16: a ledger written by version 15 (the JSON not compressed) is rewritten on open and
    /// every signature still verifies, every answer the same.
    @Test func aLedgerWrittenBeforeCompressionStillVerifiesAfterItsRewrite() async throws {
        try await storedSignaturesVerify(writtenBeforeCompression: true)
    }

    func storedSignaturesVerify(writtenBeforeCompression: Bool) async throws {
        let ca = try TestCertificateAuthority()
        let fixture = try Fixture(trusting: ca)
        defer { fixture.remove() }
        let configuration = fixture.configuration, now = fixture.now
        if writtenBeforeCompression {
            // A ledger version 15 left (`Fixtures/README.md`): a notification with its nested
            // transaction, signed by the chain whose root is `signed_v15_root.der`.
            let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
            try FileManager.default.removeItem(at: fixture.folder.appendingPathComponent("root.der"))
            try FileManager.default.copyItem(
                at: fixtures.appendingPathComponent("signed_v15_root.der"), to: fixture.folder.appendingPathComponent("root.der"))
            try FileManager.default.copyItem(
                at: fixtures.appendingPathComponent("signed_v15.sqlite"), to: fixture.folder.appendingPathComponent("entitled.sqlite"))
            // Opened by this version: rewritten, and answering as before. The stored state as it
            // was became the stored answer (schema 26); the rows are kept (CompressMigrationTests
            // compares them with the unmigrated ledger's).
            let rewritten = try await openStore(url: configuration.database)
            let ledger = FactLedger(store: rewritten, configuration: configuration, cache: FastPaths(enabled: true).projectionCache())
            let after = try #require(try await rewritten.projection(appUserId: "sam"))
            #expect(after.answer?.isEmpty == false && after.document.isEmpty)
            #expect(!after.projection.subscriptions.isEmpty)
            #expect(try await rewritten.compareProjections(projector: ledger.projector).differences == 0)
            await rewritten.close()
        } else {
            let store = try await openStore(url: configuration.database)
            let ledger = FactLedger(store: store, configuration: configuration, cache: FastPaths(enabled: true).projectionCache())
            // A notification with its nested transaction, as the V2 endpoint stores it.
            let transaction = Apple.transaction(otid: "o1", tid: "t1", purchase: now - 86_400_000, expires: now + 86_400_000)
            let signedTransaction = try ca.signer.sign(transaction)
            let signedPayload = try ca.signer.sign(
                ResponseBodyV2DecodedPayload(
                    notificationType: .subscribed, subtype: .initialBuy, notificationUUID: "n1",
                    data: NotificationData(
                        environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                        signedTransactionInfo: signedTransaction),
                    version: "2.0", signedDate: now - 86_400_000))
            let fact = TransactionFact(
                transactionId: "t1", originalTransactionId: "o1", productId: "pro.monthly", purchaseDate: now - 86_400_000,
                expiresDate: now + 86_400_000, productType: .autoRenewable, signedDate: now - 86_400_000)
            let notification = NotificationFact(
                type: "SUBSCRIBED", notificationUUID: "n1", signedDate: now - 86_400_000, originalTransactionId: "o1")
            _ = try await store.ingest(
                ReceivedMessage(
                    notificationUUID: "n1", source: .appleV2, body: Array(#"{"signedPayload":"\#(signedPayload)"}"#.utf8), receivedAt: now,
                    bundleId: APIHarness.bundleId),
                facts: [(.notification(notification), signedPayload), (.transaction(fact), signedTransaction)],
                claim: Claim(appUserId: "sam"), projector: ledger.projector, now: now)
            await store.close()
        }

        let sound = try await DatabaseMaintenance.check(
            configuration: configuration, full: false, fastPaths: FastPaths(enabled: true), reverify: true)
        #expect(sound.succeeded, "\(sound.lines)")
        #expect(sound.lines.contains("signatures: 2 verified again, 0 failed, 0 without a signed form"), "\(sound.lines)")

        // A transaction signed by a chain the configuration does not trust, stored as if verified.
        let forger = try TestCertificateAuthority()
        let forged = Apple.transaction(otid: "o2", tid: "t2", purchase: now - 86_400_000, expires: now + 86_400_000)
        let reopened = try await openStore(url: configuration.database)
        let ledger = FactLedger(store: reopened, configuration: configuration, cache: FastPaths(enabled: true).projectionCache())
        let result = try await reopened.ingest(
            ReceivedMessage(notificationUUID: nil, source: .client, body: Array("{}".utf8), receivedAt: now, bundleId: APIHarness.bundleId),
            facts: [
                (
                    .transaction(
                        TransactionFact(
                            transactionId: "t2", originalTransactionId: "o2", productId: "pro.monthly", purchaseDate: now - 86_400_000,
                            expiresDate: now + 86_400_000, productType: .autoRenewable, signedDate: now - 86_400_000)),
                    try forger.signer.sign(forged)
                )
            ], claim: Claim(appUserId: "mallory"), projector: ledger.projector, now: now)
        #expect(result.insertedFacts == 1)
        await reopened.close()
        let found = try await DatabaseMaintenance.check(
            configuration: configuration, full: false, fastPaths: FastPaths(enabled: true), reverify: true)
        #expect(!found.succeeded)
        #expect(found.lines.contains("signatures: 2 verified again, 1 failed, 0 without a signed form"), "\(found.lines)")
        #expect(found.lines.contains { $0.hasPrefix("  failed: fact 3 (transaction, \(APIHarness.bundleId)): ") }, "\(found.lines)")
    }
}
