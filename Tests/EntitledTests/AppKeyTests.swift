import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import HTTPServer
import Testing

/// App keys and anonymous customers: what an app without a backend can do, and what it cannot.
@Suite(.serialized) struct AppKeyTests {
    static let key = "app_live_0123456789abcdefghij"
    static let nextKey = "app_next_0123456789abcdefghij"
    static let t0 = APIHarness.start

    static func configuration(
        keys: [String] = [key], allowLogin: Bool = false, perAddress: TokenBucketSettings? = nil,
        perKey: TokenBucketSettings? = nil
    ) -> Configuration {
        var configuration = APIHarness.configuration()
        configuration.apps[0].appKeys = keys.enumerated().map { AppKey(name: "k\($0)", key: $1) }
        configuration.apps[0].allowAppKeyLogin = allowLogin
        if let perAddress { configuration.appKeyRateLimits.perAddress = perAddress }
        if let perKey { configuration.appKeyRateLimits.perKey = perKey }
        return configuration
    }

    /// A token the app's backend would mint (the configured secret).
    static func backendToken(_ appUserId: String, lifetime: Int64 = 3600) -> String {
        CustomerTokenVerifier(secret: Array(APIHarness.tokenSecret.utf8), hmac: Digests())
            .sign(subject: appUserId, expiresAt: t0 / 1000 + lifetime)
    }

    struct Anonymous {
        var appUserId: String
        var token: String
        var bearer: String { "Bearer " + token }
        var path: String { "/v1/customers/" + appUserId.replacingOccurrences(of: "$", with: "%24") }
    }

    static func anonymous(_ api: APIHarness, key: String = key) async throws -> Anonymous {
        let reply = try await api.send("POST", "/v1/customers/anonymous", auth: "Bearer " + key)
        #expect(reply.status == 201, "\(reply.text)")
        return Anonymous(appUserId: reply.json["appUserId"] as? String ?? "", token: reply.json["token"] as? String ?? "")
    }

    // MARK: - Creating and using an anonymous customer

    @Test func anAppKeyCreatesAnAnonymousCustomerWithAWorkingToken() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let reply = try await api.send("POST", "/v1/customers/anonymous", auth: "Bearer " + Self.key)
            #expect(reply.status == 201)
            #expect(reply.headers["cache-control"] == "no-store")
            let id = try #require(reply.json["appUserId"] as? String)
            #expect(id.hasPrefix("$anon:"))
            #expect(id.dropFirst(6).count == 32 && id.dropFirst(6).allSatisfy(\.isHexDigit))
            #expect((reply.json["appAccountToken"] as? String)?.isEmpty == false)
            #expect(reply.json["expiresAt"] as? String == ISO8601.format(milliseconds: Self.t0 + 86_400_000))
            let anonymous = Anonymous(appUserId: id, token: try #require(reply.json["token"] as? String))
            let own = try await api.send("GET", anonymous.path, auth: anonymous.bearer)
            #expect(own.status == 200)
            #expect(own.json["appUserId"] as? String == id)
            #expect(own.json["appAccountToken"] as? String == reply.json["appAccountToken"] as? String)
            // It posts signed transactions as itself.
            let jws = FakeJWS.make(Apple.transaction(purchase: Self.t0 - 1_000, expires: Self.t0 + 86_400_000))
            let posted = try await api.send(
                "POST", anonymous.path + "/transactions", auth: anonymous.bearer, json: #"{"signedTransaction":"\#(jws)"}"#)
            #expect(posted.status == 200)
            #expect(posted.entitlement("pro")?["active"] as? Bool == true)
            // Two creations are two customers.
            let other = try await Self.anonymous(api)
            #expect(other.appUserId != id)
        }
    }

    @Test func theAppKeyIsAcceptedOnlyToCreateAnonymousCustomers() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let bearer = "Bearer " + Self.key
            #expect(try await api.send("GET", "/v1/customers/victim", auth: bearer).status == 401)
            #expect(try await api.send("GET", "/v1/customers/victim/history", auth: bearer).status == 401)
            #expect(try await api.send("POST", "/v1/customers/victim/aliases", auth: bearer, json: #"{"alias":"x"}"#).status == 401)
            #expect(try await api.send("POST", "/v1/customers/victim/token", auth: bearer).status == 401)
            #expect(
                try await api.send("POST", "/v1/customers/victim/login", auth: bearer, json: #"{"appUserId":"victim"}"#).status == 401)
            // Neither another credential nor a near miss creates one.
            for auth in [APIHarness.writer, APIHarness.admin, "Bearer " + Self.key.dropLast() + "x", "Bearer app_", nil] {
                let reply = try await api.send("POST", "/v1/customers/anonymous", auth: auth)
                #expect(reply.status == 401)
                #expect(reply.code == "UNAUTHORIZED")
            }
            let token = Self.backendToken("someone")
            #expect(try await api.send("POST", "/v1/customers/anonymous", auth: "Bearer " + token).status == 401)
        }
    }

    @Test func anAnonymousTokenCannotReachAnotherCustomer() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let attacker = try await Self.anonymous(api)
            let neighbour = try await Self.anonymous(api)
            let jws = FakeJWS.make(Apple.transaction(purchase: Self.t0 - 1_000, expires: Self.t0 + 86_400_000))
            for target in ["/v1/customers/victim", neighbour.path] {
                #expect(try await api.send("GET", target, auth: attacker.bearer).status == 403)
                #expect(try await api.send("GET", target + "/history", auth: attacker.bearer).status == 403)
                #expect(
                    try await api.send("POST", target + "/transactions", auth: attacker.bearer, json: #"{"signedTransaction":"\#(jws)"}"#)
                        .status == 403)
                #expect(try await api.send("POST", target + "/token", auth: attacker.bearer).status == 403)
                #expect(
                    try await api.send("POST", target + "/aliases", auth: attacker.bearer, json: #"{"alias":"\#(attacker.appUserId)"}"#)
                        .status == 403)
                #expect(try await api.send("GET", target + "/export", auth: attacker.bearer).status == 403)
            }
            // Logging in on the neighbour's behalf needs the neighbour's token.
            let login = try await api.send(
                "POST", neighbour.path + "/login", auth: attacker.bearer, json: #"{"appUserId":"victim","token":"\#(Self.backendToken("victim"))"}"#)
            #expect(login.status == 403)
            #expect(try await api.send("GET", neighbour.path, auth: neighbour.bearer).json["aliases"] as? [String] == [])
        }
    }

    // MARK: - Logging in

    @Test func anAttackerWithTheAppKeyCannotMergeIntoSomeoneElse() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let attacker = try await Self.anonymous(api)
            let other = try await Self.anonymous(api)
            let attempts: [String] = [
                #"{"appUserId":"victim"}"#,
                #"{"appUserId":"victim","token":"junk"}"#,
                #"{"appUserId":"victim","token":"\#(Self.backendToken("mallory"))"}"#,  // minted for another id
                #"{"appUserId":"victim","token":"\#(attacker.token)"}"#,  // its own token
                #"{"appUserId":"victim","token":"\#(other.token)"}"#,
                #"{"appUserId":"victim","token":"\#(Self.backendToken("victim").dropLast(2))xx"}"#,  // forged signature
            ]
            for body in attempts {
                let reply = try await api.send("POST", attacker.path + "/login", auth: attacker.bearer, json: body)
                #expect(reply.status == 403, "\(body)")
                #expect(reply.code == "INVALID_LOGIN_TOKEN")
            }
            // Into another anonymous customer, even with its token: refused.
            let intoAnonymous = try await api.send(
                "POST", attacker.path + "/login", auth: attacker.bearer, json: #"{"appUserId":"\#(other.appUserId)","token":"\#(other.token)"}"#)
            #expect(intoAnonymous.code == "INVALID_REQUEST")
            let victim = try await api.customer("victim")
            #expect(victim.json["aliases"] as? [String] == [])
        }
    }

    @Test func aBackendTokenLogsTheAnonymousCustomerIn() async throws {
        try await APIHarness.run(configuration: Self.configuration()) { api in
            let anonymous = try await Self.anonymous(api)
            let jws = FakeJWS.make(Apple.transaction(purchase: Self.t0 - 1_000, expires: Self.t0 + 86_400_000))
            _ = try await api.send(
                "POST", anonymous.path + "/transactions", auth: anonymous.bearer, json: #"{"signedTransaction":"\#(jws)"}"#)
            let reply = try await api.send(
                "POST", anonymous.path + "/login", auth: anonymous.bearer,
                json: #"{"appUserId":"user-1","token":"\#(Self.backendToken("user-1"))"}"#)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.json["appUserId"] as? String == "user-1")
            let customer = try #require(reply.json["customer"] as? [String: Any])
            #expect(customer["appUserId"] as? String == "user-1")
            #expect(customer["aliases"] as? [String] == [anonymous.appUserId])
            // The anonymous purchase now counts for the known customer, reached with the new token.
            let token = try #require(reply.json["token"] as? String)
            let known = try await api.send("GET", "/v1/customers/user-1", auth: "Bearer " + token)
            #expect(known.entitlement("pro")?["active"] as? Bool == true)
            #expect(try await api.send("GET", "/v1/customers/user-2", auth: "Bearer " + token).status == 403)
            // The anonymous token no longer refreshes: it would outlive the backend's token.
            let refresh = try await api.send("POST", anonymous.path + "/token", auth: anonymous.bearer)
            #expect(refresh.status == 403)
            #expect(refresh.code == "FORBIDDEN")
            // Logging in again to the same id is harmless; a token of a non-anonymous id does not log in.
            let again = try await api.send(
                "POST", anonymous.path + "/login", auth: anonymous.bearer,
                json: #"{"appUserId":"user-1","token":"\#(Self.backendToken("user-1"))"}"#)
            #expect(again.status == 200)
            let notAnonymous = try await api.send(
                "POST", "/v1/customers/user-1/login", auth: "Bearer " + token,
                json: #"{"appUserId":"user-3","token":"\#(Self.backendToken("user-3"))"}"#)
            #expect(notAnonymous.code == "INVALID_REQUEST")
        }
    }

    @Test func allowAppKeyLoginLetsTheAnonymousCustomerLogInWithoutABackend() async throws {
        try await APIHarness.run(configuration: Self.configuration(allowLogin: true)) { api in
            let anonymous = try await Self.anonymous(api)
            let reply = try await api.send("POST", anonymous.path + "/login", auth: anonymous.bearer, json: #"{"appUserId":"user-9"}"#)
            #expect(reply.status == 200)
            let token = try #require(reply.json["token"] as? String)
            #expect(try await api.send("GET", "/v1/customers/user-9", auth: "Bearer " + token).status == 200)
            // A wrong token is still wrong.
            let wrong = try await api.send(
                "POST", anonymous.path + "/login", auth: anonymous.bearer, json: #"{"appUserId":"user-9","token":"junk"}"#)
            #expect(wrong.code == "INVALID_LOGIN_TOKEN")
        }
    }

    // MARK: - Refreshing

    @Test func aValidTokenIsRefreshedAndAnExpiredOneIsNot() async throws {
        let clock = VirtualClock(Self.t0)
        try await APIHarness.run(configuration: Self.configuration(), clock: clock) { api in
            let anonymous = try await Self.anonymous(api)
            clock.advance(by: 3_600_000)
            let reply = try await api.send("POST", anonymous.path + "/token", auth: anonymous.bearer)
            #expect(reply.status == 200)
            #expect(reply.json["appUserId"] as? String == anonymous.appUserId)
            #expect(reply.json["expiresAt"] as? String == ISO8601.format(milliseconds: Self.t0 + 3_600_000 + 86_400_000))
            let fresh = try #require(reply.json["token"] as? String)
            // Past the first token's expiry: it no longer refreshes; the fresh one still works.
            clock.advance(by: 86_400_000 - 1_000)
            #expect(try await api.send("POST", anonymous.path + "/token", auth: anonymous.bearer).status == 401)
            #expect(try await api.send("GET", anonymous.path, auth: "Bearer " + fresh).status == 200)
            // A backend's token for a known id keeps the expiry its backend chose.
            let known = try await api.send("POST", "/v1/customers/user-1/token", auth: "Bearer " + CustomerTokenVerifier(
                secret: Array(APIHarness.tokenSecret.utf8), hmac: Digests()).sign(subject: "user-1", expiresAt: clock.nowMilliseconds() / 1000 + 60))
            #expect(known.status == 403)
        }
    }

    // MARK: - Rotation and rate limits

    @Test func twoKeysAreValidAtOnceAndADroppedKeyIsNot() async throws {
        try await APIHarness.run(configuration: Self.configuration(keys: [Self.key, Self.nextKey])) { api in
            _ = try await Self.anonymous(api, key: Self.key)
            _ = try await Self.anonymous(api, key: Self.nextKey)
        }
        try await APIHarness.run(configuration: Self.configuration(keys: [Self.nextKey])) { api in
            _ = try await Self.anonymous(api, key: Self.nextKey)
            #expect(try await api.send("POST", "/v1/customers/anonymous", auth: "Bearer " + Self.key).status == 401)
        }
    }

    @Test func eachAddressIsRateLimitedPerOperation() async throws {
        let clock = VirtualClock(Self.t0)
        let limits = TokenBucketSettings(burst: 2, perMinute: 6)
        try await APIHarness.run(configuration: Self.configuration(perAddress: limits), clock: clock) { api in
            let first = try await Self.anonymous(api)
            _ = try await Self.anonymous(api)
            let limited = try await api.send("POST", "/v1/customers/anonymous", auth: "Bearer " + Self.key)
            #expect(limited.status == 429)
            #expect(limited.code == "ADDRESS_RATE_LIMITED")
            #expect(limited.headers["retry-after"] == "10")
            // Refresh has its own bucket.
            #expect(try await api.send("POST", first.path + "/token", auth: first.bearer).status == 200)
            clock.advance(by: 10_000)
            _ = try await Self.anonymous(api)
        }
    }

    @Test func eachKeyIsRateLimited() async throws {
        let perKey = TokenBucketSettings(burst: 1, perMinute: 1)
        try await APIHarness.run(configuration: Self.configuration(keys: [Self.key, Self.nextKey], perKey: perKey)) { api in
            _ = try await Self.anonymous(api, key: Self.key)
            let limited = try await api.send("POST", "/v1/customers/anonymous", auth: "Bearer " + Self.key)
            #expect(limited.status == 429)
            #expect(limited.code == "APP_KEY_RATE_LIMITED")
            #expect(limited.headers["retry-after"] == "60")
            _ = try await Self.anonymous(api, key: Self.nextKey)
        }
    }
}

/// `apps[].appKeys`, `allowAppKeyLogin` and `appKeyRateLimits` in the configuration file.
@Suite struct AppKeyConfigurationTests {
    static let tokens = #""customerTokens": {"secret": "0123456789abcdef0123456789abcdef"}"#

    static func load(_ app: String, top: String = tokens, environment: [String: String] = [:]) throws(ConfigurationError)
        -> Configuration
    {
        let json = #"{\#(top.isEmpty ? "" : top + ",") "apps": [{"bundleId": "com.example.app", "environments": ["Sandbox"]\#(app.isEmpty ? "" : ", " + app)}]}"#
        return try ConfigurationLoader(environment: environment).parse(Data(json.utf8))
    }

    static func problems(_ app: String, top: String = tokens) -> [String] {
        do {
            _ = try load(app, top: top)
            return []
        } catch {
            return error.all.map { "\($0.path): \($0.message)" }
        }
    }

    @Test func keysResolveFromTheEnvironmentAndLimitsHaveDefaults() throws {
        let configuration = try Self.load(
            #""appKeys": [{"name": "v1", "key": "env:APP_KEY"}, {"name": "v2", "key": "app_0123456789abcdefghijkl"}], "allowAppKeyLogin": true"#,
            environment: ["APP_KEY": "app_fromTheEnvironment_0123"])
        #expect(configuration.apps[0].appKeys == [AppKey(name: "v1", key: "app_fromTheEnvironment_0123"), AppKey(name: "v2", key: "app_0123456789abcdefghijkl")])
        #expect(configuration.apps[0].allowAppKeyLogin)
        #expect(configuration.appKeyRateLimits == AppKeyRateLimits())
        let limited = try Self.load(
            "", top: Self.tokens + #", "appKeyRateLimits": {"perKey": {"burst": 5}, "perAddress": {"burst": 3, "perMinute": 4}}"#)
        #expect(limited.appKeyRateLimits.perKey == TokenBucketSettings(burst: 5, perMinute: AppKeyRateLimits().perKey.perMinute))
        #expect(limited.appKeyRateLimits.perAddress == TokenBucketSettings(burst: 3, perMinute: 4))
        #expect(try Self.load("").apps[0].appKeys.isEmpty)
        #expect(try Self.load("").apps[0].allowAppKeyLogin == false)
    }

    @Test func badKeysAreReportedWithTheirPaths() {
        let problems = Self.problems(
            #""appKeys": [{"name": "a", "key": "sk_0123456789abcdefghijklmn"}, {"name": "b", "key": "app_short"}, {"name": "a", "key": "app_0123456789abcdefghijkl"}, {"name": "c", "key": "env:MISSING"}, {"name": "d"}]"#)
        #expect(problems.contains { $0.hasPrefix("apps[0].appKeys[0].key: an app key starts with 'app_'") })
        #expect(problems.contains { $0.hasPrefix("apps[0].appKeys[1].key: an app key starts with 'app_'") })
        #expect(problems.contains("apps[0].appKeys[2].name: duplicate app key name 'a'"))
        #expect(problems.contains { $0.hasPrefix("apps[0].appKeys[3].key: environment variable MISSING is not set") })
        #expect(problems.contains("apps[0].appKeys[4].key: required"))
        #expect(problems.count == 5)
        #expect(
            Self.problems(#""appKeys": [{"name": "a", "key": "app_0123456789abcdefghijkl"}]"#, top: "")
                == ["apps[0].appKeys: needs customerTokens: the server signs anonymous customers' tokens with its secret"])
        #expect(Self.problems("", top: Self.tokens + #", "appKeyRateLimits": {"perKey": {"burst": 0}}"#)
            == ["appKeyRateLimits.perKey.burst: must be between 1 and 1000000"])
    }
}
