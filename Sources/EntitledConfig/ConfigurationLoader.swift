import enum Entitlements.RestoreBehavior
import Foundation
import HTTPServer
import Storage

/// Reads, validates and resolves configuration.
///
/// Precedence, highest first: command-line flags, environment (`ENTITLED_LISTEN`,
/// `ENTITLED_DATABASE`), the file, built-in defaults; ``Configuration/sources`` says which gave
/// each. Values written `env:NAME` are read from the environment, so that secrets stay out of the
/// file. Relative paths in the file are relative to the file's folder. Every problem in a file is
/// reported at once (``ConfigurationError/others``). A key named `//` in any object is
/// documentation and ignored.
public struct ConfigurationLoader: Sendable {
    /// The environment variables consulted (injected so tests need not touch the process's).
    public var environment: [String: String]
    /// False for commands that only need the database (`backup`, `check`, `migrate`, …): values
    /// written `env:NAME` for secrets are then not read, and what needs them (API keys, customer
    /// tokens, webhooks, shared secrets, Server API keys, TLS) is left out of the result instead
    /// of failing for a variable that a cron job's environment does not have.
    public var resolvesSecrets: Bool
    /// Whether `apps[].serverAPI` keys written `env:NAME` are read even without ``resolvesSecrets``
    /// (commands that call Apple but need no other secret, such as `retention`).
    public var resolvesServerAPIKeys: Bool

    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment, resolvesSecrets: Bool = true,
        resolvesServerAPIKeys: Bool? = nil
    ) {
        self.environment = environment
        self.resolvesSecrets = resolvesSecrets
        self.resolvesServerAPIKeys = resolvesServerAPIKeys ?? resolvesSecrets
    }

    /// Loads the file at `path` (nil: defaults only; relative to the working directory), then
    /// applies environment and flag overrides.
    public func load(path: String?, listen: String? = nil, database: String? = nil) throws(ConfigurationError)
        -> Configuration
    {
        var configuration = Configuration()
        if let path {
            let absolute = Self.absolutePath(path, relativeTo: nil)
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: absolute))
            } catch {
                throw ConfigurationError(path: path, message: "cannot read the configuration file \(Self.tried(absolute))")
            }
            configuration = try parse(data, baseDirectory: URL(fileURLWithPath: absolute).deletingLastPathComponent().path)
        }
        let problems = Problems()
        applyOverrides(to: &configuration, listen: listen, database: database, problems)
        try problems.finish()
        return configuration
    }

    /// `raw` as an absolute path: itself when absolute, else against `base` (a folder; nil: the
    /// working directory), `.` and `..` resolved.
    public static func absolutePath(_ raw: String, relativeTo base: String?) -> String {
        let url = raw.hasPrefix("/") || base == nil
            ? URL(fileURLWithPath: raw) : URL(fileURLWithPath: base!, isDirectory: true).appendingPathComponent(raw)
        return url.standardizedFileURL.path
    }

    /// What a message about an unreadable file says: the absolute path tried and the system's reason.
    static func tried(_ absolute: String) -> String {
        let reason = access(absolute, R_OK) == 0 ? "not a readable file" : String(cString: strerror(errno))
        return "(tried \(absolute): \(reason))"
    }

    /// Parses configuration JSON. Relative certificate paths are resolved against `baseDirectory`.
    public func parse(_ data: Data, baseDirectory: String? = nil) throws(ConfigurationError) -> Configuration {
        // Strict, and where: Foundation's parser accepts trailing commas and says nothing of the place.
        if let mistake = JSONSyntax.firstMistake(in: Array(data)) {
            throw ConfigurationError(path: "$", message: "not valid JSON: \(mistake)")
        }
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ConfigurationError(path: "$", message: "not valid JSON")
        }
        var reader = try Node(root, path: "$").object()
        var configuration = Configuration()
        let problems = Problems()
        reader.read("listen", problems) { node throws(ConfigurationError) in
            configuration.listen = try Self.listenAddress(try node.string(), path: node.path)
            configuration.sources.listen = .file
        }
        reader.read("database", problems) { node throws(ConfigurationError) in
            (configuration.database, configuration.databaseReplicas, configuration.databaseReadYourWrites) = try Self.database(
                node, problems)
            configuration.database = Self.sqlitePath(configuration.database, relativeTo: baseDirectory)
            configuration.sources.database = .file
        }
        reader.read("storage", problems) { node throws(ConfigurationError) in configuration.storage = try storage(node, problems) }
        reader.read("apiKeys", problems) { node throws(ConfigurationError) in
            configuration.apiKeys = try node.array().compactMap { node in
                problems.check { () throws(ConfigurationError) in try apiKey(node, problems) } ?? nil
            }
            var names = Set<String>()
            for (index, key) in configuration.apiKeys.enumerated() where !names.insert(key.name).inserted {
                problems.record(ConfigurationError(path: "apiKeys[\(index)].name", message: "duplicate key name '\(key.name)'"))
            }
        }
        reader.read("apps", problems) { node throws(ConfigurationError) in
            for node in try node.array() {
                if Self.isPlayApp(node) {
                    let parsed = problems.check { () throws(ConfigurationError) -> PlayApp? in try playApp(node, baseDirectory: baseDirectory, problems) }
                    if let parsed = parsed ?? nil { configuration.playApps.append(parsed) }
                } else if let parsed = problems.check({ () throws(ConfigurationError) -> App in try app(node, baseDirectory: baseDirectory, problems) }) {
                    configuration.apps.append(parsed)
                }
            }
            var packages = Set<String>()
            for app in configuration.playApps where !packages.insert(app.packageName).inserted {
                problems.record(ConfigurationError(path: "apps", message: "duplicate packageName '\(app.packageName)'"))
            }
            var bundles = Set<String>()
            for (index, app) in configuration.apps.enumerated() where !bundles.insert(app.bundleId).inserted {
                problems.record(ConfigurationError(path: "apps[\(index)].bundleId", message: "duplicate bundleId '\(app.bundleId)'"))
            }
        }
        reader.read("http", problems) { node throws(ConfigurationError) in configuration.http = try http(node, problems) }
        reader.read("cacheTTLSeconds", problems) { node throws(ConfigurationError) in
            let seconds = try node.int()
            guard (0...86400).contains(seconds) else {
                throw ConfigurationError(path: node.path, message: "must be between 0 and 86400")
            }
            configuration.cacheTTLSeconds = seconds
        }
        reader.read("customerTokens", problems) { node throws(ConfigurationError) in
            var object = try node.object()
            let secretNode = try object.require("secret")
            let secret = problems.check { () throws(ConfigurationError) -> String in
                let secret = try resolveSecret(try secretNode.string(), path: secretNode.path, use: "the key customer tokens are signed with")
                guard secret.utf8.count >= 32 else {
                    throw ConfigurationError(path: secretNode.path, message: "a customer token secret needs at least 32 characters")
                }
                return secret
            }
            var maxLifetime = CustomerTokenSettings.defaultMaxLifetimeSeconds
            object.read("maxLifetimeSeconds", problems) { node throws(ConfigurationError) in
                maxLifetime = try node.int()
                let range = CustomerTokenSettings.maxLifetimeSecondsRange
                guard range.contains(maxLifetime) else {
                    throw ConfigurationError(
                        path: node.path, message: "must be between \(range.lowerBound) and \(range.upperBound)")
                }
            }
            object.finish(problems)
            if let secret { configuration.customerTokens = CustomerTokenSettings(secret: secret, maxLifetimeSeconds: maxLifetime) }
        }
        reader.read("webhooks", problems) { node throws(ConfigurationError) in
            let nodes = try node.array()
            guard nodes.count <= WebhookEndpoint.maxEndpoints else {
                throw ConfigurationError(path: node.path, message: "at most \(WebhookEndpoint.maxEndpoints) webhook endpoints")
            }
            configuration.webhooks = nodes.compactMap { node in
                problems.check { () throws(ConfigurationError) in try webhook(node, problems) }
            }
            // The URL is the endpoint's identity in the delivery tables.
            var urls = Set<String>()
            for (index, endpoint) in configuration.webhooks.enumerated() where !urls.insert(endpoint.url.absoluteString).inserted {
                problems.record(ConfigurationError(path: "webhooks[\(index)].url", message: "duplicate url '\(endpoint.url.absoluteString)'"))
            }
        }
        reader.read("integrations", problems) { node throws(ConfigurationError) in
            configuration.integrations = try integrations(node, problems)
        }
        reader.read("exports", problems) { node throws(ConfigurationError) in configuration.exports = try exports(node, problems) }
        reader.read("events", problems) { node throws(ConfigurationError) in configuration.events = try eventSettings(node, problems) }
        reader.read("offerSigning", problems) { node throws(ConfigurationError) in
            configuration.offerSigning = try offerSigningSettings(node, problems)
        }
        reader.read("tls", problems) { node throws(ConfigurationError) in
            configuration.tls = try tls(node, baseDirectory: baseDirectory, problems)
        }
        reader.read("log", problems) { node throws(ConfigurationError) in configuration.log = try log(node, problems) }
        reader.read("metricsListen", problems) { node throws(ConfigurationError) in
            configuration.metricsListen = try Self.listenAddress(try node.string(), path: node.path)
        }
        reader.read("console", problems) { node throws(ConfigurationError) in configuration.console = try console(node, problems) }
        reader.read("paywall", problems) { node throws(ConfigurationError) in configuration.paywall = try paywallSeed(node, problems) }
        reader.read("appKeyRateLimits", problems) { node throws(ConfigurationError) in
            configuration.appKeyRateLimits = try appKeyRateLimits(node, problems)
        }
        reader.finish(problems)
        Self.checkAppKeys(configuration, problems)
        try problems.finish()
        return configuration
    }

    // MARK: - Sections

    private func apiKey(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> APIKey? {
        var object = try node.object()
        let name = try object.require("name").string()
        let secretNode = try object.require("secret")
        let secret = problems.check { () throws(ConfigurationError) -> String in
            let secret = try resolveSecret(try secretNode.string(), path: secretNode.path, use: "API key '\(name)', sent as Bearer by clients")
            guard secret.utf8.count >= 16 else {
                throw ConfigurationError(path: secretNode.path, message: "an API key secret needs at least 16 characters")
            }
            return secret
        }
        var scopes = Set<APIKey.Scope>()
        object.read("scopes", problems) { node throws(ConfigurationError) in
            for scopeNode in try node.array() {
                problems.check { () throws(ConfigurationError) in
                    let raw = try scopeNode.string()
                    guard let scope = APIKey.Scope(rawValue: raw) else {
                        throw ConfigurationError(path: scopeNode.path, message: "unknown scope '\(raw)' (\(APIKey.Scope.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    scopes.insert(scope)
                }
            }
        }
        if !object.had("scopes") { problems.record(ConfigurationError(path: node.path + ".scopes", message: "required")) }
        object.finish(problems)
        // Its secret's problem is recorded already: the key is left out.
        guard let secret else { return nil }
        return APIKey(name: name, secret: secret, scopes: scopes)
    }

    /// A list of App Store environment names (each bad one recorded, the good ones kept).
    func environments(_ value: Node, _ problems: Problems) throws(ConfigurationError) -> [String] {
        try value.array().compactMap { element in
            problems.check { () throws(ConfigurationError) -> String in
                let raw = try element.string()
                guard ["Production", "Sandbox", "Xcode", "LocalTesting"].contains(raw) else {
                    throw ConfigurationError(
                        path: element.path, message: "unknown environment '\(raw)' (Production, Sandbox, Xcode, LocalTesting)")
                }
                return raw
            }
        }
    }

    private func app(_ node: Node, baseDirectory: String?, _ problems: Problems) throws(ConfigurationError) -> App {
        var object = try node.object()
        let bundleId = try object.require("bundleId").string()
        guard !bundleId.isEmpty else { throw ConfigurationError(path: node.path + ".bundleId", message: "must not be empty") }
        var app = App(bundleId: bundleId)
        object.read("appAppleId", problems) { value throws(ConfigurationError) in app.appAppleId = try value.int64() }
        object.read("environments", problems) { value throws(ConfigurationError) in
            app.environments = try environments(value, problems)
            if try value.array().isEmpty {
                throw ConfigurationError(path: value.path, message: "list at least one environment")
            }
        }
        object.read("grantEnvironments", problems) { value throws(ConfigurationError) in
            app.grantEnvironments = try environments(value, problems)
        }
        if app.environments.contains("Production") && app.appAppleId == nil && !object.had("appAppleId") {
            problems.record(ConfigurationError(path: node.path + ".appAppleId", message: "required when Production is an environment"))
        }
        for key in ["appleRootCertificates", "receiptRootCertificates"] {
            object.read(key, problems) { value throws(ConfigurationError) in
                let paths = try value.array().compactMap { element in
                    problems.check { () throws(ConfigurationError) -> String in
                        let raw = try element.string()
                        let resolved = Self.absolutePath(raw, relativeTo: baseDirectory)
                        guard FileManager.default.isReadableFile(atPath: resolved) else {
                            throw ConfigurationError(path: element.path, message: "cannot read certificate file '\(raw)' \(Self.tried(resolved))")
                        }
                        return resolved
                    }
                }
                if key == "appleRootCertificates" { app.appleRootCertificates = paths } else { app.receiptRootCertificates = paths }
            }
        }
        object.read("sharedSecret", problems) { value throws(ConfigurationError) in
            app.sharedSecret = try resolveSecret(try value.string(), path: value.path, use: "the V1 notification password of \(bundleId)")
        }
        object.read("gracePeriodDays", problems) { value throws(ConfigurationError) in
            let days = try value.int()
            guard (0...60).contains(days) else {
                throw ConfigurationError(path: value.path, message: "must be between 0 and 60")
            }
            app.gracePeriodDays = days
        }
        object.read("restoreBehavior", problems) { value throws(ConfigurationError) in
            let raw = try value.string()
            guard let behavior = RestoreBehavior(rawValue: raw) else {
                throw ConfigurationError(path: value.path, message: "must be 'transfer' or 'keep'")
            }
            app.restoreBehavior = behavior
        }
        object.read("products", problems) { value throws(ConfigurationError) in
            app.products = try value.array().compactMap { node in
                problems.check { () throws(ConfigurationError) in try product(node, problems) }
            }
            var ids = Set<String>()
            for (index, product) in app.products.enumerated() where !ids.insert(product.productId).inserted {
                problems.record(ConfigurationError(
                    path: "\(value.path)[\(index)].productId", message: "duplicate productId '\(product.productId)'"))
            }
        }
        object.read("serverAPI", problems) { value throws(ConfigurationError) in
            app.serverAPI = try serverAPI(value, baseDirectory: baseDirectory, problems)
        }
        object.read("signingKey", problems) { value throws(ConfigurationError) in
            app.signingKey = try signingKey(value, baseDirectory: baseDirectory, problems)
        }
        let hadServerAPI = object.had("serverAPI")
        object.read("consumption", problems) { value throws(ConfigurationError) in
            var consumption = try value.object()
            consumption.read("autoRespond", problems) { autoRespond throws(ConfigurationError) in
                app.consumptionAutoRespond = try autoRespond.bool()
                // A serverAPI that was given but had a problem (reported already) is no second problem.
                if app.consumptionAutoRespond && app.serverAPI == nil && !hadServerAPI {
                    throw ConfigurationError(path: autoRespond.path, message: "needs serverAPI: the answer is sent through Apple's API")
                }
            }
            consumption.finish(problems)
        }
        object.read("finishTransactions", problems) { value throws(ConfigurationError) in
            app.finishTransactions = try value.bool()
            if app.finishTransactions && app.serverAPI == nil && !hadServerAPI {
                throw ConfigurationError(path: value.path, message: "needs serverAPI: transactions are finished through Apple's API")
            }
        }
        object.read("appKeys", problems) { value throws(ConfigurationError) in
            app.appKeys = try appKeys(value, bundleId: bundleId, problems)
        }
        object.read("allowAppKeyLogin", problems) { value throws(ConfigurationError) in app.allowAppKeyLogin = try value.bool() }
        object.read("retention", problems) { value throws(ConfigurationError) in app.retention = try retention(value, app: app, problems) }
        object.finish(problems)
        return app
    }

    private func product(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> Product {
        var object = try node.object()
        let productId = try object.require("productId").string()
        let typeNode = try object.require("type")
        let rawType = try typeNode.string()
        guard let type = Product.Kind(rawValue: rawType) else {
            throw ConfigurationError(
                path: typeNode.path,
                message: "unknown product type '\(rawType)' (autoRenewable, nonConsumable, consumable, nonRenewing)")
        }
        var product = Product(productId: productId, type: type)
        object.read("subscriptionGroup", problems) { value throws(ConfigurationError) in product.subscriptionGroup = try value.string() }
        object.read("level", problems) { value throws(ConfigurationError) in
            let level = try value.int()
            guard level >= 1 else { throw ConfigurationError(path: value.path, message: "levels start at 1") }
            product.level = level
        }
        object.read("duration", problems) { value throws(ConfigurationError) in
            let raw = try value.string()
            guard ISODuration.isValid(raw) else {
                throw ConfigurationError(path: value.path, message: "'\(raw)' is not an ISO 8601 duration such as P1M")
            }
            product.duration = raw
        }
        object.read("entitlements", problems) { value throws(ConfigurationError) in
            product.entitlements = try value.array().compactMap { node in
                problems.check { () throws(ConfigurationError) in try node.string() }
            }
        }
        object.read("storefronts", problems) { value throws(ConfigurationError) in
            product.storefronts = try value.array().compactMap { element in
                problems.check { () throws(ConfigurationError) -> String in
                    let raw = try element.string()
                    guard raw.count == 3, raw.allSatisfy({ $0.isLetter && $0.isASCII }) else {
                        throw ConfigurationError(path: element.path, message: "'\(raw)' is not an ISO 3166-1 alpha-3 code")
                    }
                    return raw.uppercased()
                }
            }
        }
        object.read("offers", problems) { value throws(ConfigurationError) in
            guard type == .autoRenewable else {
                throw ConfigurationError(path: value.path, message: "offers are for autoRenewable products")
            }
            try offers(value, into: &product, problems)
        }
        object.finish(problems)
        if type == .autoRenewable && product.subscriptionGroup == nil && !object.had("subscriptionGroup") {
            problems.record(ConfigurationError(path: node.path + ".subscriptionGroup", message: "required for autoRenewable products"))
        }
        if type == .nonRenewing && product.duration == nil && !object.had("duration") {
            problems.record(ConfigurationError(path: node.path + ".duration", message: "required for nonRenewing products"))
        }
        return product
    }

    private func http(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> HTTPSettings {
        var object = try node.object()
        var settings = HTTPSettings()
        func positive(_ key: String, _ apply: (Int) -> Void) {
            object.read(key, problems) { value throws(ConfigurationError) in
                let number = try value.int()
                guard number > 0 else { throw ConfigurationError(path: value.path, message: "must be positive") }
                apply(number)
            }
        }
        positive("maxBodyBytes") { settings.maxBodyBytes = $0 }
        positive("maxHeaderBytes") { settings.maxHeaderBytes = $0 }
        positive("maxURLBytes") { settings.maxURLBytes = $0 }
        positive("connectionLimit") { settings.connectionLimit = $0 }
        positive("idleTimeoutSeconds") { settings.idleTimeoutSeconds = $0 }
        positive("headerTimeoutSeconds") { settings.headerTimeoutSeconds = $0 }
        object.read("perIPConnectionLimit", problems) { value throws(ConfigurationError) in
            let number = try value.int()
            guard number >= 0 else { throw ConfigurationError(path: value.path, message: "must be 0 (no limit) or positive") }
            settings.perIPConnectionLimit = number
        }
        object.read("trustedProxies", problems) { value throws(ConfigurationError) in
            settings.trustedProxies = try value.array().compactMap { node in
                problems.check { () throws(ConfigurationError) -> CIDR in
                    let text = try node.string()
                    guard let network = CIDR(parsing: text) else {
                        throw ConfigurationError(
                            path: node.path, message: "'\(text)' is not an IPv4 or IPv6 address or CIDR network (e.g. 10.0.0.0/8)")
                    }
                    return network
                }
            }
        }
        positive("threads") { settings.threads = $0 }
        positive("shutdownGraceSeconds") { settings.shutdownGraceSeconds = $0 }
        object.read("accessLog", problems) { value throws(ConfigurationError) in settings.accessLog = try value.bool() }
        object.finish(problems)
        return settings
    }

    private func storage(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> StorageSettings {
        var object = try node.object()
        var settings = StorageSettings()
        func bounded(_ key: String, _ range: ClosedRange<Int>, _ apply: (Int) -> Void) {
            object.read(key, problems) { value throws(ConfigurationError) in
                let number = try value.int()
                guard range.contains(number) else {
                    throw ConfigurationError(path: value.path, message: "must be between \(range.lowerBound) and \(range.upperBound)")
                }
                apply(number)
            }
        }
        bounded("rejectedRetentionDays", 1...3650) { settings.rejectedRetentionDays = $0 }
        bounded("statementTimeoutMilliseconds", 100...600_000) { settings.statementTimeoutMilliseconds = $0 }
        bounded("connectTimeoutSeconds", 1...600) { settings.connectTimeoutSeconds = $0 }
        bounded("connections", 1...100) { settings.connections = $0 }
        object.finish(problems)
        return settings
    }
}
