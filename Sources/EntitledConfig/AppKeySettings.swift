import Foundation

/// `apps[].appKeys[]`: a public key an app ships in its binary to create anonymous customers.
///
/// Not a secret in the way an API key is: anyone can extract it from the app. It only lets its
/// holder create anonymous customers (and, with ``App/allowAppKeyLogin``, log in to any id), so
/// what it protects against is casual use of the server by other apps, and what bounds abuse is the
/// rate limits (``AppKeyRateLimits``). The list holds several so that keys rotate: ship the new
/// one, keep both until old builds are gone, then drop the old one.
public struct AppKey: Sendable, Equatable {
    /// Every app key starts with this, so that one is never confused with an API key.
    public static let prefix = "app_"
    /// Shortest accepted key, prefix included (enough randomness not to be guessed).
    public static let minimumLength = 24

    /// Names the key in logs and metrics (never the key itself).
    public var name: String
    /// The resolved key (never logged).
    public var key: String

    public init(name: String, key: String) {
        self.name = name
        self.key = key
    }
}

/// A token bucket: `burst` requests at once, refilled at `perMinute`.
public struct TokenBucketSettings: Sendable, Equatable {
    public var burst: Int
    public var perMinute: Int

    /// Bounds of both values accepted from a configuration file.
    public static let range = 1...1_000_000

    public init(burst: Int, perMinute: Int) {
        self.burst = burst
        self.perMinute = perMinute
    }
}

/// `appKeyRateLimits`: how fast anonymous customers are created, refreshed and logged in.
///
/// `perKey` bounds creations per app key (all clients of an app together); `perAddress` bounds
/// each client address for each of creation, refresh and login separately.
public struct AppKeyRateLimits: Sendable, Equatable {
    public var perKey = TokenBucketSettings(burst: 1000, perMinute: 1000)
    public var perAddress = TokenBucketSettings(burst: 30, perMinute: 30)

    public init() {}
}

extension ConfigurationLoader {
    /// `apps[].appKeys`: each `{"name", "key"}` (`env:NAME` allowed), prefix and length checked,
    /// names unique within the app.
    func appKeys(_ node: Node, bundleId: String, _ problems: Problems) throws(ConfigurationError) -> [AppKey] {
        var keys: [AppKey] = []
        var names = Set<String>()
        for element in try node.array() {
            problems.check { () throws(ConfigurationError) in
                var object = try element.object()
                let nameNode = try object.require("name")
                let name = try nameNode.string()
                let keyNode = try object.require("key")
                object.finish(problems)
                guard names.insert(name).inserted else {
                    throw ConfigurationError(path: nameNode.path, message: "duplicate app key name '\(name)'")
                }
                let key = try resolveSecret(try keyNode.string(), path: keyNode.path, use: "app key '\(name)' of \(bundleId)")
                guard key.hasPrefix(AppKey.prefix), key.utf8.count >= AppKey.minimumLength else {
                    throw ConfigurationError(
                        path: keyNode.path,
                        message: "an app key starts with '\(AppKey.prefix)' and has at least \(AppKey.minimumLength) characters")
                }
                keys.append(AppKey(name: name, key: key))
            }
        }
        return keys
    }

    /// `appKeyRateLimits`: `perKey` and `perAddress`, each `{"burst", "perMinute"}`.
    func appKeyRateLimits(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> AppKeyRateLimits {
        var object = try node.object()
        var limits = AppKeyRateLimits()
        for key in ["perKey", "perAddress"] {
            object.read(key, problems) { value throws(ConfigurationError) in
                var bucket = try value.object()
                var settings = key == "perKey" ? limits.perKey : limits.perAddress
                for field in ["burst", "perMinute"] {
                    bucket.read(field, problems) { number throws(ConfigurationError) in
                        let amount = try number.int()
                        let range = TokenBucketSettings.range
                        guard range.contains(amount) else {
                            throw ConfigurationError(path: number.path, message: "must be between \(range.lowerBound) and \(range.upperBound)")
                        }
                        if field == "burst" { settings.burst = amount } else { settings.perMinute = amount }
                    }
                }
                bucket.finish(problems)
                if key == "perKey" { limits.perKey = settings } else { limits.perAddress = settings }
            }
        }
        object.finish(problems)
        return limits
    }

    /// Problems of app keys across the whole file: they need `customerTokens` (the server mints
    /// with its secret), and one key belongs to one app.
    static func checkAppKeys(_ configuration: Configuration, _ problems: Problems) {
        var owners: [String: String] = [:]
        for (index, app) in configuration.apps.enumerated() where !app.appKeys.isEmpty || app.allowAppKeyLogin {
            if configuration.customerTokens == nil {
                problems.record(ConfigurationError(
                    path: "apps[\(index)].appKeys", message: "needs customerTokens: the server signs anonymous customers' tokens with its secret"))
            }
            for (keyIndex, key) in app.appKeys.enumerated() {
                if let owner = owners[key.key], owner != app.bundleId {
                    problems.record(ConfigurationError(
                        path: "apps[\(index)].appKeys[\(keyIndex)].key", message: "the same key is an app key of \(owner)"))
                }
                owners[key.key] = app.bundleId
            }
        }
    }
}
