import EntitledConfig
import Foundation
import Testing

@Suite struct ConfigurationTests {
    let loader = ConfigurationLoader(environment: ["ENTITLED_KEY": "0123456789abcdef-secret", "APP_SHARED_SECRET": "shh"])

    static let example = """
        { "listen": "127.0.0.1:9090",
          "database": "sqlite:./data/test.sqlite",
          "apiKeys": [{"name": "backend", "secret": "env:ENTITLED_KEY", "scopes": ["read", "write", "admin"]}],
          "apps": [{
             "bundleId": "com.example.app", "appAppleId": 1234567890,
             "environments": ["Production", "Sandbox"],
             "sharedSecret": "env:APP_SHARED_SECRET",
             "gracePeriodDays": 16,
             "products": [{"productId": "com.example.pro.monthly", "type": "autoRenewable",
                           "subscriptionGroup": "pro", "level": 1, "duration": "P1M",
                           "entitlements": ["pro"], "storefronts": ["USA", "chn"]},
                          {"productId": "com.example.pass", "type": "nonRenewing", "duration": "P3M",
                           "entitlements": ["pro"]}]}]}
        """

    @Test func parsesTheDocumentedExample() throws {
        let configuration = try loader.parse(Data(Self.example.utf8))
        #expect(configuration.listen == ListenAddress(host: "127.0.0.1", port: 9090))
        #expect(configuration.database == "sqlite:./data/test.sqlite")
        #expect(configuration.apiKeys == [APIKey(name: "backend", secret: "0123456789abcdef-secret", scopes: [.read, .write, .admin])])
        let app = try #require(configuration.app(bundleId: "com.example.app"))
        #expect(app.appAppleId == 1_234_567_890)
        #expect(app.sharedSecret == "shh")
        #expect(app.restoreBehavior == .transfer)
        #expect(app.products.count == 2)
        #expect(app.products[0].storefronts == ["USA", "CHN"])
        #expect(app.products[0].isSold(in: "chn"))
        #expect(!app.products[0].isSold(in: "FRA"))
        #expect(app.products[1].isSold(in: "FRA"))
    }

    @Test func defaultsWithoutAFile() throws {
        let configuration = try ConfigurationLoader(environment: [:]).load(path: nil)
        #expect(configuration.listen.description == "127.0.0.1:8080")
        #expect(configuration.database == "sqlite:./data/entitled.sqlite")
        #expect(configuration.apps.isEmpty)
    }

    @Test func environmentAndFlagsOverride() throws {
        let environment = ["ENTITLED_LISTEN": "0.0.0.0:7000", "ENTITLED_DATABASE": "postgres://u@127.0.0.1/db"]
        let fromEnvironment = try ConfigurationLoader(environment: environment).load(path: nil)
        #expect(fromEnvironment.listen == ListenAddress(host: "0.0.0.0", port: 7000))
        #expect(fromEnvironment.database == "postgres://u@127.0.0.1/db")
        let fromFlags = try ConfigurationLoader(environment: environment).load(
            path: nil, listen: "[::1]:7001", database: "sqlite:/tmp/x.sqlite")
        #expect(fromFlags.listen == ListenAddress(host: "::1", port: 7001))
        #expect(fromFlags.database == "sqlite:/tmp/x.sqlite")
    }

    /// Each broken document and the key path its error must name.
    @Test(arguments: [
        (#"{"lisen": "127.0.0.1:1"}"#, "lisen", "unknown key"),
        (#"{"listen": "localhost"}"#, "listen", "HOST:PORT"),
        (#"{"listen": 8080}"#, "listen", "expected a string"),
        (#"{"database": "mysql://x"}"#, "database", "sqlite:PATH"),
        // Checked by the parser that opens it: these passed the loader's own prefix test before.
        (#"{"database": "sqlite://"}"#, "database", "sqlite:PATH"),
        (#"{"database": "postgres://"}"#, "database", "sqlite:PATH"),
        (#"{"apiKeys": [{"name": "a", "secret": "env:MISSING_VAR", "scopes": []}]}"#, "apiKeys[0].secret", "MISSING_VAR"),
        (#"{"apiKeys": [{"name": "a", "secret": "short", "scopes": []}]}"#, "apiKeys[0].secret", "16 characters"),
        (#"{"apiKeys": [{"name": "a", "secret": "0123456789abcdefg", "scopes": ["root"]}]}"#, "apiKeys[0].scopes[0]", "unknown scope"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "extra": 1}]}"#, "apps[0].extra", "unknown key"),
        (#"{"apps": [{"bundleId": "a"}]}"#, "apps[0].appAppleId", "required when Production"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Staging"]}]}"#, "apps[0].environments[0]", "unknown environment"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "appAppleId": "12"}]}"#, "apps[0].appAppleId", "whole number"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "gracePeriodDays": 99}]}"#, "apps[0].gracePeriodDays", "between 0 and 60"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "restoreBehavior": "steal"}]}"#, "apps[0].restoreBehavior", "transfer"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "products": [{"productId": "p", "type": "subscription"}]}]}"#, "apps[0].products[0].type", "unknown product type"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "products": [{"productId": "p", "type": "nonRenewing"}]}]}"#, "apps[0].products[0].duration", "required"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "products": [{"productId": "p", "type": "nonRenewing", "duration": "1 month"}]}]}"#, "apps[0].products[0].duration", "ISO 8601"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "products": [{"productId": "p", "type": "autoRenewable"}]}]}"#, "apps[0].products[0].subscriptionGroup", "required"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "products": [{"productId": "p", "type": "consumable", "storefronts": ["US"]}]}]}"#, "apps[0].products[0].storefronts[0]", "alpha-3"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "products": [{"productId": "p", "type": "consumable"}, {"productId": "p", "type": "consumable"}]}]}"#, "apps[0].products[1].productId", "duplicate"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Sandbox"], "appleRootCertificates": ["/nonexistent/root.cer"]}]}"#, "apps[0].appleRootCertificates[0]", "cannot read"),
        (#"{"http": {"maxBodyBytes": -1}}"#, "http.maxBodyBytes", "positive"),
        (#"{"http": {"accessLog": 1}}"#, "http.accessLog", "true or false"),
        (#"{"storage": {"rejectedRetentionDays": 0}}"#, "storage.rejectedRetentionDays", "between 1 and 3650"),
        (#"{"storage": {"statementTimeoutMilliseconds": 50}}"#, "storage.statementTimeoutMilliseconds", "between 100 and 600000"),
        (#"{"storage": {"connectTimeoutSeconds": 0}}"#, "storage.connectTimeoutSeconds", "between 1 and 600"),
        (#"{"storage": {"retention": 1}}"#, "storage.retention", "unknown key"),
        (#"{"storage": {"connections": 0}}"#, "storage.connections", "between 1 and 100"),
        (#"{"database": {"replicas": ["postgres://r/db"]}}"#, "database.primary", "required"),
        (#"{"database": {"primary": "postgres://p/db", "replicas": ["sqlite:x.sqlite"]}}"#, "database.replicas[0]", "postgres://"),
        (#"{"database": {"primary": "sqlite:x.sqlite", "replicas": ["postgres://r/db"]}}"#, "database.primary", "postgres:// primary"),
        (#"{"database": {"primary": "postgres://p/db", "replicas": "postgres://r/db"}}"#, "database.replicas", "array"),
        (#"{"database": {"primary": "postgres://p/db", "standby": []}}"#, "database.standby", "unknown key"),
        (#"{"database": 5}"#, "database", "an object"),
        (#"{"http": {"trustedProxies": ["10.0.0.0/8", "10.0.0.0/33"]}}"#, "http.trustedProxies[1]", "CIDR"),
        (#"{"http": {"trustedProxies": ["10.0.0.1/8"]}}"#, "http.trustedProxies[0]", "CIDR"),
        (#"{"http": {"trustedProxies": "10.0.0.0/8"}}"#, "http.trustedProxies", "array"),
        (#"{"http": {"perIPConnectionLimit": -1}}"#, "http.perIPConnectionLimit", "0 (no limit)"),
        (#"{"http": {"headerTimeoutSeconds": 0}}"#, "http.headerTimeoutSeconds", "positive"),
        (#"{"database": {"primary": "postgres://p@h/db", "readYourWrites": "never"}}"#, "database.readYourWrites", "'allServers' or 'thisServer'"),
        (#"[1, 2]"#, "$", "object"),
        (#"{"listen": "#, "$", "not valid JSON"),
    ] as [(String, String, String)])
    func errorsNameTheKey(document: String, path: String, fragment: String) {
        #expect {
            _ = try loader.parse(Data(document.utf8))
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.path == path && error.message.contains(fragment)
        }
    }

    /// `database` as a primary with replicas; the plain string stays, and an override from the
    /// environment or a flag replaces the whole of it.
    @Test func readsThePrimaryAndItsReplicas() throws {
        let document = #"""
            {"database": {"primary": "postgres://p@10.0.0.1/db", "replicas": ["postgres://p@10.0.0.2/db", "postgresql://p@10.0.0.3/db"]},
             "storage": {"connections": 12}}
            """#
        let configuration = try loader.parse(Data(document.utf8))
        #expect(configuration.database == "postgres://p@10.0.0.1/db")
        #expect(configuration.databaseReplicas == ["postgres://p@10.0.0.2/db", "postgresql://p@10.0.0.3/db"])
        #expect(configuration.storage.connections == 12)
        #expect(configuration.databaseReadYourWrites == .allServers)
        let thisServer = try loader.parse(
            Data(#"{"database": {"primary": "postgres://p@10.0.0.1/db", "replicas": [], "readYourWrites": "thisServer"}}"#.utf8))
        #expect(thisServer.databaseReadYourWrites == .thisServer)
        let plain = try loader.parse(Data(#"{"database": "postgres://p@10.0.0.1/db"}"#.utf8))
        #expect(plain.database == "postgres://p@10.0.0.1/db")
        #expect(plain.databaseReplicas.isEmpty)
        #expect(plain.storage.connections == 8)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-replicas-\(UUID()).json")
        try Data(document.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let overridden = try ConfigurationLoader(environment: [:]).load(path: file.path, database: "sqlite:/tmp/x.sqlite")
        #expect(overridden.database == "sqlite:/tmp/x.sqlite")
        #expect(overridden.databaseReplicas.isEmpty)
    }

    @Test func readsTheConnectionLimitsAndTrustedProxies() throws {
        let http = try loader.parse(
            Data(#"{"http": {"perIPConnectionLimit": 0, "headerTimeoutSeconds": 3, "trustedProxies": ["10.0.0.0/8", "2001:db8::/32", "192.0.2.7"]}}"#.utf8)
        ).http
        #expect(http.perIPConnectionLimit == 0)
        #expect(http.headerTimeoutSeconds == 3)
        #expect(http.trustedProxies.map(\.description) == ["10.0.0.0/8", "2001:db8::/32", "192.0.2.7/32"])
        let defaults = try loader.parse(Data("{}".utf8)).http
        #expect(defaults.perIPConnectionLimit == 64)
        #expect(defaults.headerTimeoutSeconds == 5)
        #expect(defaults.trustedProxies.isEmpty)
    }

    @Test(arguments: ["P1M", "P1Y", "P7D", "P1W", "P1Y2M3D", "P3M"])
    func acceptsDurations(text: String) { #expect(ISODuration.isValid(text)) }

    @Test(arguments: ["", "P", "1M", "PM", "P1M1Y", "P1H", "P-1D", "P1.5M"])
    func rejectsDurations(text: String) { #expect(!ISODuration.isValid(text)) }

    @Test(arguments: [
        ("127.0.0.1:8080", "127.0.0.1", 8080), ("[::1]:80", "::1", 80), ("0.0.0.0:0", "0.0.0.0", 0),
        ("localhost:1", "localhost", 1),
    ])
    func parsesListenAddresses(text: String, host: String, port: Int) {
        #expect(ListenAddress(parsing: text) == ListenAddress(host: host, port: port))
    }

    @Test(arguments: ["8080", ":8080", "host:", "host:99999", "::1:80", "[::1]80"])
    func rejectsListenAddresses(text: String) { #expect(ListenAddress(parsing: text) == nil) }
}

@Suite struct APIConfigurationTests {
    @Test func cacheTTLAndCustomerTokens() throws {
        let loader = ConfigurationLoader(environment: ["TOKEN_SECRET": String(repeating: "s", count: 32)])
        let configuration = try loader.parse(
            Data(#"{"cacheTTLSeconds": 120, "customerTokens": {"secret": "env:TOKEN_SECRET"}}"#.utf8))
        #expect(configuration.cacheTTLSeconds == 120)
        #expect(configuration.customerTokens == CustomerTokenSettings(secret: String(repeating: "s", count: 32)))
        #expect(try loader.parse(Data("{}".utf8)).cacheTTLSeconds == 3600)
        #expect(try loader.parse(Data("{}".utf8)).customerTokens == nil)
        #expect(configuration.customerTokens?.maxLifetimeSeconds == 86_400)
        let shorter = try loader.parse(
            Data(#"{"customerTokens": {"secret": "env:TOKEN_SECRET", "maxLifetimeSeconds": 3600}}"#.utf8))
        #expect(shorter.customerTokens?.maxLifetimeSeconds == 3600)
    }

    @Test(arguments: [
        (#"{"cacheTTLSeconds": -1}"#, "cacheTTLSeconds"),
        (#"{"cacheTTLSeconds": 90000}"#, "cacheTTLSeconds"),
        (#"{"customerTokens": {"secret": "short"}}"#, "customerTokens.secret"),
        (#"{"customerTokens": {"secret": "env:MISSING"}}"#, "customerTokens.secret"),
        (#"{"customerTokens": {"secret": "ssssssssssssssssssssssssssssssss", "alg": "none"}}"#, "customerTokens.alg"),
        (#"{"customerTokens": {"secret": "ssssssssssssssssssssssssssssssss", "maxLifetimeSeconds": 59}}"#,
         "customerTokens.maxLifetimeSeconds"),
        (#"{"customerTokens": {"secret": "ssssssssssssssssssssssssssssssss", "maxLifetimeSeconds": 31536001}}"#,
         "customerTokens.maxLifetimeSeconds"),
        (#"{"customerTokens": {"secret": "ssssssssssssssssssssssssssssssss", "maxLifetimeSeconds": 1e308}}"#,
         "customerTokens.maxLifetimeSeconds"),
    ])
    func invalidValuesNameTheirKey(json: String, path: String) {
        do {
            _ = try ConfigurationLoader(environment: [:]).parse(Data(json.utf8))
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.path == path)
        }
    }
}
