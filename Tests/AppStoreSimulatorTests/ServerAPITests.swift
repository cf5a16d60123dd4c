import AppStore
import AppStoreSimulator
import EntitledCrypto
import Foundation
import HTTPServer
import Testing

/// Mints App Store Server API tokens the way a client does (test-only helper).
struct TokenMinter {
    let key: P256PrivateKey
    var kid = "KEY1"
    var iss = "issuer-1"
    var aud = "appstoreconnect-v1"
    var bid = bundleId

    func token(iat: Int64, exp: Int64) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(kid)","typ":"JWT"}"#
        let claims = #"{"iss":"\#(iss)","iat":\#(iat),"exp":\#(exp),"aud":"\#(aud)","bid":"\#(bid)"}"#
        let input = Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(Array(claims.utf8))
        return input + "." + Base64.urlEncode(try key.es256Signature(for: Array(input.utf8)))
    }
}

struct APIClient {
    let router: Router
    var authorization: String?

    func call(_ method: HTTPMethod, _ path: String, query: [String: String] = [:], body: String = "") async throws -> Response {
        guard case .found(let handler, let parameters) = router.match(method, path) else { throw SimulatorError(code: "NO_ROUTE", path) }
        var headers: HTTPHeaders = [:]
        if let authorization { headers.add("Authorization", authorization) }
        let request = Request(
            method: method, path: path, query: query, headers: headers, body: Array(body.utf8), pathParameters: parameters)
        switch handler {
        case .async(let run): return try await run(request)
        case .inline(let run): return try run(request)
        case .inlineFirst(let fast, let slow):
            if let response = try fast(request) { return response }
            return try await slow(request)
        }
    }

    func json<T: Decodable>(_ type: T.Type, _ method: HTTPMethod, _ path: String, query: [String: String] = [:], body: String = "")
        async throws -> T
    {
        let response = try await call(method, path, query: query, body: body)
        #expect(response.status == 200, "\(path): \(String(decoding: response.body, as: UTF8.self))")
        return try JSONDecoder().decode(T.self, from: Data(response.body))
    }
}

@Suite struct ServerAPITests {
    func setUp(_ h: Harness) throws -> (APIClient, TokenMinter) {
        let key = try P256PrivateKey()
        var router = Router()
        FakeServerAPI.register(
            h.simulator, keys: [APIKey(keyId: "KEY1", issuerId: "issuer-1", publicKey: try key.publicKey)], on: &router)
        let minter = TokenMinter(key: key)
        let now = start / 1000
        return (APIClient(router: router, authorization: "Bearer " + (try minter.token(iat: now, exp: now + 300))), minter)
    }

    @Test func jwtClaimsAreChecked() async throws {
        let h = try await Harness()
        let (client, minter) = try setUp(h)
        let now = start / 1000
        func status(_ authorization: String?) async throws -> Int {
            var c = client
            c.authorization = authorization
            return try await c.call(.post, "/inApps/v1/notifications/test").status
        }
        #expect(try await status(nil) == 401)
        #expect(try await status("Bearer x.y.z") == 401)
        var wrong = minter
        wrong.aud = "appstoreconnect-v2"
        #expect(try await status("Bearer " + wrong.token(iat: now, exp: now + 300)) == 401)
        wrong = minter
        wrong.kid = "OTHER"
        #expect(try await status("Bearer " + wrong.token(iat: now, exp: now + 300)) == 401)
        wrong = minter
        wrong.iss = "someone-else"
        #expect(try await status("Bearer " + wrong.token(iat: now, exp: now + 300)) == 401)
        wrong = minter
        wrong.bid = "com.other"
        #expect(try await status("Bearer " + wrong.token(iat: now, exp: now + 300)) == 401)
        #expect(try await status("Bearer " + minter.token(iat: now - 600, exp: now - 1)) == 401)  // expired (virtual time)
        #expect(try await status("Bearer " + minter.token(iat: now, exp: now + 7200)) == 401)  // over 60 minutes
        let forged = try TokenMinter(key: P256PrivateKey()).token(iat: now, exp: now + 300)
        #expect(try await status("Bearer " + forged) == 401)
        #expect(try await status(client.authorization) == 200)
    }

    @Test func transactionInfoHistoryPagingAndStatuses() async throws {
        let h = try await Harness()
        let (client, _) = try setUp(h)
        let sub = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        for _ in 0..<24 {
            try await h.perform("purchase") {
                $0.customer = "alice"
                $0.product = "coins"
            }
        }
        try await h.perform("purchase") {
            $0.customer = "bob"
            $0.product = "coins"
        }
        let id = sub[0].transaction!.transactionId!
        let info = try await client.json(TransactionInfoResponse.self, .get, "/inApps/v1/transactions/\(id)")
        let tx = try h.verifier.verifySynchronously(info.signedTransactionInfo!, as: JWSTransactionDecodedPayload.self).value
        #expect(tx.productId == "pro.monthly")
        #expect(try await client.call(.get, "/inApps/v1/transactions/999").status == 404)

        let first = try await client.json(HistoryResponse.self, .get, "/inApps/v2/history/\(id)")
        #expect(first.signedTransactions?.count == 20)
        #expect(first.hasMore == true)
        let second = try await client.json(HistoryResponse.self, .get, "/inApps/v2/history/\(id)", query: ["revision": first.revision!])
        #expect(second.signedTransactions?.count == 5)  // bob's purchase is not alice's
        #expect(second.hasMore == false)
        let subsOnly = try await client.json(
            HistoryResponse.self, .get, "/inApps/v2/history/\(id)", query: ["productId": "pro.monthly"])
        #expect(subsOnly.signedTransactions?.count == 1)
        #expect(try await client.call(.get, "/inApps/v2/history/\(id)", query: ["revision": "garbage!"]).status == 400)

        let statuses = try await client.json(StatusResponse.self, .get, "/inApps/v1/subscriptions/\(id)")
        #expect(statuses.data?.first?.subscriptionGroupIdentifier == "pro")
        let last = try #require(statuses.data?.first?.lastTransactions?.first)
        #expect(last.status == .active)
        let renewal = try h.verifier.verifySynchronously(last.signedRenewalInfo!, as: JWSRenewalInfoDecodedPayload.self).value
        #expect(renewal.autoRenewStatus == .on)
        let expiredOnly = try await client.json(
            StatusResponse.self, .get, "/inApps/v1/subscriptions/\(id)", query: ["status": "2"])
        #expect(expiredOnly.data?.isEmpty == true)

        // Look Up Order ID: the order on the receipt finds its transaction; another finds nothing.
        let order = Simulator.orderId(ofTransaction: id)
        #expect(order.count <= 10 && order.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) })
        let found = try await client.json(OrderLookupResponse.self, .get, "/inApps/v1/lookup/\(order)")
        #expect(found.status == .valid)
        let ordered = try h.verifier.verifySynchronously(
            try #require(found.signedTransactions?.first), as: JWSTransactionDecodedPayload.self
        ).value
        #expect(found.signedTransactions?.count == 1)
        #expect(ordered.transactionId == id)
        let missing = try await client.json(OrderLookupResponse.self, .get, "/inApps/v1/lookup/NOSUCHORDR")
        #expect(missing.status == .invalid)
        #expect(missing.signedTransactions?.isEmpty == true)
    }

    @Test func notificationHistoryWithOnlyFailuresAndTestNotificationStatus() async throws {
        let h = try await Harness(environment: .production, failFirst: 1)
        var (client, minter) = try setUp(h)
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        let range = #"{"startDate": \#(start), "endDate": \#(start + 400 * Milliseconds.day)"#
        var failures = try await client.json(
            NotificationHistoryResponse.self, .post, "/inApps/v1/notifications/history", body: range + #", "onlyFailures": true}"#)
        #expect(failures.notificationHistory?.count == 1)
        #expect(failures.notificationHistory?.first?.sendAttempts?.first?.sendAttemptResult == .unsuccessfulHTTPResponseCode)
        try await h.advance("P1Y")  // the retry succeeds, then 12 renewals
        // Tokens are checked against virtual time: the first one expired a year ago.
        #expect(try await client.call(.post, "/inApps/v1/notifications/history", body: range + "}").status == 401)
        let now = h.simulator.now / 1000
        client.authorization = "Bearer " + (try minter.token(iat: now, exp: now + 300))
        failures = try await client.json(
            NotificationHistoryResponse.self, .post, "/inApps/v1/notifications/history", body: range + #", "onlyFailures": true}"#)
        #expect(failures.notificationHistory?.isEmpty == true)

        let tokenResponse = try await client.json(SendTestNotificationResponse.self, .post, "/inApps/v1/notifications/test")
        let token = try #require(tokenResponse.testNotificationToken)
        let status = try await client.json(CheckTestNotificationResponse.self, .get, "/inApps/v1/notifications/test/\(token)")
        #expect(status.sendAttempts?.first?.sendAttemptResult == .success)
        let test = try h.verifier.verifySynchronously(status.signedPayload!, as: ResponseBodyV2DecodedPayload.self).value
        #expect(test.notificationType == .test)

        // 1 SUBSCRIBED + 12 DID_RENEW + 1 TEST in range = 14 → 20 per page means one page; filter by type pages too.
        let all = try await client.json(
            NotificationHistoryResponse.self, .post, "/inApps/v1/notifications/history", body: range + "}")
        #expect(all.notificationHistory?.count == 14)
        #expect(all.hasMore == false)
        let renewals = try await client.json(
            NotificationHistoryResponse.self, .post, "/inApps/v1/notifications/history",
            body: range + #", "notificationType": "DID_RENEW"}"#)
        #expect(renewals.notificationHistory?.count == 12)
        #expect(try await client.call(.post, "/inApps/v1/notifications/history", body: "{}").status == 400)
    }
}

@Suite struct ServerAPIWriteTests {
    @Test func extendRefundLookupAppAccountTokenAndConsumption() async throws {
        let h = try await Harness()
        let key = try P256PrivateKey()
        var router = Router()
        FakeServerAPI.register(h.simulator, keys: [APIKey(keyId: "KEY1", issuerId: "issuer-1", publicKey: try key.publicKey)], on: &router)
        let now = start / 1000
        let client = APIClient(router: router, authorization: "Bearer " + (try TokenMinter(key: key).token(iat: now, exp: now + 300)))
        try await h.perform("family") {
            $0.family = "f"
            $0.members = ["alice", "bob"]
        }
        let bought = try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        let original = bought[0].transaction!.originalTransactionId!
        let shared = bought[1].transaction!.originalTransactionId!
        let expiry = bought[0].transaction!.expiresDate!

        let extended = try await client.json(
            ExtendRenewalDateResponse.self, .put, "/inApps/v1/subscriptions/extend/\(original)",
            body: #"{"extendByDays": 7, "extendReasonCode": 1, "requestIdentifier": "r1"}"#)
        #expect(extended.success == true)
        #expect(extended.effectiveDate == expiry + 7 * Milliseconds.day)
        #expect(try await client.call(.put, "/inApps/v1/subscriptions/extend/\(shared)",
            body: #"{"extendByDays": 7, "extendReasonCode": 1, "requestIdentifier": "r2"}"#).status == 403)
        #expect(try await client.call(.put, "/inApps/v1/subscriptions/extend/\(original)",
            body: #"{"extendByDays": 91, "extendReasonCode": 1, "requestIdentifier": "r3"}"#).status == 400)
        let history = await h.simulator.sender.history()
        #expect(history.contains { $0.notificationType == "RENEWAL_EXTENDED" })

        let mass = try await client.json(
            MassExtendRenewalDateResponse.self, .post, "/inApps/v1/subscriptions/extend/mass",
            body: #"{"extendByDays": 3, "extendReasonCode": 1, "requestIdentifier": "mass-1", "productId": "pro.monthly"}"#)
        #expect(mass.requestIdentifier == "mass-1")
        let status = try await client.json(
            MassExtendRenewalDateStatusResponse.self, .get, "/inApps/v1/subscriptions/extend/mass/pro.monthly/mass-1")
        #expect(status.complete == true)
        #expect(status.succeededCount == 1)

        let token = "7d3b1c2a-1111-4222-8333-944455556666"
        #expect(try await client.call(.put, "/inApps/v1/transactions/\(original)/appAccountToken",
            body: #"{"appAccountToken": "\#(token)"}"#).status == 200)
        #expect(await h.simulator.store.subscriptions[original]?.appAccountToken == token)
        let familyRefused = try await client.call(.put, "/inApps/v1/transactions/\(shared)/appAccountToken",
            body: #"{"appAccountToken": "\#(token)"}"#)
        #expect(familyRefused.status == 400)
        #expect(String(decoding: familyRefused.body, as: UTF8.self).contains("4000185"))

        #expect(try await client.call(.put, "/inApps/v1/transactions/consumption/\(original)",
            body: #"{"customerConsented": true, "consumptionStatus": 1, "platform": 1, "sampleContentProvided": false, "deliveryStatus": 0}"#).status == 202)
        #expect(await h.simulator.consumptionInformation[original] != nil)

        try await h.perform("refund") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        let refunds = try await client.json(RefundHistoryResponse.self, .get, "/inApps/v2/refund/lookup/\(original)")
        #expect(refunds.signedTransactions?.count == 1)
        let refunded = try h.verifier.verifySynchronously(refunds.signedTransactions![0], as: JWSTransactionDecodedPayload.self).value
        #expect(refunded.revocationDate == start)
    }
}

@Suite struct VerifyReceiptTests {
    @Test func answersLikeApplesEndpointsIncluding21007() async throws {
        let h = try await Harness()
        var router = Router()
        FakeVerifyReceipt.register(h.simulator, sharedSecret: "s3cret", on: &router)
        ControlAPI.register(h.simulator, on: &router)
        let client = APIClient(router: router)
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "coins"
        }
        try await h.advance("P1M")
        let receiptAnswer = try await client.json([String: String].self, .get, "/customers/alice/receipt")
        let receipt = try #require(receiptAnswer["receiptData"])
        func verify(_ path: String, _ body: String) async throws -> VerifyReceiptResponse {
            try await client.json(VerifyReceiptResponse.self, .post, path, body: body)
        }
        let ok = try await verify("/verifyReceipt", #"{"receipt-data": "\#(receipt)", "password": "s3cret"}"#)
        #expect(ok.status == 0)
        #expect(ok.environment == .sandbox)
        #expect(ok.receipt?.bundleId == bundleId)
        #expect(ok.receipt?.inApp?.count == 3)
        #expect(ok.latestReceiptInfo?.count == 2)
        #expect(ok.latestReceiptInfo?.first?.purchaseDate == ISODuration("P1M")!.added(to: start))
        #expect(ok.pendingRenewalInfo?.first?.autoRenewStatus == "1")
        #expect(ok.latestReceipt == receipt)
        let latestOnly = try await verify(
            "/sandbox/verifyReceipt", #"{"receipt-data": "\#(receipt)", "exclude-old-transactions": true}"#)
        #expect(latestOnly.latestReceiptInfo?.count == 1)
        #expect(try await verify("/production/verifyReceipt", #"{"receipt-data": "\#(receipt)"}"#).status == 21007)
        #expect(try await verify("/verifyReceipt", #"{"receipt-data": "\#(receipt)", "password": "wrong"}"#).status == 21004)
        #expect(try await verify("/verifyReceipt", #"{"receipt-data": "bm9wZQ=="}"#).status == 21002)
        #expect(try await verify("/verifyReceipt", "not json").status == 21002)
        let stranger = SimulatedReceipt(environment: .sandbox, customerId: "zed").encoded
        #expect(try await verify("/verifyReceipt", #"{"receipt-data": "\#(stranger)"}"#).status == 21010)
        let production = SimulatedReceipt(environment: .production, customerId: "alice").encoded
        #expect(try await verify("/sandbox/verifyReceipt", #"{"receipt-data": "\#(production)"}"#).status == 21008)
        await #expect(throws: HTTPError.notFound("no customer 'zed'")) { try await client.call(.get, "/customers/zed/receipt") }
    }
}
