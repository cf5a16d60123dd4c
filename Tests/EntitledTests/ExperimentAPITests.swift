import AppStore
import EntitledConfig
import EntitledCrypto
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import HTTPServer
import Storage
import Testing

/// Experiments' admin API (`/v1/experiments`), the variant a customer's offering read shows and
/// records, and an experiment's results.
@Suite struct ExperimentAPITests {
    static let day: Int64 = 86_400_000
    let t0 = APIHarness.start

    /// The harness's configuration with a console key.
    static func configuration() -> Configuration {
        var configuration = APIHarness.configuration()
        configuration.apiKeys.append(APIKey(name: "console", secret: "console-secret-0123456789", scopes: [.console]))
        return configuration
    }

    static let split = #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1}], "status": "running"}"#

    static func put(_ api: APIHarness, _ id: String, _ body: String, auth: String = APIHarness.admin) async throws -> Loopback.Reply {
        try await api.send("PUT", "/v1/experiments/\(id)", auth: auth, json: body)
    }

    /// Two offerings (`default`, current, and `cheaper`) and a `lifetime` one.
    static func offerings(_ api: APIHarness) async throws {
        for (id, product) in [("default", "pro.monthly"), ("cheaper", "pro.yearly"), ("lifetime", "lifetime")] {
            let body = #"{"packages": [{"id": "$monthly", "products": {"appStore": "\#(product)"}}]}"#
            #expect(try await api.send("PUT", "/v1/offerings/\(id)", auth: APIHarness.admin, json: body).status == 201)
        }
        #expect(try await api.send("PUT", "/v1/offerings/current", auth: APIHarness.admin, json: #"{"offeringId": "lifetime"}"#).status == 200)
    }

    /// The variant the engine's split gives `user` in a two-way, equal-weight experiment `id`.
    static func bucket(_ user: String, _ id: String) -> Int {
        ExperimentBucketing.variant(
            point: ExperimentBucketing.point(digest: SHA256.hash(ExperimentBucketing.key(experimentId: id, appUserId: user))), weights: [1, 1])
    }

    @Test func experimentsAreCreatedReplacedListedAndLocked() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            try await Self.offerings(api)
            #expect(try await Self.put(api, "spring", Self.split, auth: APIHarness.writer).code == "FORBIDDEN")
            let created = try await Self.put(api, "spring", Self.split)
            #expect(created.status == 201)
            #expect(created.json["version"] as? Int == 5)
            #expect(created.json["status"] as? String == "running")
            #expect((created.json["variants"] as? [[String: Any]])?.map { $0["offeringId"] as? String } == ["default", "cheaper"])
            // The same document again: no change, no new version.
            let same = try await Self.put(api, "spring", Self.split)
            #expect(same.status == 200)
            #expect(same.json["paywallVersion"] as? Int == 5)
            let reweighted = try await Self.put(
                api, "spring",
                #"{"variants": [{"offeringId": "default", "weight": 3}, {"offeringId": "cheaper", "weight": 1}], "audience": {"states": ["new"]}, "status": "paused"}"#)
            #expect(reweighted.status == 200)
            #expect(reweighted.json["version"] as? Int == 6)
            #expect((reweighted.json["audience"] as? [String: Any])?["states"] as? [String] == ["new"])
            // Reading takes a console key too; not a reader's.
            let list = try await api.send("GET", "/v1/experiments", auth: "Bearer console-secret-0123456789")
            #expect(list.status == 200)
            #expect((list.json["experiments"] as? [[String: Any]])?.map { $0["id"] as? String } == ["spring"])
            #expect(try await api.send("GET", "/v1/experiments", auth: APIHarness.reader).code == "FORBIDDEN")
            #expect(try await api.send("GET", "/v1/experiments/spring", auth: APIHarness.admin).json["status"] as? String == "paused")
            #expect(try await api.send("GET", "/v1/experiments/nope", auth: APIHarness.admin).code == "EXPERIMENT_NOT_FOUND")
            #expect(try await api.send("GET", "/v1/experiments/nope/results", auth: APIHarness.admin).code == "EXPERIMENT_NOT_FOUND")
            // A variant's offering cannot change; an offering an experiment shows cannot be deleted.
            let swapped = #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "lifetime", "weight": 1}], "status": "running"}"#
            #expect(try await Self.put(api, "spring", swapped).code == "EXPERIMENT_LOCKED")
            #expect(try await api.send("DELETE", "/v1/offerings/cheaper", auth: APIHarness.admin).code == "OFFERING_IN_USE")
            // Ended: final, and its offerings free again.
            let ended = #"{"variants": [{"offeringId": "default", "weight": 3}, {"offeringId": "cheaper", "weight": 1}], "status": "ended"}"#
            #expect(try await Self.put(api, "spring", ended).status == 200)
            #expect(try await Self.put(api, "spring", Self.split).code == "EXPERIMENT_LOCKED")
            #expect(try await api.send("DELETE", "/v1/offerings/cheaper", auth: APIHarness.admin).status == 200)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM paywall_changes WHERE kind = 'experiment'") == 3)
        }
    }

    /// The console's Experiments page reads the list and one experiment's results (its script
    /// asks these routes, a console key may).
    @Test func theConsoleHasAnExperimentsPage() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let html = String(decoding: try await api.send("GET", "/console").body, as: UTF8.self)
            #expect(html.contains(##"<a href="#experiments">Experiments</a>"##))
            let script = String(decoding: try await api.send("GET", "/console/console.js").body, as: UTF8.self)
            #expect(script.contains(#"api("/v1/experiments")"#) && script.contains(#""/results""#))
            #expect(script.contains(#"name === "experiments""#))
            try await Self.offerings(api)
            #expect(try await Self.put(api, "spring", Self.split).status == 201)
            let results = try await api.send("GET", "/v1/experiments/spring/results", auth: "Bearer console-secret-0123456789")
            #expect(results.status == 200)
            #expect(results.json["enoughData"] as? Bool == false)
            #expect(try await Self.put(api, "spring", Self.split, auth: "Bearer console-secret-0123456789").code == "FORBIDDEN")
        }
    }

    /// The console manages experiments through `PUT /v1/experiments/{id}` with the logged-in key:
    /// its script creates one from a form and sends an experiment's own document back with
    /// another status (pause, resume, end) or other weights; an admin key may, a console key is
    /// told it may not; a refusal's problem (code and detail) is what the page shows.
    @Test func theConsoleCreatesPausesResumesAndEndsAnExperiment() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let script = String(decoding: try await api.send("GET", "/console/console.js").body, as: UTF8.self)
            for needle in [
                #"api("/v1/experiments/" + encodeURIComponent(id), "PUT", body)"#, #""experiment-form""#, #"id: "experiment-pause""#,
                #"id: "experiment-resume""#, #"id: "experiment-end""#, #""experiment-edit""#, #"set("ended")"#, "audience-attributes",
            ] {
                #expect(script.contains(needle), "\(needle)")
            }
            #expect(!script.contains("innerHTML"))
            let console = "Bearer console-secret-0123456789"
            #expect(try await api.send("GET", "/v1/console/session", auth: APIHarness.admin).json["admin"] as? Bool == true)
            #expect(try await api.send("GET", "/v1/console/session", auth: console).json["admin"] as? Bool == false)
            try await Self.offerings(api)
            // The create form's document: offerings, weights, an audience, paused as a draft.
            let created = #"""
                {"variants": [{"offeringId": "default", "weight": 3}, {"offeringId": "cheaper", "weight": 1}],
                 "audience": {"storefronts": ["USA"], "states": ["new"], "attributes": {"plan": "free"}}, "status": "paused"}
                """#
            #expect(try await Self.put(api, "spring", created, auth: console).code == "FORBIDDEN")
            #expect(try await Self.put(api, "spring", created).status == 201)
            // Each button sends the experiment as read, with its new status.
            func change(_ status: String, weights: [Int]? = nil) async throws -> Loopback.Reply {
                var body = try await api.send("GET", "/v1/experiments/spring", auth: APIHarness.admin).json
                var document: [String: Any] = ["variants": body["variants"] ?? [], "audience": body["audience"] ?? [:], "status": status]
                if let weights, var variants = body["variants"] as? [[String: Any]] {
                    for index in variants.indices { variants[index]["weight"] = weights[index] }
                    document["variants"] = variants
                }
                body = document
                return try await api.send(
                    "PUT", "/v1/experiments/spring", auth: APIHarness.admin, json: String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self))
            }
            #expect(try await change("running").json["status"] as? String == "running")
            #expect(try await change("paused").json["status"] as? String == "paused")
            let reweighted = try await change("paused", weights: [1, 2])
            #expect((reweighted.json["variants"] as? [[String: Any]])?.map { $0["weight"] as? Int } == [1, 2])
            #expect((reweighted.json["audience"] as? [String: Any])?["attributes"] as? [String: String] == ["plan": "free"])
            #expect(try await change("running").json["status"] as? String == "running")
            #expect(try await change("ended").json["status"] as? String == "ended")
            let refused = try await change("running")
            #expect(refused.status == 409)
            #expect(refused.code == "EXPERIMENT_LOCKED")
            #expect((refused.json["detail"] as? String)?.contains("has ended") == true)
            let results = try await api.send("GET", "/v1/experiments/spring/results", auth: console)
            #expect(results.json["status"] as? String == "ended")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM paywall_changes WHERE kind = 'experiment'") == 6)
        }
    }

    @Test(arguments: [
        ("bad id!", Self.split),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}], "status": "running"}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "missing", "weight": 1}], "status": "running"}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "default", "weight": 1}], "status": "running"}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 0}, {"offeringId": "cheaper", "weight": 1}], "status": "running"}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": -2}, {"offeringId": "cheaper", "weight": 1}], "status": "running"}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 0.5}, {"offeringId": "cheaper", "weight": 1}], "status": "running"}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1, "name": "b"}], "status": "running"}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1}], "status": "started"}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1}]}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1}], "status": "running", "audience": {"storefront": ["FRA"]}}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1}], "status": "running", "audience": {"states": ["churned"]}}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1}], "status": "running", "audience": {"minAppVersion": "two"}}"#),
        ("x", #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1}], "status": "running", "split": 1}"#),
        ("x", "[]"),
    ])
    func badExperimentsAreRefused(id: String, body: String) async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            try await Self.offerings(api)
            let reply = try await Self.put(api, id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id, body)
            #expect(reply.status == 400)
            #expect(reply.code == "INVALID_EXPERIMENT")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM experiments") == 0)
        }
    }

    @Test func atMostTwentyExperimentsRunOrPauseAtOnce() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            try await Self.offerings(api)
            for k in 0..<20 { #expect(try await Self.put(api, "e\(k)", Self.split).status == 201) }
            #expect(try await Self.put(api, "one-more", Self.split).code == "INVALID_EXPERIMENT")
            #expect(try await Self.put(api, "one-more", Self.split.replacingOccurrences(of: "running", with: "ended")).status == 201)
        }
    }

    @Test func aRunningExperimentDecidesTheOfferingAndEnrolsOncePausedKeepsTheEnrolledEndedNobody() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            try await Self.offerings(api)
            let audience = #""audience": {"storefronts": ["USA"]}"#
            func body(_ status: String) -> String {
                #"{"variants": [{"offeringId": "default", "weight": 1}, {"offeringId": "cheaper", "weight": 1}], \#(audience), "status": "\#(status)"}"#
            }
            #expect(try await Self.put(api, "spring", body("running")).status == 201)
            let users = (0..<12).map { "user-\($0)" }
            for user in users {
                let reply = try await OfferingAPITests.offering(api, user, query: "?storefront=USA")
                let variant = Self.bucket(user, "spring")
                #expect((reply.json["experiment"] as? [String: Any])?["id"] as? String == "spring")
                #expect((reply.json["experiment"] as? [String: Any])?["variant"] as? Int == variant)
                #expect(reply.json["offeringId"] as? String == ["default", "cheaper"][variant])
                #expect(reply.json["ruleId"] is NSNull)
                // Read again: the same, still one enrolment.
                #expect(try await OfferingAPITests.offering(api, user, query: "?storefront=USA").json["offeringId"] as? String == ["default", "cheaper"][variant])
            }
            // Outside the audience: targeting decides.
            let french = try await OfferingAPITests.offering(api, "outsider", query: "?storefront=FRA")
            #expect(french.json["experiment"] is NSNull)
            #expect(french.json["offeringId"] as? String == "lifetime")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM experiment_enrolments") == 12)
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM events WHERE type = 'experiment.enrolled'") == 12)
            // Enrolled before: their variant even from another storefront now.
            #expect((try await OfferingAPITests.offering(api, users[0], query: "?storefront=FRA").json["experiment"] as? [String: Any])?["id"] as? String == "spring")

            // Paused: the enrolled keep their variant, no one new is enrolled.
            #expect(try await Self.put(api, "spring", body("paused")).status == 200)
            #expect(try await OfferingAPITests.offering(api, users[1], query: "?storefront=USA").json["offeringId"] as? String
                == ["default", "cheaper"][Self.bucket(users[1], "spring")])
            let newcomer = try await OfferingAPITests.offering(api, "newcomer", query: "?storefront=USA")
            #expect(newcomer.json["experiment"] is NSNull)
            #expect(newcomer.json["offeringId"] as? String == "lifetime")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM experiment_enrolments") == 12)

            // Ended: nobody sees it.
            #expect(try await Self.put(api, "spring", body("ended")).status == 200)
            let after = try await OfferingAPITests.offering(api, users[1], query: "?storefront=USA")
            #expect(after.json["experiment"] is NSNull)
            #expect(after.json["offeringId"] as? String == "lifetime")
        }
    }

    /// Two servers on one database, each with its own copy of the offerings, asked at once for the
    /// same customers: the same variant from both (the hash's), one enrolment and one event each.
    @Test(arguments: StoredBackend.all)
    func twoServersEnrolEachCustomerOnceInTheSameVariant(backend: StoredBackend) async throws {
        let store = try await backend.open()
        let clock = VirtualClock(APIHarness.start)
        let (one, _) = try await startServer(configuration: Self.configuration(), store: store, clock: clock)
        let (two, _) = try await startServer(configuration: Self.configuration(), store: store, clock: clock)
        @Sendable func send(_ port: Int, _ method: String, _ path: String, auth: String, json: String = "") async throws -> Loopback.Reply {
            try await Loopback.send(port: port, method, path, headers: ["Authorization": auth, "Content-Type": "application/json"], body: Array(json.utf8))
        }
        @Sendable func variant(_ reply: Loopback.Reply) -> Int? { (reply.json["experiment"] as? [String: Any])?["variant"] as? Int }
        do {
            for (id, product) in [("default", "pro.monthly"), ("cheaper", "pro.yearly")] {
                let body = #"{"packages": [{"id": "$monthly", "products": {"appStore": "\#(product)"}}]}"#
                #expect(try await send(one.port, "PUT", "/v1/offerings/\(id)", auth: APIHarness.admin, json: body).status == 201)
            }
            #expect(try await send(one.port, "PUT", "/v1/experiments/spring", auth: APIHarness.admin, json: Self.split).status == 201)
            let users = (0..<16).map { "multi-\($0)" }
            let ports = (one.port, two.port)
            try await withThrowingTaskGroup(of: (String, Int?, Int?).self) { group in
                for user in users {
                    group.addTask {
                        async let a = send(ports.0, "GET", "/v1/customers/\(user)/offerings", auth: APIHarness.reader)
                        async let b = send(ports.1, "GET", "/v1/customers/\(user)/offerings", auth: APIHarness.reader)
                        let (fromOne, fromTwo) = try await (a, b)
                        return (user, variant(fromOne), variant(fromTwo))
                    }
                }
                for try await (user, a, b) in group {
                    #expect(a == Self.bucket(user, "spring"), "\(user)")
                    #expect(b == a, "\(user)")
                }
            }
            for user in users { #expect(try await store.enrolments(appUserId: user).count == 1, "\(user)") }
            let events = try await store.events(after: 0, limit: 1000).filter { $0.type == "experiment.enrolled" }
            #expect(events.count == users.count)
        } catch {
            Issue.record(error)
        }
        await one.shutdown()
        await two.shutdown()
        await store.close()
    }

    /// Six customers enrolled at t0 buy (or not) over the next days; at 8 days the results count
    /// at the 7-day horizon exactly what each customer did within it, and say there is not
    /// enough data.
    @Test func resultsCountWhatEachEnrolledCustomerDid() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            try await Self.offerings(api)
            #expect(try await Self.put(api, "spring", Self.split).status == 201)
            // What each one does, in days after enrolment: a free trial, a paid purchase, a refund of it.
            struct Script { var user: String; var trial: Int?; var paid: Int?; var refund: Int? }
            let scripts = [
                Script(user: "a", trial: 1, paid: 4, refund: nil),
                Script(user: "b", trial: 2, paid: nil, refund: nil),
                Script(user: "c", trial: nil, paid: 3, refund: 5),
                Script(user: "d", trial: nil, paid: 6, refund: nil),
                Script(user: "e", trial: 1, paid: 10, refund: nil),  // converts after the 7-day horizon
                Script(user: "f", trial: nil, paid: nil, refund: nil),
            ]
            var variants: [String: Int] = [:]
            for s in scripts {
                let reply = try await OfferingAPITests.offering(api, s.user)
                variants[s.user] = (reply.json["experiment"] as? [String: Any])?["variant"] as? Int
            }
            #expect(variants.count == 6)
            for (k, s) in scripts.enumerated() {
                let token = try #require(try await api.customer(s.user).json["appAccountToken"] as? String)
                func at(_ d: Int) -> Int64 { t0 + Int64(d) * Self.day }
                if let trial = s.trial {
                    var t = Apple.transaction(otid: "o\(k)", tid: "trial\(k)", purchase: at(trial), expires: at(trial + 7), token: token)
                    (t.offerType, t.offerDiscountType, t.price) = (.introductoryOffer, .freeTrial, 0)
                    #expect(try await api.postV2(Apple.notification(.subscribed, signed: at(trial), transaction: t)).status == 200)
                }
                if let paid = s.paid {
                    var t = Apple.transaction(otid: "o\(k)", tid: "paid\(k)", purchase: at(paid), expires: at(paid + 30), token: token)
                    #expect(try await api.postV2(Apple.notification(.didRenew, signed: at(paid), transaction: t)).status == 200)
                    if let refund = s.refund {
                        t.revocationDate = at(refund)
                        t.revocationReason = .other
                        t.signedDate = at(refund)
                        #expect(try await api.postV2(Apple.notification(.refund, signed: at(refund), transaction: t)).status == 200)
                    }
                }
            }
            api.clock.advance(by: 8 * Self.day)
            let reply = try await api.send("GET", "/v1/experiments/spring/results", auth: "Bearer console-secret-0123456789")
            #expect(reply.status == 200)
            #expect(reply.json["enoughData"] as? Bool == false)
            #expect(reply.json["minimumCustomers"] as? Int == 100)
            let results = try #require(reply.json["variants"] as? [[String: Any]])
            for variant in 0..<2 {
                let own = scripts.filter { variants[$0.user] == variant }
                func within(_ d: Int?) -> Bool { d.map { $0 <= 7 } ?? false }
                let horizons = try #require(results[variant]["horizons"] as? [[String: Any]])
                let week = horizons[0]
                func count(_ key: String) -> Int? { (week[key] as? [String: Any])?["count"] as? Int }
                #expect(results[variant]["customers"] as? Int == own.count)
                #expect(week["days"] as? Int == 7)
                #expect(week["customers"] as? Int == own.count)
                #expect(week["enoughData"] as? Bool == false)
                #expect(count("trialsStarted") == own.filter { within($0.trial) }.count)
                #expect(count("trialConversions") == own.filter { within($0.trial) && within($0.paid) }.count)
                #expect(count("paidConversions") == own.filter { within($0.paid) }.count)
                let paid = own.filter { within($0.paid) }.count
                let kept = own.filter { within($0.paid) && !within($0.refund) }.count
                let revenue = (week["revenuePerCustomer"] as? [[String: Any]])?.first
                let realized = (week["realizedRevenuePerCustomer"] as? [[String: Any]])?.first
                #expect(revenue?["total"] as? Double ?? 0 == Double(paid) * 9.99)
                let total: Double = realized?["total"] as? Double ?? 0
                let expected: Double = Double(kept) * 9.99
                #expect(total == expected)
                // Not observed 30 days yet: nobody counted there.
                #expect(horizons[1]["customers"] as? Int == 0)
            }
        }
    }
}
