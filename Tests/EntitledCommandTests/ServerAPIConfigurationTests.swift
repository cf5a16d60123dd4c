import AppStore
import EntitledConfig
import EntitledCrypto
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import Testing

/// `apps[].serverAPI` and `entitled reconcile`'s checks.
@Suite struct ServerAPIConfigurationTests {
    static let pem = try! P256PrivateKey().pkcs8PEM()

    static func folderWithKey() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-serverapi-\(UUID())")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("keys"), withIntermediateDirectories: true)
        try Data(pem.utf8).write(to: folder.appendingPathComponent("keys/SubscriptionKey_ABC123DEFG.p8"))
        return folder
    }

    static func config(_ serverAPI: String) -> Data {
        Data(
            """
            {"apps": [{"bundleId": "com.example.app", "appAppleId": 1, "serverAPI": \(serverAPI)}]}
            """.utf8)
    }

    @Test func parsesTheDocumentedKeysWithDefaults() throws {
        let folder = try Self.folderWithKey()
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = try ConfigurationLoader(environment: [:]).parse(
            Self.config(
                #"{"keyId": "ABC123DEFG", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "keys/SubscriptionKey_ABC123DEFG.p8", "baseURL": null}"#
            ), baseDirectory: folder.path)
        let settings = try #require(configuration.apps.first?.serverAPI)
        #expect(settings.keyId == "ABC123DEFG")
        #expect(settings.issuerId == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(settings.privateKeyPEM == Self.pem)
        #expect(settings.baseURL == nil)
        #expect(settings.legacyHosts == false)
        #expect(settings.reconcileEveryMinutes == 60)
    }

    /// A command that calls Apple reads the Server API key from the environment and no other secret.
    @Test func serverAPIKeysAloneCanBeResolved() throws {
        let file = Data(
            #"""
            {"apiKeys": [{"name": "backend", "secret": "env:UNSET_API_SECRET", "scopes": ["read"]}],
             "apps": [{"bundleId": "com.example.app", "appAppleId": 1,
                       "serverAPI": {"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY"}}]}
            """#.utf8)
        let loader = ConfigurationLoader(environment: ["APPLE_KEY": Self.pem], resolvesSecrets: false, resolvesServerAPIKeys: true)
        let configuration = try loader.parse(file)
        #expect(configuration.apps.first?.serverAPI?.privateKeyPEM == Self.pem)
        #expect(configuration.apiKeys.isEmpty)
        // Without it, the key is left out like every other secret.
        let none = try ConfigurationLoader(environment: ["APPLE_KEY": Self.pem], resolvesSecrets: false).parse(file)
        #expect(none.apps.first?.serverAPI == nil)
    }

    @Test func privateKeyFromTheEnvironmentAndABaseURL() throws {
        let configuration = try ConfigurationLoader(environment: ["APPLE_KEY": Self.pem]).parse(
            Self.config(
                #"{"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY", "baseURL": "http://127.0.0.1:9000", "reconcileEveryMinutes": 15, "legacyHosts": true}"#
            ))
        let settings = try #require(configuration.apps.first?.serverAPI)
        #expect(settings.privateKeyPEM == Self.pem)
        #expect(settings.legacyHosts == true)
        #expect(settings.baseURL?.absoluteString == "http://127.0.0.1:9000")
        #expect(settings.reconcileEveryMinutes == 15)
    }

    @Test(arguments: [
        (#"{"issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY"}"#, "apps[0].serverAPI.keyId"),
        (#"{"keyId": "K 1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY"}"#, "apps[0].serverAPI.keyId"),
        (#"{"keyId": "K1", "issuerId": "team", "privateKeyFile": "env:APPLE_KEY"}"#, "apps[0].serverAPI.issuerId"),
        (#"{"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:MISSING"}"#, "apps[0].serverAPI.privateKeyFile"),
        (#"{"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:NOT_A_KEY"}"#, "apps[0].serverAPI.privateKeyFile"),
        (#"{"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "/nonexistent/key.p8"}"#, "apps[0].serverAPI.privateKeyFile"),
        (#"{"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY", "baseURL": "ftp://x"}"#, "apps[0].serverAPI.baseURL"),
        (#"{"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY", "reconcileEveryMinutes": 1}"#, "apps[0].serverAPI.reconcileEveryMinutes"),
        (#"{"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY", "legacyHosts": "yes"}"#, "apps[0].serverAPI.legacyHosts"),
        (#"{"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY", "extra": 1}"#, "apps[0].serverAPI.extra"),
    ])
    func invalidSettingsNameTheirKey(serverAPI: String, path: String) throws {
        let loader = ConfigurationLoader(environment: ["APPLE_KEY": Self.pem, "NOT_A_KEY": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"])
        #expect {
            try loader.parse(Self.config(serverAPI))
        } throws: { error in
            (error as? ConfigurationError)?.path == path
        }
    }

    @Test func consumptionAutoRespondNeedsServerAPI() throws {
        let loader = ConfigurationLoader(environment: ["APPLE_KEY": Self.pem])
        let on = try loader.parse(
            Data(
                #"{"apps": [{"bundleId": "a", "appAppleId": 1, "serverAPI": {"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY"}, "consumption": {"autoRespond": true}}]}"#
                    .utf8))
        #expect(on.apps.first?.consumptionAutoRespond == true)
        #expect(try loader.parse(Data(#"{"apps": [{"bundleId": "a", "appAppleId": 1}]}"#.utf8)).apps.first?.consumptionAutoRespond == false)
        for (text, path) in [
            (#"{"apps": [{"bundleId": "a", "appAppleId": 1, "consumption": {"autoRespond": true}}]}"#, "apps[0].consumption.autoRespond"),
            (#"{"apps": [{"bundleId": "a", "appAppleId": 1, "consumption": {"autoRespond": "yes"}}]}"#, "apps[0].consumption.autoRespond"),
            (#"{"apps": [{"bundleId": "a", "appAppleId": 1, "consumption": {"other": 1}}]}"#, "apps[0].consumption.other"),
        ] {
            #expect(throws: ConfigurationError.self) { try loader.parse(Data(text.utf8)) }
            do { _ = try loader.parse(Data(text.utf8)) } catch { #expect(error.path == path, "\(text)") }
        }
    }

    @Test func finishTransactionsNeedsServerAPI() throws {
        let loader = ConfigurationLoader(environment: ["APPLE_KEY": Self.pem])
        let on = try loader.parse(
            Data(
                #"{"apps": [{"bundleId": "a", "appAppleId": 1, "serverAPI": {"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:APPLE_KEY"}, "finishTransactions": true}]}"#
                    .utf8))
        #expect(on.apps.first?.finishTransactions == true)
        #expect(try loader.parse(Data(#"{"apps": [{"bundleId": "a", "appAppleId": 1}]}"#.utf8)).apps.first?.finishTransactions == false)
        for text in [
            #"{"apps": [{"bundleId": "a", "appAppleId": 1, "finishTransactions": true}]}"#,
            #"{"apps": [{"bundleId": "a", "appAppleId": 1, "finishTransactions": "yes"}]}"#,
        ] {
            do {
                _ = try loader.parse(Data(text.utf8))
                Issue.record("accepted \(text)")
            } catch { #expect(error.path == "apps[0].finishTransactions", "\(text)") }
        }
    }

    @Test func reconcileRefusesAnAppWithoutServerAPI() async throws {
        var configuration = Configuration()
        configuration.apps = [App(bundleId: "com.example.app", environments: ["Sandbox"])]
        await #expect {
            _ = try await runCatchUp(configuration: configuration, app: "com.example.app", since: nil, until: nil)
        } throws: { error in
            guard case StartupError.configuration(let message) = error else { return false }
            return message.contains("no serverAPI")
        }
        await #expect {
            _ = try await runCatchUp(configuration: configuration, app: "com.other", since: nil, until: nil)
        } throws: { error in
            guard case StartupError.configuration(let message) = error else { return false }
            return message.contains("no app com.other")
        }
    }

    @Test func reconcileCommandRejectsABadDate() async throws {
        let result = try await CLI.run(["reconcile", "--since", "yesterday"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--since"))
    }
}

/// `apps[].signingKey` and `products[].offers`.
@Suite struct OfferConfigurationTests {
    static let pem = ServerAPIConfigurationTests.pem

    static func parse(_ app: String) throws -> App {
        let configuration = try ConfigurationLoader(environment: ["IAP_KEY": pem, "NOT_A_KEY": "nope"]).parse(
            Data(#"{"apps": [{"bundleId": "com.example.app", "appAppleId": 1, \#(app)}]}"#.utf8))
        return try #require(configuration.apps.first)
    }

    @Test func offerSigningLimitsAreBounded() throws {
        let loader = ConfigurationLoader(environment: [:])
        let parsed = try loader.parse(Data(#"{"offerSigning": {"customerBurst": 2, "keyPerSecond": 7, "retentionDays": 30}}"#.utf8))
        var expected = OfferSigningSettings()
        expected.customerBurst = 2
        expected.keyPerSecond = 7
        expected.retentionDays = 30
        #expect(parsed.offerSigning == expected)
        #expect(try loader.parse(Data("{}".utf8)).offerSigning == OfferSigningSettings())
        let error = #expect(throws: ConfigurationError.self) {
            try loader.parse(Data(#"{"offerSigning": {"customerBurst": 0, "keyBurst": 1e9, "retentionDays": 0, "perHour": 1}}"#.utf8))
        }
        #expect(error?.all.map(\.path) == [
            "offerSigning.customerBurst", "offerSigning.keyBurst", "offerSigning.retentionDays", "offerSigning.perHour",
        ])
    }

    @Test func parsesTheSigningKeyAndOffers() throws {
        let app = try Self.parse(
            #"""
            "signingKey": {"keyId": "ABC123DEFG", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:IAP_KEY"},
            "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro",
              "offers": {"promotional": ["half", "free.month"],
                         "winBack": [{"offerId": "comeback", "minimumLapsedDays": 30, "maximumLapsedDays": 365},
                                     {"offerId": "soon", "minimumLapsedDays": 0}]}}]
            """#)
        #expect(app.signingKey == SigningKeySettings(keyId: "ABC123DEFG", issuerId: "57246542-96fe-1a63-e053-0824d011072a", privateKeyPEM: Self.pem))
        let product = try #require(app.products.first)
        #expect(product.promotionalOffers == ["half", "free.month"])
        #expect(
            product.winBackOffers == [
                WinBackOfferRule(offerId: "comeback", minimumLapsedDays: 30, maximumLapsedDays: 365),
                WinBackOfferRule(offerId: "soon", minimumLapsedDays: 0),
            ])
        let policy = app.policy.products["pro.monthly"]
        #expect(policy?.promotionalOffers == product.promotionalOffers)
        #expect(policy?.winBackOffers == product.winBackOffers)
    }

    @Test(arguments: [
        (#""signingKey": {"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:NOT_A_KEY"}"#, "apps[0].signingKey.privateKeyFile"),
        (#""signingKey": {"keyId": "K1", "issuerId": "team", "privateKeyFile": "env:IAP_KEY"}"#, "apps[0].signingKey.issuerId"),
        (#""signingKey": {"keyId": "K1", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "privateKeyFile": "env:IAP_KEY", "baseURL": "http://x"}"#, "apps[0].signingKey.baseURL"),
        (#""products": [{"productId": "l", "type": "nonConsumable", "offers": {}}]"#, "apps[0].products[0].offers"),
        (#""products": [{"productId": "p", "type": "autoRenewable", "subscriptionGroup": "g", "offers": {"promotional": ["a b"]}}]"#, "apps[0].products[0].offers.promotional[0]"),
        (#""products": [{"productId": "p", "type": "autoRenewable", "subscriptionGroup": "g", "offers": {"promotional": ["a"], "winBack": [{"offerId": "a", "minimumLapsedDays": 1}]}}]"#, "apps[0].products[0].offers.winBack[0].offerId"),
        (#""products": [{"productId": "p", "type": "autoRenewable", "subscriptionGroup": "g", "offers": {"winBack": [{"offerId": "w", "minimumLapsedDays": -1}]}}]"#, "apps[0].products[0].offers.winBack[0].minimumLapsedDays"),
        (#""products": [{"productId": "p", "type": "autoRenewable", "subscriptionGroup": "g", "offers": {"winBack": [{"offerId": "w", "minimumLapsedDays": 30, "maximumLapsedDays": 30}]}}]"#, "apps[0].products[0].offers.winBack[0].maximumLapsedDays"),
        (#""products": [{"productId": "p", "type": "autoRenewable", "subscriptionGroup": "g", "offers": {"introductory": []}}]"#, "apps[0].products[0].offers.introductory"),
    ])
    func invalidOffersNameTheirKey(app: String, path: String) throws {
        #expect {
            try Self.parse(app)
        } throws: { error in
            (error as? ConfigurationError)?.path == path
        }
    }
}
