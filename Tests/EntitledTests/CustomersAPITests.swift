import AppStore
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Storage
import Testing

/// Customers as people over HTTP: aliases, promotional grants, export and erasure, and their typed errors.
@Suite struct CustomersAPITests {
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    func token(_ api: APIHarness, _ id: String) async throws -> String {
        try #require(try await api.customer(id).json["appAccountToken"] as? String)
    }

    /// A purchase of pro.monthly by `token`, expiring at `expires`.
    func purchase(_ api: APIHarness, otid: String, token: String, expires: Int64) async throws {
        let jws = Apple.notification(
            .subscribed, .initialBuy, signed: t0 - Self.day,
            transaction: Apple.transaction(otid: otid, tid: "\(otid)-t", purchase: t0 - Self.day, expires: expires, token: token),
            renewal: Apple.renewal(otid: otid, signed: t0 - Self.day))
        #expect(try await api.postV2(jws).status == 200)
    }

    @Test func aliasesReadAsOneCustomer() async throws {
        try await APIHarness.run { api in
            let anonymous = try await token(api, "anon-1")
            let account = try await token(api, "acct-1")
            try await purchase(api, otid: "o-anon", token: anonymous, expires: t0 + 5 * Self.day)
            try await purchase(api, otid: "o-acct", token: account, expires: t0 + 9 * Self.day)
            let merged = try await api.send("POST", "/v1/customers/acct-1/aliases", auth: APIHarness.writer, json: #"{"alias":"anon-1"}"#)
            #expect(merged.status == 200, "\(merged.text)")
            #expect(merged.json["aliases"] as? [String] == ["anon-1"])
            for (id, others, ownToken) in [("acct-1", ["anon-1"], account), ("anon-1", ["acct-1"], anonymous)] {
                let reply = try await api.customer(id)
                #expect(reply.json["appUserId"] as? String == id)
                #expect(reply.json["aliases"] as? [String] == others)
                #expect(reply.json["appAccountToken"] as? String == ownToken)
                #expect(reply.entitlement("pro")?["originalTransactionId"] as? String == "o-acct")
                #expect(reply.entitlement("pro")?["source"] as? String == "purchase")
            }
            // Apple's later news for the alias's token count for the merged customer.
            try await purchase(api, otid: "o-anon-2", token: anonymous, expires: t0 + 30 * Self.day)
            #expect(try await api.customer("acct-1").entitlement("pro")?["originalTransactionId"] as? String == "o-anon-2")
            // Again: nothing changes. An id of another customer with aliases: 409.
            #expect(try await api.send("POST", "/v1/customers/anon-1/aliases", auth: APIHarness.writer, json: #"{"alias":"acct-1"}"#).status == 200)
            _ = try await api.send("POST", "/v1/customers/other/aliases", auth: APIHarness.writer, json: #"{"alias":"other-2"}"#)
            let conflict = try await api.send("POST", "/v1/customers/other/aliases", auth: APIHarness.writer, json: #"{"alias":"anon-1"}"#)
            #expect(conflict.status == 409 && conflict.code == "ALIAS_CONFLICT", "\(conflict.text)")
        }
    }

    /// Purchases on both ids, an alias and a grant, delivered in several orders (with repeats):
    /// the same answer by either id.
    @Test func aliasAndGrantUnderShuffledDelivery() async throws {
        var answers: [NSDictionary] = []
        for order in [[0, 1, 2, 3, 4], [3, 4, 2, 0, 1], [2, 3, 0, 4, 1, 2], [4, 1, 3, 0, 2, 3]] {
            try await APIHarness.run { api in
                let anonymous = try await token(api, "anon")
                let account = try await token(api, "acct")
                for step in order {
                    switch step {
                    case 0: try await purchase(api, otid: "o-anon", token: anonymous, expires: t0 - Self.day / 2)
                    case 1: try await purchase(api, otid: "o-acct", token: account, expires: t0 + 3 * Self.day)
                    case 2:
                        let reply = try await api.send("POST", "/v1/customers/acct/aliases", auth: APIHarness.writer, json: #"{"alias":"anon"}"#)
                        #expect(reply.status == 200, "\(reply.text)")
                    case 3:
                        let reply = try await api.send(
                            "POST", "/v1/customers/anon/grants", auth: APIHarness.admin, json: #"{"entitlement":"pro","days":10}"#)
                        #expect(reply.status == 201, "\(reply.text)")
                    default:
                        let jws = Apple.notification(
                            .didChangeRenewalStatus, .autoRenewDisabled, uuid: "cancel", signed: t0 - Self.day / 4,
                            transaction: Apple.transaction(otid: "o-acct", tid: "o-acct-t", purchase: t0 - Self.day, expires: t0 + 3 * Self.day, signed: t0 - Self.day / 4, token: account),
                            renewal: Apple.renewal(otid: "o-acct", autoRenew: false, signed: t0 - Self.day / 4))
                        #expect(try await api.postV2(jws).status == 200)
                    }
                }
                let byAccount = try await api.customer("acct")
                let byAnonymous = try await api.customer("anon")
                #expect(byAccount.entitlement("pro")?["source"] as? String == "purchase")
                #expect(byAccount.entitlement("pro")?["willRenew"] as? Bool == false)
                var accountAnswer = byAccount.json
                var anonymousAnswer = byAnonymous.json
                for key in ["appUserId", "aliases", "appAccountToken"] {
                    accountAnswer.removeValue(forKey: key)
                    anonymousAnswer.removeValue(forKey: key)
                }
                #expect(accountAnswer as NSDictionary == anonymousAnswer as NSDictionary)
                answers.append(accountAnswer as NSDictionary)
            }
        }
        #expect(Set(answers).count == 1)
    }

    @Test(arguments: [
        (auth: APIHarness.writer, body: #"{"alias":"u-1"}"#, status: 400, code: "INVALID_REQUEST"),
        (APIHarness.writer, #"{}"#, 400, "INVALID_REQUEST"),
        (APIHarness.writer, #"{"alias":""}"#, 400, "INVALID_APP_USER_ID"),
        (APIHarness.writer, #"{"alias":"a\u0001b"}"#, 400, "INVALID_APP_USER_ID"),
        (APIHarness.reader, #"{"alias":"u-2"}"#, 403, "FORBIDDEN"),
        (nil, #"{"alias":"u-2"}"#, 401, "UNAUTHORIZED"),
    ])
    func aliasRefusals(auth: String?, body: String, status: Int, code: String) async throws {
        try await APIHarness.run { api in
            let reply = try await api.send("POST", "/v1/customers/u-1/aliases", auth: auth, json: body)
            #expect(reply.status == status && reply.code == code, "\(reply.text)")
        }
    }

    @Test func grantShowsUntilThePurchaseAndAfterIt() async throws {
        let clock = VirtualClock(APIHarness.start)
        try await APIHarness.run(clock: clock) { api in
            let customer = try await token(api, "g-1")
            try await purchase(api, otid: "o-g", token: customer, expires: t0 + 2 * Self.day)
            let created = try await api.send(
                "POST", "/v1/customers/g-1/grants", auth: APIHarness.admin, json: #"{"entitlement":"pro","days":5,"reason":"outage"}"#)
            #expect(created.status == 201, "\(created.text)")
            let grantId = try #require(created.json["grantId"] as? String)
            #expect(created.json["expiresAt"] as? String == ISO8601.format(milliseconds: t0 + 5 * Self.day))
            // The purchase shows while it is active.
            #expect(try await api.customer("g-1").entitlement("pro")?["source"] as? String == "purchase")
            clock.advance(by: 3 * Self.day)
            let lapsed = try await api.customer("g-1").entitlement("pro")
            #expect(lapsed?["source"] as? String == "grant" && lapsed?["status"] as? String == "active")
            #expect(lapsed?["grantId"] as? String == grantId)
            // The history lists it.
            let history = try await api.send("GET", "/v1/customers/g-1/history", auth: APIHarness.reader)
            #expect((history.json["items"] as? [[String: Any]])?.contains { $0["kind"] as? String == "promotionalGrant" } == true)
            // Ended early: the purchase (expired) shows again.
            let ended = try await api.send("DELETE", "/v1/customers/g-1/grants/\(grantId)", auth: APIHarness.admin)
            #expect(ended.status == 200 && ended.json["endedEarly"] as? Bool == true, "\(ended.text)")
            let after = try await api.customer("g-1").entitlement("pro")
            #expect(after?["source"] as? String == "purchase" && after?["status"] as? String == "expired")
            let unknown = try await api.send("DELETE", "/v1/customers/g-1/grants/nope", auth: APIHarness.admin)
            #expect(unknown.status == 404 && unknown.code == "GRANT_NOT_FOUND")
        }
    }

    @Test(arguments: [
        (auth: APIHarness.admin, body: #"{"entitlement":"pro"}"#, status: 400, code: "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","days":0}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","days":3651}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","days":1,"until":"2027-03-01T00:00:00Z"}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","until":"2020-01-01T00:00:00Z"}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","until":"soon"}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","until":"2027-02-30T00:00:00Z"}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","until":"2027-02-29T12:00:00Z"}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","until":"2027-04-31T00:00:00.000Z"}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"pro","until":"2027-05-01T24:30:00Z"}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"entitlement":"gold","days":1}"#, 400, "INVALID_GRANT"),
        (APIHarness.admin, #"{"days":1}"#, 400, "INVALID_GRANT"),
        (APIHarness.writer, #"{"entitlement":"pro","days":1}"#, 403, "FORBIDDEN"),
    ])
    func grantRefusals(auth: String, body: String, status: Int, code: String) async throws {
        try await APIHarness.run { api in
            let reply = try await api.send("POST", "/v1/customers/g-2/grants", auth: auth, json: body)
            #expect(reply.status == status && reply.code == code, "\(reply.text)")
        }
    }

    @Test func exportThenErase() async throws {
        try await APIHarness.run { api in
            let customer = try await token(api, "e-main")
            try await purchase(api, otid: "o-e", token: customer, expires: t0 + 5 * Self.day)
            _ = try await api.send("POST", "/v1/customers/e-main/aliases", auth: APIHarness.writer, json: #"{"alias":"e-alias"}"#)
            _ = try await api.send("POST", "/v1/customers/e-alias/grants", auth: APIHarness.admin, json: #"{"entitlement":"pro","days":30}"#)

            let export = try await api.send("GET", "/v1/customers/e-alias/export", auth: APIHarness.admin)
            #expect(export.status == 200, "\(export.text)")
            let tables = try #require(export.json["tables"] as? [String: [[String: Any]]])
            #expect(Set(tables["customers"]?.compactMap { $0["app_user_id"] as? String } ?? []) == ["e-main", "e-alias"])
            #expect(tables["facts"]?.contains { $0["kind"] as? String == "promotionalGrant" } == true)
            #expect(tables["links"]?.map { $0["original_transaction_id"] as? String } == ["o-e"])
            #expect(tables["notifications"]?.count == 1)
            #expect(try await api.send("GET", "/v1/customers/e-alias/export", auth: APIHarness.writer).status == 403)

            let erased = try await api.send("DELETE", "/v1/customers/e-main", auth: APIHarness.admin)
            #expect(erased.status == 200 && erased.json["ids"] as? Int == 2, "\(erased.text)")
            for path in ["/v1/customers/e-main/export", "/v1/customers/e-alias/export"] {
                let gone = try await api.send("GET", path, auth: APIHarness.admin)
                #expect(gone.status == 404 && gone.code == "CUSTOMER_NOT_FOUND")
            }
            let again = try await api.send("DELETE", "/v1/customers/e-main", auth: APIHarness.admin)
            #expect(again.status == 404 && again.code == "CUSTOMER_NOT_FOUND")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM facts WHERE original_transaction_id = 'o-e'") > 0)
            // Read again, the id is a new customer with nothing.
            let fresh = try await api.customer("e-main")
            #expect(fresh.entitlements.isEmpty && fresh.json["appAccountToken"] as? String != customer)
        }
    }
}
