import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Testing

@Suite struct APITests {
    let t0 = APIHarness.start

    @Test func customerIsCreatedOnFirstSightThenNotificationsMakeItActive() async throws {
        try await APIHarness.run { api in
            let first = try await api.customer("u1")
            #expect(first.status == 200)
            #expect(first.json["state"] as? String == "new")
            #expect(first.json["serverTime"] as? String == "2027-01-15T08:00:00.000Z")
            #expect(first.entitlements.isEmpty)
            #expect(first.headers["cache-control"] == "private, max-age=3600")
            let token = try #require(first.json["appAccountToken"] as? String)
            #expect(UUID(uuidString: token) != nil)
            // Stable token.
            #expect(try await api.customer("u1").json["appAccountToken"] as? String == token)

            let expires = t0 + 600_000
            let subscribed = Apple.notification(
                .subscribed, .initialBuy, signed: t0 - 1_000,
                transaction: Apple.transaction(purchase: t0 - 1_000, expires: expires, token: token),
                renewal: Apple.renewal(signed: t0 - 1_000))
            let reply = try await api.postV2(subscribed)
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "accepted")

            let after = try await api.customer("u1")
            #expect(after.json["state"] as? String == "active")
            let pro = try #require(after.entitlement("pro"))
            #expect(pro["active"] as? Bool == true)
            #expect(pro["status"] as? String == "active")
            #expect(pro["productId"] as? String == "pro.monthly")
            #expect(pro["originalTransactionId"] as? String == "o1")
            #expect(pro["ownership"] as? String == "purchased")
            #expect(pro["expiresAt"] as? String == "2027-01-15T08:10:00.000Z")
            #expect(pro.keys.contains("gracePeriodExpiresAt"))
            #expect(pro["gracePeriodExpiresAt"] is NSNull)
            #expect(pro["willRenew"] as? Bool == true)
            #expect(pro["periodType"] as? String == "normal")
            #expect(after.entitlement("extras") == nil)
            #expect((after.json["subscriptions"] as? [Any])?.count == 1)
            #expect((after.json["offers"] as? [String: Any])?["introductory"] as? [String] == [])
            // Cache no longer than the time left until expiry.
            #expect(after.maxAge == 600)

            // Expiry needs no event.
            api.clock.advance(by: 601_000)
            let expired = try await api.customer("u1")
            #expect(expired.entitlement("pro")?["status"] as? String == "expired")
            #expect(expired.json["state"] as? String == "inactive")
        }
    }

    @Test func repeatedNotificationUUIDIsAcknowledgedAndChangesNothing() async throws {
        try await APIHarness.run { api in
            let jws = Apple.notification(
                .subscribed, .initialBuy, uuid: "same-uuid", signed: t0,
                transaction: Apple.transaction(purchase: t0, expires: t0 + 86_400_000))
            #expect(try await api.postV2(jws).json["status"] as? String == "accepted")
            let facts = try await api.ledger.factCount()
            let again = try await api.postV2(jws)
            #expect(again.status == 200)
            #expect(again.json["status"] as? String == "duplicate")
            #expect(try await api.ledger.factCount() == facts)
            #expect(try await api.ledger.acceptedCount() == 1)
        }
    }

    @Test func testNotificationIsRecorded() async throws {
        try await APIHarness.run { api in
            let reply = try await api.postV2(Apple.notification(.test, signed: t0))
            #expect(reply.status == 200)
            #expect(try await api.ledger.acceptedCount() == 1)
            // Kept as a V2 notification with its UUID and type, and its notification fact.
            #expect(
                try await api.ledger.count(
                    "SELECT COUNT(*) FROM notifications WHERE source = 'apple-v2' AND notification_type = 'TEST' AND subtype IS NULL AND notification_uuid IS NOT NULL"
                ) == 1)
            let uuid = try #require(try await api.ledger.texts("SELECT notification_uuid FROM notifications WHERE notification_type = 'TEST'").first)
            #expect(try await api.ledger.factJSON(kind: "notification").filter { $0.contains(uuid) }.count == 1)
        }
    }

    @Test(arguments: [
        ("forged", "INVALID_SIGNATURE"), ("expired", "CERTIFICATE_EXPIRED"),
    ])
    func invalidSignaturesAreRejectedRecordedAndNotApplied(signature: String, code: String) async throws {
        try await APIHarness.run { api in
            let jws = Apple.notification(
                .subscribed, signed: t0, transaction: Apple.transaction(purchase: t0, expires: t0 + 1_000_000),
                signature: signature)
            let reply = try await api.postV2(jws)
            #expect(reply.status == 400)
            #expect(reply.code == code)
            #expect(reply.headers["content-type"] == "application/problem+json")
            #expect(try await api.ledger.factCount() == 0)
            #expect(try await api.ledger.rejectedCodes() == [code])
        }
    }

    @Test func wrongBundleWrongEnvironmentAndGarbageAreRejected() async throws {
        try await APIHarness.run { api in
            let otherBundle = try await api.postV2(Apple.notification(.test, signed: t0, bundleId: "com.evil"))
            #expect(otherBundle.status == 400)
            #expect(otherBundle.code == "INVALID_APP_IDENTIFIER")
            let xcode = try await api.postV2(Apple.notification(.test, signed: t0, environment: .xcode))
            #expect(xcode.code == "INVALID_ENVIRONMENT")
            let garbage = try await api.postV2("not-a-jws")
            #expect(garbage.code == "MALFORMED_PAYLOAD")
            let missing = try await api.send("POST", "/v1/apple/notifications", json: "{}")
            #expect(missing.code == "MALFORMED_PAYLOAD")
            let notJSON = try await api.send("POST", "/v1/apple/notifications", json: "{")
            #expect(notJSON.status == 400)
            #expect(notJSON.code == "INVALID_JSON")
            #expect(
                try await api.ledger.rejectedCodes()
                    == ["INVALID_APP_IDENTIFIER", "INVALID_ENVIRONMENT", "MALFORMED_PAYLOAD", "MALFORMED_PAYLOAD", "INVALID_JSON"])
            #expect(try await api.ledger.factCount() == 0)
        }
    }

    @Test func retryableVerificationFailureAndStorageOutageAre503() async throws {
        try await APIHarness.run { api in
            let retry = try await api.postV2(Apple.notification(.test, signed: t0, signature: "retry"))
            #expect(retry.status == 503)
            #expect(retry.code == "RETRYABLE_VERIFICATION_FAILURE")
            #expect(retry.headers["retry-after"] != nil)
            #expect(try await api.ledger.rejectedCodes().isEmpty)

            api.ledger.available = false
            let down = try await api.postV2(Apple.notification(.test, signed: t0))
            #expect(down.status == 503)
            #expect(down.code == "STORAGE_UNAVAILABLE")
            #expect(down.headers["retry-after"] == "10")
            #expect(try await api.customer("u1").code == "STORAGE_UNAVAILABLE")
            #expect(try await api.send("GET", "/readyz").status == 503)
            api.ledger.available = true
            #expect(try await api.send("GET", "/readyz").status == 200)
            #expect(try await api.postV2(Apple.notification(.test, signed: t0)).status == 200)
        }
    }

    @Test func acknowledgementComesOnlyAfterTheCommitReturned() async throws {
        try await APIHarness.run { api in
            api.ledger.ingestDelayMilliseconds = 300
            let started = ContinuousClock.now
            let reply = try await api.postV2(Apple.notification(.test, signed: t0))
            #expect(reply.status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            #expect(try await api.ledger.acceptedCount() == 1)
        }
    }

    @Test func bodyLimitsAndNesting() async throws {
        try await APIHarness.run { api in
            let big = Array(#"{"signedPayload":""#.utf8) + [UInt8](repeating: 97, count: 300 * 1024) + Array(#""}"#.utf8)
            let tooBig = try await api.send("POST", "/v1/apple/notifications", body: big)
            #expect(tooBig.status == 413)
            #expect(tooBig.code == "PAYLOAD_TOO_LARGE")
            #expect(try await api.send("POST", "/v1/apple/notifications/v1", body: big).status == 413)
            let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
            let nested = try await api.send("POST", "/v1/apple/notifications", json: #"{"signedPayload":\#(deep)}"#)
            #expect(nested.status == 400)
            #expect(nested.code == "JSON_TOO_DEEP")
            // Brackets inside strings do not count.
            let quoted = try await api.send(
                "POST", "/v1/apple/notifications", json: #"{"signedPayload":"\#(String(repeating: "[", count: 40))"}"#)
            #expect(quoted.code == "MALFORMED_PAYLOAD")
            let escaped = try await api.send(
                "POST", "/v1/apple/notifications",
                json: #"{"signedPayload":"\\\"\#(String(repeating: "[", count: 40))"}"#)
            #expect(escaped.code == "MALFORMED_PAYLOAD")
        }
    }

    @Test func v1NotificationsNeedTheSharedSecret() async throws {
        try await APIHarness.run { api in
            var body = FactMapperTests.v1Body
            body.bid = APIHarness.bundleId
            body.password = "v1-shared-secret-value"
            let good = try await api.send("POST", "/v1/apple/notifications/v1", body: Array(AppStoreJSON.encode(body)))
            #expect(good.status == 200)
            #expect(good.json["status"] as? String == "accepted")
            #expect(try await api.ledger.factCount() == 4)
            // Stored without the password.
            #expect(try await api.ledger.acceptedCount() == 1)
            #expect(try await api.ledger.bodies(containing: "v1-shared-secret-value") == 0)
            let again = try await api.send("POST", "/v1/apple/notifications/v1", body: Array(AppStoreJSON.encode(body)))
            #expect(again.json["status"] as? String == "duplicate")

            body.password = "v1-shared-secret-valuf"
            let wrong = try await api.send("POST", "/v1/apple/notifications/v1", body: Array(AppStoreJSON.encode(body)))
            #expect(wrong.status == 401)
            #expect(wrong.code == "INVALID_SHARED_SECRET")
            #expect(try await api.ledger.rejectedCodes() == ["INVALID_SHARED_SECRET"])
            #expect(try await api.ledger.bodies(containing: "valuf") == 0)
            body.bid = "com.unknown"
            body.password = "v1-shared-secret-value"
            #expect(try await api.send("POST", "/v1/apple/notifications/v1", body: Array(AppStoreJSON.encode(body))).status == 401)
        }
    }

    @Test func authOnCustomerAndAdminEndpoints() async throws {
        try await APIHarness.run { api in
            let none = try await api.send("GET", "/v1/customers/u1")
            #expect(none.status == 401)
            #expect(none.code == "UNAUTHORIZED")
            #expect(none.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
            #expect(try await api.send("GET", "/v1/customers/u1", auth: "Bearer wrong-wrong-wrong-wrong").status == 401)
            let readerPost = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.reader, json: #"{"signedTransaction":"x"}"#)
            #expect(readerPost.status == 403)
            #expect(readerPost.code == "FORBIDDEN")
            #expect(try await api.send("GET", "/v1/subscriptions/o1", auth: APIHarness.writer).status == 403)
            #expect(try await api.send("GET", "/v1/customers/u1", auth: APIHarness.admin).status == 403)

            let signer = CustomerTokenVerifier(secret: Array(APIHarness.tokenSecret.utf8), hmac: Digests())
            let token = "Bearer " + signer.sign(subject: "u1", expiresAt: t0 / 1000 + 60)
            #expect(try await api.customer("u1", auth: token).status == 200)
            #expect(try await api.customer("u2", auth: token).status == 403)
            #expect(try await api.send("GET", "/v1/subscriptions/o1", auth: token).status == 403)
            api.clock.advance(by: 61_000)
            #expect(try await api.customer("u1", auth: token).status == 401)
        }
    }

    @Test func rejectionBudgetAnswers429() async throws {
        try await APIHarness.run(budgetCapacity: 2) { api in
            let forged = Apple.notification(.test, signed: t0, signature: "forged")
            #expect(try await api.postV2(forged).status == 400)
            #expect(try await api.postV2(forged).status == 400)
            let limited = try await api.postV2(forged)
            #expect(limited.status == 429)
            #expect(limited.code == "TOO_MANY_REJECTIONS")
            #expect(try await api.ledger.rejectedCodes().count == 2)
            // Forged notifications spend only their own class: a valid key is still served.
            #expect(try await api.send("GET", "/v1/customers/u1", auth: APIHarness.reader).status == 200)
        }
    }

    @Test func postedTransactionIsLinkedAppliedAndTransferred() async throws {
        try await APIHarness.run { api in
            let jws = FakeJWS.make(Apple.transaction(purchase: t0 - 1_000, expires: t0 + 86_400_000))
            let posted = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(jws)"}"#)
            #expect(posted.status == 200)
            #expect(posted.headers["cache-control"] == "no-store")
            #expect(posted.entitlement("pro")?["active"] as? Bool == true)
            #expect(posted.json["appUserId"] as? String == "u1")

            // Restored on another account: transfer moves it.
            let restored = try await api.send(
                "POST", "/v1/customers/u2/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(jws)"}"#)
            #expect(restored.entitlement("pro")?["active"] as? Bool == true)
            #expect(try await api.customer("u1").entitlement("pro") == nil)

            let forged = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer,
                json: #"{"signedTransaction":"\#(jws.dropLast(5))forged"}"#)
            #expect(forged.status == 400)
            #expect(forged.code == "INVALID_SIGNATURE")
            let both = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer,
                json: #"{"signedTransaction":"\#(jws)","signedAppTransaction":"\#(jws)"}"#)
            #expect(both.code == "INVALID_REQUEST")
        }
    }

    @Test func keepLeavesARestoredPurchaseWithItsFirstOwner() async throws {
        try await APIHarness.run(configuration: APIHarness.configuration(restore: .keep)) { api in
            let jws = FakeJWS.make(Apple.transaction(purchase: t0 - 1_000, expires: t0 + 86_400_000))
            _ = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(jws)"}"#)
            let other = try await api.send(
                "POST", "/v1/customers/u2/transactions", auth: APIHarness.writer, json: #"{"signedTransaction":"\#(jws)"}"#)
            #expect(other.status == 200)
            #expect(other.entitlement("pro") == nil)
            #expect(try await api.customer("u1").entitlement("pro")?["active"] as? Bool == true)
        }
    }

    @Test func postedAppTransactionShowsThePreorder() async throws {
        try await APIHarness.run { api in
            let app = AppTransaction(
                receiptType: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, receiptCreationDate: t0,
                originalPurchaseDate: t0 - 86_400_000, preorderDate: t0 - 2 * 86_400_000)
            let reply = try await api.send(
                "POST", "/v1/customers/u1/transactions", auth: APIHarness.writer,
                json: #"{"signedAppTransaction":"\#(FakeJWS.make(app))"}"#)
            #expect(reply.status == 200)
            let preorder = reply.json["preorder"] as? [String: Any]
            #expect(preorder?["isPreordered"] as? Bool == true)
            #expect(preorder?["preorderDate"] as? String == "2027-01-13T08:00:00.000Z")
        }
    }

    @Test func historyPagesNewestFirstWithAnOpaqueCursor() async throws {
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            for i in 0..<3 {
                let date = t0 + Int64(i) * 1_000
                _ = try await api.postV2(
                    Apple.notification(
                        .didRenew, signed: date,
                        transaction: Apple.transaction(tid: "t\(i)", purchase: date, expires: date + 86_400_000, token: token)))
            }
            let first = try await api.send("GET", "/v1/customers/u1/history?limit=4", auth: APIHarness.reader)
            #expect(first.status == 200)
            let items = try #require(first.json["items"] as? [[String: Any]])
            #expect(items.count == 4)
            #expect(items.first?["occurredAt"] as? String == "2027-01-15T08:00:02.000Z")
            #expect(items.contains { $0["type"] as? String == "DID_RENEW" })
            #expect(items.contains { $0["price"] as? Int == 9990 && $0["currency"] as? String == "USD" })
            let cursor = try #require(first.json["nextCursor"] as? String)
            // The ledger's timeline: each notification as received, and each fact it carried (3 × 3).
            let second = try await api.send("GET", "/v1/customers/u1/history?limit=4&cursor=\(cursor)", auth: APIHarness.reader)
            #expect((second.json["items"] as? [Any])?.count == 4)
            let last = try #require(second.json["nextCursor"] as? String)
            let third = try await api.send("GET", "/v1/customers/u1/history?limit=4&cursor=\(last)", auth: APIHarness.reader)
            #expect((third.json["items"] as? [Any])?.count == 1)
            #expect(third.json["nextCursor"] is NSNull)
            #expect(try await api.send("GET", "/v1/customers/u1/history?cursor=zzz", auth: APIHarness.reader).code == "INVALID_CURSOR")
            #expect(try await api.send("GET", "/v1/customers/u1/history?limit=0", auth: APIHarness.reader).code == "INVALID_LIMIT")
            #expect(try await api.send("GET", "/v1/customers/nobody/history", auth: APIHarness.reader).status == 404)
        }
    }

    @Test func catalogPerStorefront() async throws {
        try await APIHarness.run { api in
            let usa = try await api.send("GET", "/v1/apps/\(APIHarness.bundleId)/products?storefront=usa", auth: APIHarness.reader)
            #expect(usa.status == 200)
            #expect(usa.json["storefront"] as? String == "USA")
            let ids = (usa.json["products"] as? [[String: Any]])?.compactMap { $0["productId"] as? String }
            #expect(ids == ["pro.monthly", "pro.yearly", "lifetime"])
            let groups = usa.json["groups"] as? [[String: Any]]
            #expect(groups?.first?["productIds"] as? [String] == ["pro.yearly", "pro.monthly"])
            let chn = try await api.send("GET", "/v1/apps/\(APIHarness.bundleId)/products?storefront=CHN", auth: APIHarness.reader)
            #expect((chn.json["products"] as? [Any])?.count == 2)
            #expect(try await api.send("GET", "/v1/apps/\(APIHarness.bundleId)/products?storefront=US", auth: APIHarness.reader).code == "INVALID_STOREFRONT")
            #expect(try await api.send("GET", "/v1/apps/com.nope/products", auth: APIHarness.reader).status == 404)
            #expect(try await api.send("GET", "/v1/apps/\(APIHarness.bundleId)/products").status == 401)
        }
    }

    @Test func adminSubscriptionView() async throws {
        try await APIHarness.run { api in
            let token = try #require(try await api.customer("u9").json["appAccountToken"] as? String)
            _ = try await api.postV2(
                Apple.notification(
                    .subscribed, .initialBuy, signed: t0,
                    transaction: Apple.transaction(otid: "o9", tid: "t9", purchase: t0, expires: t0 + 86_400_000, token: token)))
            let reply = try await api.send("GET", "/v1/subscriptions/o9", auth: APIHarness.admin)
            #expect(reply.status == 200)
            #expect(reply.json["appUserId"] as? String == "u9")
            #expect((reply.json["subscription"] as? [String: Any])?["status"] as? String == "active")
            #expect((reply.json["notifications"] as? [[String: Any]])?.first?["subtype"] as? String == "INITIAL_BUY")
            #expect(try await api.send("GET", "/v1/subscriptions/none", auth: APIHarness.admin).code == "SUBSCRIPTION_NOT_FOUND")
        }
    }
}
