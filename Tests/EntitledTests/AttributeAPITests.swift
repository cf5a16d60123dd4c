import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// `PUT`/`GET /v1/customers/{appUserId}/attributes`, their rules and their place in the export and
/// erasure.
@Suite struct AttributeAPITests {
    static func put(_ api: APIHarness, _ user: String, _ body: String, auth: String = APIHarness.writer) async throws -> Loopback.Reply {
        try await api.send("PUT", "/v1/customers/\(user)/attributes", auth: auth, json: body)
    }

    static func values(_ reply: Loopback.Reply) -> [String: String] {
        (reply.json["attributes"] as? [String: [String: Any]] ?? [:]).compactMapValues { $0["value"] as? String }
    }

    @Test func theCustomersOwnTokenOrAWriteKeySetsAttributesAndReadersReadThem() async throws {
        try await APIHarness.run { api in
            // A customer token for its own customer: created when missing.
            let own = try await Self.put(api, "u1", #"{"attributes": {"$email": "u1@example.com", "$storefront": "fra", "plan_hint": "team"}}"#,
                auth: AppUserIdentityTests.token("u1"))
            #expect(own.status == 200)
            #expect(own.json["appUserId"] as? String == "u1")
            #expect(Self.values(own) == ["$email": "u1@example.com", "$storefront": "FRA", "plan_hint": "team"])
            let entry = try #require((own.json["attributes"] as? [String: [String: Any]])?["$email"])
            #expect(entry["updatedAt"] as? String == "2027-01-15T08:00:00.000Z")
            // Another customer's token, a read key: refused.
            let other = try await Self.put(api, "u1", #"{"attributes": {"a": "b"}}"#, auth: AppUserIdentityTests.token("u2"))
            #expect(other.code == "TOKEN_CUSTOMER_MISMATCH")
            #expect(try await Self.put(api, "u1", #"{"attributes": {"a": "b"}}"#, auth: APIHarness.reader).code == "FORBIDDEN")
            // A write key: null and "" remove, the others stay.
            let changed = try await Self.put(api, "u1", #"{"attributes": {"$email": null, "plan_hint": "", "level": "3"}}"#)
            #expect(Self.values(changed) == ["$storefront": "FRA", "level": "3"])
            let read = try await api.send("GET", "/v1/customers/u1/attributes", auth: APIHarness.reader)
            #expect(read.status == 200)
            #expect(Self.values(read) == Self.values(changed))
            #expect(try await api.send("GET", "/v1/customers/nobody/attributes", auth: APIHarness.reader).code == "CUSTOMER_NOT_FOUND")
        }
    }

    @Test(arguments: [
        (#"{"attributes": {"$unknown": "x"}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attributes": {"Plan": "x"}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attributes": {"a-b": "x"}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attributes": {"\#(String(repeating: "a", count: 41))": "x"}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attributes": {"a": 1}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attributes": {"a": ["x"]}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attributes": {"a": "\#(String(repeating: "é", count: 251))"}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attributes": {"a": "line\nbreak"}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attributes": {"$storefront": "France"}}"#, "INVALID_ATTRIBUTE"),
        (#"{"attrs": {}}"#, "INVALID_ATTRIBUTE"),
        (#"not json"#, "INVALID_ATTRIBUTE"),
    ])
    func badAttributesAreRefusedWithTheirCode(body: String, code: String) async throws {
        try await APIHarness.run { api in
            let reply = try await Self.put(api, "u1", body)
            #expect(reply.status == 400)
            #expect(reply.code == code)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM customer_attributes") == 0)
        }
    }

    @Test func theNumberOfAttributesIsBounded() async throws {
        try await APIHarness.run { api in
            func body(_ range: Range<Int>) -> String {
                #"{"attributes": {"# + range.map { #""k\#($0)": "v""# }.joined(separator: ", ") + "}}"
            }
            #expect(try await Self.put(api, "u1", body(0..<51)).code == "TOO_MANY_ATTRIBUTES")
            #expect(try await Self.put(api, "u1", body(0..<50)).status == 200)
            // Together with the stored ones: nothing written.
            let more = try await Self.put(api, "u1", body(50..<51))
            #expect(more.code == "TOO_MANY_ATTRIBUTES")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM customer_attributes") == 50)
            // Replacing and removing within the bound is fine.
            #expect(try await Self.put(api, "u1", #"{"attributes": {"k0": null, "k50": "v"}}"#).status == 200)
        }
    }

    @Test func theExportCarriesAttributesAndErasureRemovesThem() async throws {
        try await APIHarness.run { api in
            #expect(try await Self.put(api, "u1", #"{"attributes": {"$email": "someone@example.com"}}"#).status == 200)
            let export = try await api.send("GET", "/v1/customers/u1/export", auth: APIHarness.admin)
            #expect(export.status == 200)
            #expect(String(decoding: export.body, as: UTF8.self).contains("someone@example.com"))
            #expect(try await api.send("DELETE", "/v1/customers/u1", auth: APIHarness.admin).status == 200)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM customer_attributes") == 0)
        }
    }
}
