import AppStore
import AppStoreTesting
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

@testable import Storage

/// What the ledger keeps of a posted body is bounded: an accepted body without its unknown keys, a
/// rejected one as a prefix; rejected records go after the retention, on the server's clock.
@Suite struct StoredBodyTests {
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    static func scalar(_ store: any LedgerStore, _ sql: SQLQuery) async throws -> Int64 {
        switch store {
        case let store as SQLiteStore: return try await store._scalar(sql)
        case let store as PostgresStore: return try await store._scalar(sql)
        default: throw StorageError(.internal, "unknown store")
        }
    }

    /// The bytes a body takes: as received, or packed as references to its facts (schema 14).
    static let storedBody: SQLQuery = "LENGTH(body) + COALESCE(LENGTH(body_packed), 0)"

    @Test(arguments: StoredBackend.all)
    func aPaddedTransactionStoresNoMoreThanTheUnpaddedOne(backend: StoredBackend) async throws {
        try await StoredAPITests.run(backend) { api in
            let signer = TestSigning.ca.signer
            func post(_ tid: String, pad: Int) async throws -> Int64 {
                let jws = try signer.sign(Apple.transaction(otid: "o-\(tid)", tid: tid, purchase: t0 - Self.day, expires: t0 + 29 * Self.day))
                let padding = pad > 0 ? #","pad":"\#(String(repeating: "x", count: pad))""# : ""
                let reply = try await api.send(
                    "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(jws)"\#(padding)}"#)
                #expect(reply.status == 200)
                return try await Self.scalar(api.store, "SELECT \(Self.storedBody) FROM notifications ORDER BY id DESC LIMIT 1")
            }
            let plain = try await post("t1", pad: 0)
            let padded = try await post("t2", pad: 250_000)
            #expect(plain > 0)
            #expect(padded <= plain + 16, "padded body stored \(padded) bytes, unpadded \(plain)")
            // Reposting the same transaction, padded, stores nothing more.
            let before = try await Self.scalar(api.store, "SELECT SUM(\(Self.storedBody)) FROM notifications")
            for _ in 0..<5 { _ = try await post("t2", pad: 250_000) }
            #expect(try await Self.scalar(api.store, "SELECT SUM(\(Self.storedBody)) FROM notifications") == before)
        }
    }

    /// How a V2 notification's `signedPayload` may arrive, and what the ledger must give back:
    /// the posted body and the text around the JWS (`%@`), and the body it stores — the one member
    /// that was verified, as the codec writes it — with `%@` the JWS.
    static let postedForms: [(name: String, posted: String, text: String, stored: String)] = [
        ("as Apple posts it", #"{"signedPayload":"%@"}"#, "%@", #"{"signedPayload":"%@"}"#),
        ("spaced, with a key beside it", #"{ "pad" : [1, 2], "signedPayload" : "%@" }"#, "%@", #"{"signedPayload":"%@"}"#),
        ("a newline after the JWS", #"{"signedPayload":"%@\n"}"#, "%@\n", #"{"signedPayload":"%@\n"}"#),
        ("a space before the JWS", #"{"signedPayload":" %@"}"#, " %@", #"{"signedPayload":" %@"}"#),
        ("a padded signature", #"{"signedPayload":"%@=="}"#, "%@==", #"{"signedPayload":"%@=="}"#),
    ]

    /// The verifier's decode is what the ledger stores a notification from (its texts packed from
    /// the decoded segments, its body written around a bare JWS instead of encoded): whatever form
    /// the JWS came in, its body and every signed text come back byte for byte and verify again.
    @Test(arguments: StoredBackend.all.flatMap { backend in Self.postedForms.indices.map { (backend, $0) } })
    func anAcceptedNotificationComesBackByteForByte(backend: StoredBackend, form: Int) async throws {
        let (_, posted, text, stored) = Self.postedForms[form]
        try await StoredAPITests.run(backend) { api in
            let signer = TestSigning.ca.signer
            let signedTransaction = try signer.sign(
                Apple.transaction(otid: "o-b", tid: "t-b", purchase: t0 - Self.day, expires: t0 + 29 * Self.day))
            let signedRenewal = try signer.sign(Apple.renewal(otid: "o-b", signed: t0 - Self.day))
            let jws = try signer.sign(
                ResponseBodyV2DecodedPayload(
                    notificationType: .subscribed, subtype: .initialBuy, notificationUUID: "n-b",
                    data: NotificationData(
                        environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                        signedTransactionInfo: signedTransaction, signedRenewalInfo: signedRenewal),
                    version: "2.0", signedDate: t0 - Self.day))
            func fill(_ form: String) -> String { form.replacingOccurrences(of: "%@", with: jws) }
            let reply = try await api.send("POST", "/v1/apple/notifications", json: fill(posted))
            #expect(reply.status == 200, "\(reply.status)")
            let signed = api.store as! any SignedLedger
            let id = try await Self.scalar(api.store, "SELECT MAX(id) FROM notifications WHERE outcome = 'accepted'")
            #expect(try await signed.notificationBody(id: id) == Array(fill(stored).utf8))
            let facts = try await signed.signedFacts(after: 0, limit: 10)
            #expect(Set(facts.map(\.text)) == [fill(text), signedTransaction, signedRenewal])
            let verifier = try AppStoreVerifier(apps: api.configuration.apps, clock: api.clock)
            for fact in facts {
                #expect(try await verifier.reverify(kind: fact.kind, signed: fact.text, app: api.configuration.apps[0]), "\(fact.kind)")
            }
        }
    }

    @Test(arguments: StoredBackend.all)
    func rejectedBodiesAreBoundedAndPurgedAfterTheRetention(backend: StoredBackend) async throws {
        try await StoredAPITests.run(backend) { (api: StoredAPITests.Harness) async throws in
            let forged = "eyJhbGciOiJFUzI1NiJ9." + String(repeating: "A", count: 200_000) + ".c2ln"
            #expect(try await api.postV2(forged).status == 400)
            #expect(try await Self.scalar(api.store, "SELECT MAX(LENGTH(body)) FROM notifications WHERE outcome = 'rejected'") == 4096)
            #expect(try await Self.scalar(api.store, "SELECT MAX(body_size) FROM notifications WHERE outcome = 'rejected'") > 200_000)

            let purge = RejectedPurge(store: api.store, clock: api.clock, retentionDays: 30)
            api.clock.advance(by: 30 * Self.day)
            #expect(try await purge.runOnce() == 0)  // exactly 30 days old: kept
            #expect(try await api.postV2(forged).status == 400)  // a newer one
            api.clock.advance(by: 1)
            #expect(try await purge.runOnce() == 1)
            #expect(try await Self.scalar(api.store, "SELECT COUNT(*) FROM notifications WHERE outcome = 'rejected'") == 1)
        }
    }
}
