import AppStore
import AppStoreTesting
@testable import EntitledTestSupport
import Foundation
import Testing

/// ECDSA signatures are malleable: `(r, n−s)` verifies wherever `(r, s)` does, and Apple's own
/// signatures are not guaranteed low-S, so both are accepted — and the ledger must still store the
/// signed content once.
@Suite struct SignatureMalleabilityTests {
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    /// The P-256 group order n, big-endian.
    static let order: [UInt8] = Array(
        Data(base64Encoded: "/////wAAAAD//////////7zm+q2nF56E87nKwvxjJVE=")!)

    /// The same JWS with its ES256 signature `(r, s)` replaced by `(r, n − s)`.
    static func highSTwin(_ jws: String) throws -> String {
        var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        var base64 = parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let signature = try #require(Data(base64Encoded: base64).map(Array.init))
        try #require(signature.count == 64)
        var s = Array(signature[32...])
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            let difference = Int(order[index]) - Int(s[index]) - borrow
            s[index] = UInt8((difference + 256) % 256)
            borrow = difference < 0 ? 1 : 0
        }
        let twin = Data(signature[..<32] + s).base64EncodedString()
        parts[2] = twin.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(parts[2] != jws.split(separator: ".").last.map(String.init))
        return parts.joined(separator: ".")
    }

    func history(_ api: StoredAPITests.Harness, _ user: String) async throws -> Int {
        let reply = try await api.send("GET", "/v1/customers/\(user)/history", auth: APIHarness.reader)
        return try #require(reply.json["items"] as? [Any]).count
    }

    func postTransaction(_ api: StoredAPITests.Harness, _ user: String, _ jws: String) async throws -> Int {
        try await api.send("POST", "/v1/customers/\(user)/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(jws)"}"#)
            .status
    }

    @Test(arguments: StoredBackend.all)
    func aHighSTwinOfAPostedTransactionIsADuplicate(backend: StoredBackend) async throws {
        try await StoredAPITests.run(backend) { api in
            let transaction = Apple.transaction(tid: "t1", purchase: t0 - Self.day, expires: t0 + 29 * Self.day)
            let signed = try TestSigning.ca.signer.sign(transaction)
            #expect(try await postTransaction(api, "u1", signed) == 200)
            let facts = try await api.store.facts(appUserId: "u1").count
            let entries = try await history(api, "u1")

            // The twin verifies (it is accepted), and is the same fact.
            #expect(try await postTransaction(api, "u1", try Self.highSTwin(signed)) == 200)
            #expect(try await api.store.facts(appUserId: "u1").count == facts)
            #expect(try await history(api, "u1") == entries)
        }
    }

    @Test(arguments: StoredBackend.all)
    func aHighSTwinOfANotificationsNestedTransactionIsADuplicate(backend: StoredBackend) async throws {
        try await StoredAPITests.run(backend) { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let signer = TestSigning.ca.signer
            let transaction = try signer.sign(
                Apple.transaction(tid: "t1", purchase: t0 - Self.day, expires: t0 + 29 * Self.day, signed: t0, token: token))
            let notification = try signer.sign(
                ResponseBodyV2DecodedPayload(
                    notificationType: .subscribed, subtype: .initialBuy, notificationUUID: "n1",
                    data: NotificationData(
                        environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                        signedTransactionInfo: transaction),
                    version: "2.0", signedDate: t0))
            #expect(try await api.postV2(notification).status == 200)
            let facts = try await api.store.facts(appUserId: "u1").count
            let entries = try await history(api, "u1")

            // The app posts the same transaction, re-encoded with the other signature.
            #expect(try await postTransaction(api, "u1", try Self.highSTwin(transaction)) == 200)
            // Apple's notification, its outer signature re-encoded.
            #expect(try await api.postV2(try Self.highSTwin(notification)).json["status"] as? String == "duplicate")
            #expect(try await api.store.facts(appUserId: "u1").count == facts)
            #expect(try await history(api, "u1") == entries)
        }
    }
}
