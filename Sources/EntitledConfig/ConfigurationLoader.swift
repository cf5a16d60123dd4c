import enum Entitlements.RestoreBehavior
import Foundation
import HTTPServer
import Storage

/// A configuration problem, naming the key (e.g. `apps[0].products[1].type`) it is about.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The JSON path of the offending key, or the file / variable name for problems outside the JSON.
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// Reads, validates and resolves configuration.
///
/// Precedence, highest first: command-line flags, environment (`ENTITLED_LISTEN`,
/// `ENTITLED_DATABASE`), the file, built-in defaults. Values written `env:NAME` are read from the
/// environment, so that secrets stay out of the file.
public struct ConfigurationLoader: Sendable {
    /// The environment variables consulted (injected so tests need not touch the process's).
    public var environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Loads the file at `path` (nil: defaults only), then applies environment and flag overrides.
    public func load(path: String?, listen: String? = nil, database: String? = nil) throws(ConfigurationError)
        -> Configuration
    {
        var configuration = Configuration()
        if let path {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw ConfigurationError(path: path, message: "cannot read the configuration file")
            }
            configuration = try parse(data, baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        }
        if let value = environment["ENTITLED_LISTEN"] {
            configuration.listen = try Self.listenAddress(value, path: "ENTITLED_LISTEN")
        }
        if let value = environment["ENTITLED_DATABASE"] {
            configuration.database = try Self.databaseURL(value, path: "ENTITLED_DATABASE")
        }
        if let listen { configuration.listen = try Self.listenAddress(listen, path: "--listen") }
        if let database { configuration.database = try Self.databaseURL(database, path: "--database") }
        return configuration
    }

    /// Parses configuration JSON. Relative certificate paths are resolved against `baseDirectory`.
    public func parse(_ data: Data, baseDirectory: String? = nil) throws(ConfigurationError) -> Configuration {
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ConfigurationError(path: "$", message: "not valid JSON")
        }
        var reader = try Node(root, path: "$").object()
        var configuration = Configuration()
        if let node = reader.take("listen") {
            configuration.listen = try Self.listenAddress(try node.string(), path: node.path)
        }
        if let node = reader.take("database") {
            configuration.database = try Self.databaseURL(try node.string(), path: node.path)
        }
        if let node = reader.take("storage") {
            configuration.storage = try storage(node)
        }
        if let node = reader.take("apiKeys") {
            configuration.apiKeys = try node.array().map { node throws(ConfigurationError) in try apiKey(node) }
            var names = Set<String>()
            for (index, key) in configuration.apiKeys.enumerated() where !names.insert(key.name).inserted {
                throw ConfigurationError(path: "apiKeys[\(index)].name", message: "duplicate key name '\(key.name)'")
            }
        }
        if let node = reader.take("apps") {
            configuration.apps = try node.array().map { node throws(ConfigurationError) in try app(node, baseDirectory: baseDirectory) }
            var bundles = Set<String>()
            for (index, app) in configuration.apps.enumerated() where !bundles.insert(app.bundleId).inserted {
                throw ConfigurationError(path: "apps[\(index)].bundleId", message: "duplicate bundleId '\(app.bundleId)'")
            }
        }
        if let node = reader.take("http") {
            configuration.http = try http(node)
        }
        if let node = reader.take("cacheTTLSeconds") {
            let seconds = try node.int()
            guard (0...86400).contains(seconds) else {
                throw ConfigurationError(path: node.path, message: "must be between 0 and 86400")
            }
            configuration.cacheTTLSeconds = seconds
        }
        if let node = reader.take("customerTokens") {
            var object = try node.object()
            let secretNode = try object.require("secret")
            let secret = try resolveSecret(try secretNode.string(), path: secretNode.path)
            guard secret.utf8.count >= 32 else {
                throw ConfigurationError(path: secretNode.path, message: "a customer token secret needs at least 32 characters")
            }
            var maxLifetime = CustomerTokenSettings.defaultMaxLifetimeSeconds
            if let node = object.take("maxLifetimeSeconds") {
                maxLifetime = try node.int()
                let range = CustomerTokenSettings.maxLifetimeSecondsRange
                guard range.contains(maxLifetime) else {
                    throw ConfigurationError(
                        path: node.path, message: "must be between \(range.lowerBound) and \(range.upperBound)")
                }
            }
            try object.finish()
            configuration.customerTokens = CustomerTokenSettings(secret: secret, maxLifetimeSeconds: maxLifetime)
        }
        if let node = reader.take("webhooks") {
            let nodes = try node.array()
            guard nodes.count <= 20 else { throw ConfigurationError(path: node.path, message: "at most 20 webhook endpoints") }
            configuration.webhooks = try nodes.map { node throws(ConfigurationError) in try webhook(node) }
        }
        if let node = reader.take("tls") { configuration.tls = try tls(node, baseDirectory: baseDirectory) }
        if let node = reader.take("log") { configuration.log = try log(node) }
        if let node = reader.take("metricsListen") {
            configuration.metricsListen = try Self.listenAddress(try node.string(), path: node.path)
        }
        try reader.finish()
        return configuration
    }

    // MARK: - Sections

    private func apiKey(_ node: Node) throws(ConfigurationError) -> APIKey {
        var object = try node.object()
        let name = try object.require("name").string()
        let secretNode = try object.require("secret")
        let secret = try resolveSecret(try secretNode.string(), path: secretNode.path)
        guard secret.utf8.count >= 16 else {
            throw ConfigurationError(path: secretNode.path, message: "an API key secret needs at least 16 characters")
        }
        var scopes = Set<APIKey.Scope>()
        for scopeNode in try object.require("scopes").array() {
            let raw = try scopeNode.string()
            guard let scope = APIKey.Scope(rawValue: raw) else {
                throw ConfigurationError(path: scopeNode.path, message: "unknown scope '\(raw)' (read, write, admin, metrics)")
            }
            scopes.insert(scope)
        }
        try object.finish()
        return APIKey(name: name, secret: secret, scopes: scopes)
    }

    private func app(_ node: Node, baseDirectory: String?) throws(ConfigurationError) -> App {
        var object = try node.object()
        let bundleId = try object.require("bundleId").string()
        guard !bundleId.isEmpty else { throw ConfigurationError(path: node.path + ".bundleId", message: "must not be empty") }
        var app = App(bundleId: bundleId)
        if let value = object.take("appAppleId") { app.appAppleId = try value.int64() }
        if let value = object.take("environments") {
            app.environments = try value.array().map { element throws(ConfigurationError) in
                let raw = try element.string()
                guard ["Production", "Sandbox", "Xcode", "LocalTesting"].contains(raw) else {
                    throw ConfigurationError(
                        path: element.path, message: "unknown environment '\(raw)' (Production, Sandbox, Xcode, LocalTesting)")
                }
                return raw
            }
            if app.environments.isEmpty {
                throw ConfigurationError(path: value.path, message: "list at least one environment")
            }
        }
        if app.environments.contains("Production") && app.appAppleId == nil {
            throw ConfigurationError(path: node.path + ".appAppleId", message: "required when Production is an environment")
        }
        for key in ["appleRootCertificates", "receiptRootCertificates"] {
            guard let value = object.take(key) else { continue }
            let paths = try value.array().map { element throws(ConfigurationError) in
                let raw = try element.string()
                let resolved = raw.hasPrefix("/") || baseDirectory == nil ? raw : baseDirectory! + "/" + raw
                guard FileManager.default.isReadableFile(atPath: resolved) else {
                    throw ConfigurationError(path: element.path, message: "cannot read certificate file '\(raw)'")
                }
                return resolved
            }
            if key == "appleRootCertificates" { app.appleRootCertificates = paths } else { app.receiptRootCertificates = paths }
        }
        if let value = object.take("sharedSecret") {
            app.sharedSecret = try resolveSecret(try value.string(), path: value.path)
        }
        if let value = object.take("gracePeriodDays") {
            let days = try value.int()
            guard (0...60).contains(days) else {
                throw ConfigurationError(path: value.path, message: "must be between 0 and 60")
            }
            app.gracePeriodDays = days
        }
        if let value = object.take("restoreBehavior") {
            let raw = try value.string()
            guard let behavior = RestoreBehavior(rawValue: raw) else {
                throw ConfigurationError(path: value.path, message: "must be 'transfer' or 'keep'")
            }
            app.restoreBehavior = behavior
        }
        if let value = object.take("products") {
            app.products = try value.array().map { node throws(ConfigurationError) in try product(node) }
            var ids = Set<String>()
            for (index, product) in app.products.enumerated() where !ids.insert(product.productId).inserted {
                throw ConfigurationError(
                    path: "\(value.path)[\(index)].productId", message: "duplicate productId '\(product.productId)'")
            }
        }
        if let value = object.take("serverAPI") {
            app.serverAPI = try serverAPI(value, baseDirectory: baseDirectory)
        }
        if let value = object.take("consumption") {
            var consumption = try value.object()
            if let autoRespond = consumption.take("autoRespond") {
                app.consumptionAutoRespond = try autoRespond.bool()
                if app.consumptionAutoRespond && app.serverAPI == nil {
                    throw ConfigurationError(path: autoRespond.path, message: "needs serverAPI: the answer is sent through Apple's API")
                }
            }
            try consumption.finish()
        }
        try object.finish()
        return app
    }

    private func product(_ node: Node) throws(ConfigurationError) -> Product {
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
        if let value = object.take("subscriptionGroup") { product.subscriptionGroup = try value.string() }
        if let value = object.take("level") {
            let level = try value.int()
            guard level >= 1 else { throw ConfigurationError(path: value.path, message: "levels start at 1") }
            product.level = level
        }
        if let value = object.take("duration") {
            let raw = try value.string()
            guard ISODuration.isValid(raw) else {
                throw ConfigurationError(path: value.path, message: "'\(raw)' is not an ISO 8601 duration such as P1M")
            }
            product.duration = raw
        }
        if let value = object.take("entitlements") {
            product.entitlements = try value.array().map { node throws(ConfigurationError) in try node.string() }
        }
        if let value = object.take("storefronts") {
            product.storefronts = try value.array().map { element throws(ConfigurationError) in
                let raw = try element.string()
                guard raw.count == 3, raw.allSatisfy({ $0.isLetter && $0.isASCII }) else {
                    throw ConfigurationError(path: element.path, message: "'\(raw)' is not an ISO 3166-1 alpha-3 code")
                }
                return raw.uppercased()
            }
        }
        try object.finish()
        if type == .autoRenewable && product.subscriptionGroup == nil {
            throw ConfigurationError(path: node.path + ".subscriptionGroup", message: "required for autoRenewable products")
        }
        if type == .nonRenewing && product.duration == nil {
            throw ConfigurationError(path: node.path + ".duration", message: "required for nonRenewing products")
        }
        return product
    }

    private func http(_ node: Node) throws(ConfigurationError) -> HTTPSettings {
        var object = try node.object()
        var settings = HTTPSettings()
        func positive(_ key: String, _ apply: (Int) -> Void) throws(ConfigurationError) {
            guard let value = object.take(key) else { return }
            let number = try value.int()
            guard number > 0 else { throw ConfigurationError(path: value.path, message: "must be positive") }
            apply(number)
        }
        try positive("maxBodyBytes") { settings.maxBodyBytes = $0 }
        try positive("maxHeaderBytes") { settings.maxHeaderBytes = $0 }
        try positive("maxURLBytes") { settings.maxURLBytes = $0 }
        try positive("connectionLimit") { settings.connectionLimit = $0 }
        try positive("idleTimeoutSeconds") { settings.idleTimeoutSeconds = $0 }
        try positive("headerTimeoutSeconds") { settings.headerTimeoutSeconds = $0 }
        if let value = object.take("perIPConnectionLimit") {
            let number = try value.int()
            guard number >= 0 else { throw ConfigurationError(path: value.path, message: "must be 0 (no limit) or positive") }
            settings.perIPConnectionLimit = number
        }
        if let value = object.take("trustedProxies") {
            settings.trustedProxies = try value.array().map { node throws(ConfigurationError) in
                let text = try node.string()
                guard let network = CIDR(parsing: text) else {
                    throw ConfigurationError(
                        path: node.path, message: "'\(text)' is not an IPv4 or IPv6 address or CIDR network (e.g. 10.0.0.0/8)")
                }
                return network
            }
        }
        try positive("threads") { settings.threads = $0 }
        try positive("shutdownGraceSeconds") { settings.shutdownGraceSeconds = $0 }
        if let value = object.take("accessLog") { settings.accessLog = try value.bool() }
        try object.finish()
        return settings
    }

    private func storage(_ node: Node) throws(ConfigurationError) -> StorageSettings {
        var object = try node.object()
        var settings = StorageSettings()
        func bounded(_ key: String, _ range: ClosedRange<Int>, _ apply: (Int) -> Void) throws(ConfigurationError) {
            guard let value = object.take(key) else { return }
            let number = try value.int()
            guard range.contains(number) else {
                throw ConfigurationError(path: value.path, message: "must be between \(range.lowerBound) and \(range.upperBound)")
            }
            apply(number)
        }
        try bounded("rejectedRetentionDays", 1...3650) { settings.rejectedRetentionDays = $0 }
        try bounded("statementTimeoutMilliseconds", 100...600_000) { settings.statementTimeoutMilliseconds = $0 }
        try bounded("connectTimeoutSeconds", 1...600) { settings.connectTimeoutSeconds = $0 }
        try object.finish()
        return settings
    }

    // MARK: - Values

    func resolveSecret(_ raw: String, path: String) throws(ConfigurationError) -> String {
        guard raw.hasPrefix("env:") else { return raw }
        let name = String(raw.dropFirst(4))
        guard let value = environment[name], !value.isEmpty else {
            throw ConfigurationError(path: path, message: "environment variable \(name) is not set")
        }
        return value
    }

    static func listenAddress(_ raw: String, path: String) throws(ConfigurationError) -> ListenAddress {
        guard let address = ListenAddress(parsing: raw) else {
            throw ConfigurationError(path: path, message: "'\(raw)' is not HOST:PORT")
        }
        return address
    }

    /// Checks `raw` with Storage's ``DatabaseURL`` parser, the one that opens it.
    static func databaseURL(_ raw: String, path: String) throws(ConfigurationError) -> String {
        do {
            _ = try DatabaseURL(parsing: raw)
        } catch {
            throw ConfigurationError(path: path, message: "expected sqlite:PATH or postgres://… (got '\(raw)')")
        }
        return raw
    }
}

/// A JSON value with its path, for precise error messages.
struct Node {
    let value: Any
    let path: String

    init(_ value: Any, path: String) {
        self.value = value
        self.path = path
    }

    func object() throws(ConfigurationError) -> ObjectReader {
        guard let dictionary = value as? [String: Any] else { throw mismatch("an object") }
        return ObjectReader(values: dictionary, path: path)
    }

    func array() throws(ConfigurationError) -> [Node] {
        guard let array = value as? [Any] else { throw mismatch("an array") }
        return array.enumerated().map { Node($1, path: "\(path)[\($0)]") }
    }

    func string() throws(ConfigurationError) -> String {
        guard let string = value as? String else { throw mismatch("a string") }
        return string
    }

    func bool() throws(ConfigurationError) -> Bool {
        guard let number = value as? NSNumber, Self.isBool(number) else { throw mismatch("true or false") }
        return number.boolValue
    }

    func int() throws(ConfigurationError) -> Int {
        let wide = try int64()
        guard let narrow = Int(exactly: wide) else { throw mismatch("a whole number") }
        return narrow
    }

    func int64() throws(ConfigurationError) -> Int64 {
        guard let number = value as? NSNumber, !Self.isBool(number) else { throw mismatch("a whole number") }
        let double = number.doubleValue
        guard double == double.rounded(), let exact = Int64(exactly: double) else {
            throw mismatch("a whole number")
        }
        return exact
    }

    private static func isBool(_ number: NSNumber) -> Bool {
        // Foundation reports JSON booleans with the Objective-C type code of `char`.
        String(cString: number.objCType) == "c"
    }

    private func mismatch(_ expected: String) -> ConfigurationError {
        ConfigurationError(path: path, message: "expected \(expected)")
    }
}

/// Takes keys out of a JSON object; whatever is left at `finish()` is an unknown key.
struct ObjectReader {
    private var values: [String: Any]
    let path: String

    init(values: [String: Any], path: String) {
        self.values = values
        self.path = path
    }

    mutating func take(_ key: String) -> Node? {
        guard let value = values.removeValue(forKey: key) else { return nil }
        if value is NSNull { return nil }
        return Node(value, path: childPath(key))
    }

    mutating func require(_ key: String) throws(ConfigurationError) -> Node {
        guard let node = take(key) else { throw ConfigurationError(path: childPath(key), message: "required") }
        return node
    }

    func finish() throws(ConfigurationError) {
        if let unknown = values.keys.sorted().first {
            throw ConfigurationError(path: childPath(unknown), message: "unknown key")
        }
    }

    private func childPath(_ key: String) -> String { path == "$" ? key : "\(path).\(key)" }
}

/// ISO 8601 durations of whole calendar units: `PnYnMnWnD` (at least one part).
public enum ISODuration {
    public static func isValid(_ text: String) -> Bool {
        var rest = Substring(text)
        guard rest.first == "P" else { return false }
        rest = rest.dropFirst()
        var sawPart = false
        var lastUnitIndex = -1
        let units: [Character] = ["Y", "M", "W", "D"]
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 5 else { return false }
            rest = rest.dropFirst(digits.count)
            guard let unit = rest.first, let index = units.firstIndex(of: unit), index > lastUnitIndex else {
                return false
            }
            lastUnitIndex = index
            rest = rest.dropFirst()
            sawPart = true
        }
        return sawPart
    }
}
