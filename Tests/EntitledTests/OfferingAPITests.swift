import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Testing

/// The offerings' admin API (`/v1/offerings`, `/v1/targeting`), versioned, and
/// `GET /v1/customers/{appUserId}/offerings`.
@Suite struct OfferingAPITests {
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    /// The harness's configuration with a win-back offer on `pro.monthly`.
    static func configuration() -> Configuration {
        var configuration = APIHarness.configuration()
        configuration.apps[0].products[0].winBackOffers = [WinBackOfferRule(offerId: "comeback", minimumLapsedDays: 30)]
        return configuration
    }

    static let standard = #"""
        {"description": "Monthly and yearly", "metadata": {"title": "Go Pro", "colors": ["#000", "#fff"], "rank": 2},
         "packages": [{"id": "$monthly", "products": {"appStore": "pro.monthly", "playStore": "pro_monthly"}},
                      {"id": "$annual", "products": {"appStore": "pro.yearly"}}]}
        """#
    static let lifetime = #"{"packages": [{"id": "$lifetime", "products": {"appStore": "lifetime"}}]}"#

    static func put(_ api: APIHarness, _ id: String, _ body: String, auth: String = APIHarness.admin) async throws -> Loopback.Reply {
        try await api.send("PUT", "/v1/offerings/\(id)", auth: auth, json: body)
    }

    static func offering(_ api: APIHarness, _ user: String, query: String = "", auth: String = APIHarness.reader) async throws
        -> Loopback.Reply
    {
        try await api.send("GET", "/v1/customers/\(user)/offerings\(query)", auth: auth)
    }

    @Test func offeringsAreCreatedReplacedMadeCurrentAndDeletedEachChangeANewVersion() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let empty = try await api.send("GET", "/v1/offerings", auth: APIHarness.admin)
            #expect(empty.json["version"] as? Int == 0)
            #expect((empty.json["offerings"] as? [Any])?.isEmpty == true)
            // Only admin keys manage offerings.
            #expect(try await Self.put(api, "default", Self.standard, auth: APIHarness.writer).code == "FORBIDDEN")
            #expect(try await api.send("GET", "/v1/offerings", auth: APIHarness.reader).code == "FORBIDDEN")

            let created = try await Self.put(api, "default", Self.standard)
            #expect(created.status == 201)
            #expect(created.json["version"] as? Int == 1)
            #expect(created.json["paywallVersion"] as? Int == 1)
            #expect((created.json["metadata"] as? [String: Any])?["title"] as? String == "Go Pro")
            let packages = created.json["packages"] as? [[String: Any]] ?? []
            #expect(packages.map { $0["id"] as? String } == ["$monthly", "$annual"])
            #expect((packages.first?["products"] as? [String: Any])?["playStore"] as? String == "pro_monthly")
            let replaced = try await Self.put(api, "default", Self.lifetime)
            #expect(replaced.status == 200)
            #expect(replaced.json["version"] as? Int == 2)
            #expect(try await Self.put(api, "extras", Self.standard).status == 201)

            let current = try await api.send("PUT", "/v1/offerings/current", auth: APIHarness.admin, json: #"{"offeringId": "default"}"#)
            #expect(current.status == 200)
            #expect(current.json["currentOfferingId"] as? String == "default")
            #expect(current.json["version"] as? Int == 4)
            #expect(try await api.send("PUT", "/v1/offerings/current", auth: APIHarness.admin, json: #"{"offeringId": "nope"}"#).code
                == "OFFERING_NOT_FOUND")

            // The current offering and a rule's cannot be deleted.
            #expect(try await api.send("DELETE", "/v1/offerings/default", auth: APIHarness.admin).code == "OFFERING_IN_USE")
            let rules = #"{"rules": [{"id": "fr", "when": {"storefronts": ["FRA"]}, "offeringId": "extras"}]}"#
            #expect(try await api.send("PUT", "/v1/targeting", auth: APIHarness.admin, json: rules).status == 200)
            #expect(try await api.send("DELETE", "/v1/offerings/extras", auth: APIHarness.admin).code == "OFFERING_IN_USE")
            #expect(try await api.send("PUT", "/v1/targeting", auth: APIHarness.admin, json: #"{"rules": []}"#).json["version"] as? Int == 6)
            let deleted = try await api.send("DELETE", "/v1/offerings/extras", auth: APIHarness.admin)
            #expect(deleted.status == 200)
            #expect(deleted.json["version"] as? Int == 7)
            #expect(try await api.send("DELETE", "/v1/offerings/extras", auth: APIHarness.admin).code == "OFFERING_NOT_FOUND")

            let list = try await api.send("GET", "/v1/offerings", auth: APIHarness.admin)
            #expect(list.json["version"] as? Int == 7)
            #expect(list.json["currentOfferingId"] as? String == "default")
            #expect((list.json["offerings"] as? [[String: Any]])?.map { $0["id"] as? String } == ["default"])
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM paywall_changes WHERE actor = 'admin'") == 7)
        }
    }

    @Test(arguments: [
        ("current", Self.lifetime),
        ("bad id!", Self.lifetime),
        ("x", #"{"packages": []}"#),
        ("x", #"{"packages": [{"id": "$monthly", "products": {}}]}"#),
        ("x", #"{"packages": [{"id": "$monthly", "products": {"appStore": "unknown.product"}}]}"#),
        ("x", #"{"packages": [{"id": "$biweekly", "products": {"appStore": "pro.monthly"}}]}"#),
        ("x", #"{"packages": [{"id": "a", "products": {"appStore": "pro.monthly"}}, {"id": "a", "products": {"appStore": "lifetime"}}]}"#),
        ("x", #"{"metadata": [1], "packages": [{"id": "a", "products": {"appStore": "pro.monthly"}}]}"#),
        ("x", #"{"metadata": {"copy": "\#(String(repeating: "x", count: 17_000))"}, "packages": [{"id": "a", "products": {"appStore": "pro.monthly"}}]}"#),
        ("x", #"{"id": "y", "packages": [{"id": "a", "products": {"appStore": "pro.monthly"}}]}"#),
        ("x", #"{"pakages": [{"id": "a", "products": {"appStore": "pro.monthly"}}]}"#),
    ])
    func badOfferingsAreRefused(id: String, body: String) async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let reply = try await Self.put(api, id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id, body)
            #expect(reply.status == 400)
            #expect(reply.code == "INVALID_OFFERING")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM offerings") == 0)
        }
    }

    @Test(arguments: [
        #"{"rules": [{"id": "a", "when": {}, "offeringId": "missing"}]}"#,
        #"{"rules": [{"id": "a", "when": {"storefront": ["FRA"]}, "offeringId": "default"}]}"#,
        #"{"rules": [{"id": "a", "when": {"states": ["churned"]}, "offeringId": "default"}]}"#,
        #"{"rules": [{"id": "a", "when": {"minAppVersion": "two"}, "offeringId": "default"}]}"#,
        #"{"rules": [{"id": "a", "when": {"storefronts": ["France"]}, "offeringId": "default"}]}"#,
        #"{"rules": [{"id": "a", "when": {"attributes": {"Bad Name": "x"}}, "offeringId": "default"}]}"#,
        #"{"rules": [{"id": "a", "offeringId": "default"}, {"id": "a", "offeringId": "default"}]}"#,
        #"{"rules": [{"id": "a", "offeringId": "default", "priority": 1}]}"#,
        #"{"rule": []}"#,
    ])
    func badTargetingIsRefused(body: String) async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            #expect(try await Self.put(api, "default", Self.lifetime).status == 201)
            let reply = try await api.send("PUT", "/v1/targeting", auth: APIHarness.admin, json: body)
            #expect(reply.code == "INVALID_TARGETING")
            #expect(try await api.send("GET", "/v1/targeting", auth: APIHarness.admin).json["version"] as? Int == 1)
        }
    }

    @Test func theCustomerSeesTheFirstMatchingRulesOfferingElseTheCurrentWithEachPackagesEligibility() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            #expect(try await Self.offering(api, "u1").code == "OFFERING_NOT_FOUND")
            #expect(try await Self.put(api, "default", Self.standard).status == 201)
            #expect(try await Self.put(api, "lifetime", Self.lifetime).status == 201)
            #expect(try await Self.put(api, "comeback", Self.standard).status == 201)
            #expect(try await api.send("PUT", "/v1/offerings/current", auth: APIHarness.admin, json: #"{"offeringId": "default"}"#).status == 200)
            let rules = #"""
                {"rules": [
                  {"id": "lapsed", "when": {"states": ["inactive"]}, "offeringId": "comeback"},
                  {"id": "new-ios-fr", "when": {"storefronts": ["FRA"], "platforms": ["ios"], "minAppVersion": "2.0", "states": ["new"]}, "offeringId": "lifetime"},
                  {"id": "teams", "when": {"attributes": {"plan_hint": "team"}}, "offeringId": "lifetime"}
                ]}
                """#
            let targeting = try await api.send("PUT", "/v1/targeting", auth: APIHarness.admin, json: rules)
            #expect(targeting.status == 200)
            #expect((targeting.json["rules"] as? [[String: Any]])?.map { $0["id"] as? String } == ["lapsed", "new-ios-fr", "teams"])
            #expect(try await api.send("GET", "/v1/targeting", auth: APIHarness.admin).body == targeting.body)

            // A new customer, nothing known: the current offering, every introductory offer open.
            let plain = try await Self.offering(api, "u1")
            #expect(plain.status == 200)
            #expect(plain.json["offeringId"] as? String == "default")
            #expect(plain.json["version"] as? Int == 5)
            #expect(plain.json["ruleId"] is NSNull)
            #expect(plain.json["states"] as? [String] == ["new"])
            #expect((plain.json["metadata"] as? [String: Any])?["rank"] as? Int == 2)
            let packages = plain.json["packages"] as? [[String: Any]] ?? []
            #expect(packages.map { ($0["eligibility"] as? [String: Any])?["introductoryOffer"] as? Bool } == [true, true])
            // The app's query: storefront, platform and version.
            let french = try await Self.offering(api, "u1", query: "?storefront=fra&platform=ios&appVersion=2.1")
            #expect(french.json["offeringId"] as? String == "lifetime")
            #expect(french.json["ruleId"] as? String == "new-ios-fr")
            #expect(try await Self.offering(api, "u1", query: "?storefront=FRA&platform=ios&appVersion=1.9").json["offeringId"] as? String == "default")
            // Attributes the app set count, the query's own values first.
            let token = AppUserIdentityTests.token("u1")
            #expect(try await api.send("PUT", "/v1/customers/u1/attributes", auth: token,
                json: #"{"attributes": {"$storefront": "FRA", "$appVersion": "3.0"}}"#).status == 200)
            #expect(try await Self.offering(api, "u1", query: "?platform=ios", auth: token).json["ruleId"] as? String == "new-ios-fr")
            #expect(try await Self.offering(api, "u1", query: "?platform=ios&storefront=USA", auth: token).json["offeringId"] as? String == "default")
            #expect(try await Self.offering(api, "u1", auth: AppUserIdentityTests.token("u2")).code == "TOKEN_CUSTOMER_MISMATCH")
            #expect(try await Self.offering(api, "u1", query: "?storefront=France").code == "INVALID_STOREFRONT")

            // A subscriber who lapsed 40 days ago: the win-back offering, its win-back offer open,
            // the introductory offer used.
            let appAccountToken = try #require(try await api.customer("u1").json["appAccountToken"] as? String)
            let expired = t0 - 40 * Self.day
            let jws = Apple.notification(
                .expired, .voluntary, signed: expired,
                transaction: Apple.transaction(otid: "o1", tid: "t1", purchase: expired - 30 * Self.day, expires: expired, token: appAccountToken),
                renewal: Apple.renewal(otid: "o1", autoRenew: false, signed: expired))
            #expect(try await api.postV2(jws).status == 200)
            let lapsed = try await Self.offering(api, "u1")
            #expect(lapsed.json["offeringId"] as? String == "comeback")
            #expect(lapsed.json["ruleId"] as? String == "lapsed")
            #expect(lapsed.json["states"] as? [String] == ["inactive", "trialUsed"])
            let eligibility = (lapsed.json["packages"] as? [[String: Any]] ?? []).map { $0["eligibility"] as? [String: Any] ?? [:] }
            #expect(eligibility.map { $0["introductoryOffer"] as? Bool } == [false, false])
            #expect(eligibility.map { $0["winBackOfferIds"] as? [String] } == [["comeback"], []])
        }
    }

    /// An offering's version history: the changes that named it, newest first, each with its
    /// key and, for a creation or replacement, the offering as it stored it.
    @Test func anOfferingsHistoryListsTheChangesThatNamedIt() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            #expect(try await Self.put(api, "default", Self.standard).status == 201)
            #expect(try await Self.put(api, "other", Self.lifetime).status == 201)
            #expect(try await api.send("PUT", "/v1/offerings/current", auth: APIHarness.admin, json: #"{"offeringId": "default"}"#).status == 200)
            #expect(try await Self.put(api, "default", Self.lifetime).status == 200)
            let history = try await api.send("GET", "/v1/offerings/default/history", auth: APIHarness.admin)
            #expect(history.status == 200)
            #expect(history.json["offeringId"] as? String == "default")
            let changes = history.json["changes"] as? [[String: Any]] ?? []
            #expect(changes.map { $0["version"] as? Int } == [4, 3, 1])
            #expect(changes.map { $0["kind"] as? String } == ["offering", "current", "offering"])
            #expect(changes.map { $0["actor"] as? String } == ["admin", "admin", "admin"])
            #expect(changes.map { (($0["offering"] as? [String: Any])?["packages"] as? [Any])?.count } == [1, nil, 2])
            #expect(changes[1]["offering"] is NSNull)
            #expect(changes.first?["changedAt"] as? String == "2027-01-15T08:00:00.000Z")
            let latest = try await api.send("GET", "/v1/offerings/default/history?limit=1", auth: APIHarness.admin)
            #expect((latest.json["changes"] as? [Any])?.count == 1)
            #expect(try await api.send("GET", "/v1/offerings/default/history?limit=0", auth: APIHarness.admin).code == "INVALID_LIMIT")
            #expect(try await api.send("GET", "/v1/offerings/default/history", auth: APIHarness.reader).code == "FORBIDDEN")
            #expect((try await api.send("GET", "/v1/offerings/nobody/history", auth: APIHarness.admin).json["changes"] as? [Any])?.isEmpty == true)
            #expect(try await api.send("DELETE", "/v1/offerings/other", auth: APIHarness.admin).status == 200)
            let other = try await api.send("GET", "/v1/offerings/other/history", auth: APIHarness.admin)
            #expect((other.json["changes"] as? [[String: Any]])?.map { $0["kind"] as? String } == ["offeringDeleted", "offering"])
        }
    }

    /// Another server's change is served once the version check sees it (at most a second later);
    /// this server's own change at once.
    @Test func anotherServersChangeIsSeenAfterTheVersionCheck() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            #expect(try await Self.put(api, "default", Self.standard).status == 201)
            #expect(try await api.send("PUT", "/v1/offerings/current", auth: APIHarness.admin, json: #"{"offeringId": "default"}"#).status == 200)
            #expect(try await Self.offering(api, "u1").json["offeringId"] as? String == "default")
            // Another server writes the same database.
            let text = #"{"id":"other","packages":[{"id":"$lifetime","products":{"appStore":"lifetime"}}]}"#
            _ = try await api.ledger.store.changePaywall(actor: "elsewhere", now: t0) { _ in
                [.putOffering(id: "other", document: text), .setCurrent(offeringId: "other")]
            }
            #expect(try await Self.offering(api, "u1").json["offeringId"] as? String == "default")
            api.clock.advance(by: 1_000)
            let seen = try await Self.offering(api, "u1")
            #expect(seen.json["offeringId"] as? String == "other")
            #expect(seen.json["version"] as? Int == 4)
            // Created elsewhere a moment ago, replaced here: 200, though this server's copy has not seen it.
            _ = try await api.ledger.store.changePaywall(actor: "elsewhere", now: t0) { _ in [.putOffering(id: "third", document: text)] }
            let replaced = try await Self.put(api, "third", Self.lifetime)
            #expect(replaced.status == 200)
            #expect(replaced.json["version"] as? Int == 6)
        }
    }
}
