import EntitledCrypto
import Entitlements
import Foundation

/// One webhook endpoint (`webhooks[]`): where events are delivered, signed with its secret.
public struct WebhookEndpoint: Sendable, Hashable {
    /// `https://…` (or `http://` for loopback and tests).
    public var url: URL
    /// The signing key: the bytes of the secret's base64 part after `whsec_` (never logged).
    public var secretKey: [UInt8]
    /// Event types delivered; `["*"]` is every type.
    public var events: [String]
    /// Environments whose events are delivered.
    public var environments: [String]
    /// A delivery attempt that has no answer after this long is a failure. Default 10, 1…60.
    public var timeoutSeconds: Int
    /// The waits before each retry; after the last, the last wait repeats until ``maxRetryHours``.
    public var retryScheduleSeconds: [Int]
    /// After this long since the first attempt a delivery is marked failed. Default 72, 1…720.
    public var maxRetryHours: Int

    public static let defaultRetryScheduleSeconds = [30, 120, 600, 3600, 21600, 43200]
    /// Limits of the keys (docs/configuration.md lists them).
    public static let maxEndpoints = 20
    public static let timeoutSecondsRange = 1...60
    public static let retryScheduleCountRange = 1...20
    public static let retryWaitSecondsRange = 1...86400
    public static let maxRetryHoursRange = 1...720

    public init(
        url: URL, secretKey: [UInt8], events: [String] = ["*"], environments: [String] = ["Production", "Sandbox"],
        timeoutSeconds: Int = 10, retryScheduleSeconds: [Int] = WebhookEndpoint.defaultRetryScheduleSeconds, maxRetryHours: Int = 72
    ) {
        self.url = url
        self.secretKey = secretKey
        self.events = events
        self.environments = environments
        self.timeoutSeconds = timeoutSeconds
        self.retryScheduleSeconds = retryScheduleSeconds
        self.maxRetryHours = maxRetryHours
    }

    /// Whether an event of `type` in `environment` (nil: none, e.g. `test`) goes to this endpoint.
    public func wants(type: String, environment: String?) -> Bool {
        (events.contains("*") || events.contains(type)) && (environment.map(environments.contains) ?? true)
    }
}

/// Webhook secrets: `whsec_` and the base64 of at least 24 random bytes (the Standard Webhooks form).
public enum WebhookSecret {
    public static let prefix = "whsec_"
    public static let minimumBytes = 24

    /// A new secret of 32 random bytes (`entitled webhook-secret`).
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return prefix + Base64.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The signing key of a secret; nil when it is not `whsec_` + base64 of at least 24 bytes.
    public static func key(_ secret: String) -> [UInt8]? {
        guard secret.hasPrefix(prefix), let bytes = Base64.decode(secret.dropFirst(prefix.count)), bytes.count >= minimumBytes
        else { return nil }
        return bytes
    }
}

/// The `events` section: how long a customer's answer-change events are held back so that facts
/// arriving out of order within the window give the same events (docs/storage.md, "Events").
public struct EventSettings: Sendable, Equatable {
    /// Events are released this long after the customer's last change (0: derived at the commit,
    /// as without a hold).
    public var settleSeconds = 5
    /// …but at most this long after the first change held.
    public var maxHoldSeconds = 300

    public static let settleSecondsRange = 0...300
    public static let maxHoldSecondsRange = 1...3600

    public init(settleSeconds: Int = 5, maxHoldSeconds: Int = 300) {
        self.settleSeconds = settleSeconds
        self.maxHoldSeconds = maxHoldSeconds
    }
}

extension ConfigurationLoader {
    /// Parses `events`: `settleSeconds` 0…300, `maxHoldSeconds` 1…3600 and not below `settleSeconds`.
    func eventSettings(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> EventSettings {
        var object = try node.object()
        var settings = EventSettings()
        object.read("settleSeconds", problems) { value throws(ConfigurationError) in
            settings.settleSeconds = try Self.bounded(value, EventSettings.settleSecondsRange)
        }
        object.read("maxHoldSeconds", problems) { value throws(ConfigurationError) in
            settings.maxHoldSeconds = try Self.bounded(value, EventSettings.maxHoldSecondsRange)
        }
        object.finish(problems)
        guard settings.maxHoldSeconds >= settings.settleSeconds else {
            throw ConfigurationError(path: node.path + ".maxHoldSeconds", message: "must not be below settleSeconds")
        }
        return settings
    }

    /// Parses `webhooks[]`; problems of optional keys are recorded and parsing goes on.
    func webhook(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> WebhookEndpoint {
        var object = try node.object()
        let urlNode = try object.require("url")
        let raw = try urlNode.string()
        guard let url = Self.endpointURL(raw) else {
            throw ConfigurationError(path: urlNode.path, message: "expected an http(s) URL such as https://api.example.com/hooks/entitled")
        }
        let secretNode = try object.require("secret")
        let secret = try resolveSecret(try secretNode.string(), path: secretNode.path, use: "the signing secret of webhook \(node.path)")
        guard let key = WebhookSecret.key(secret) else {
            throw ConfigurationError(
                path: secretNode.path, message: "expected whsec_ and the base64 of at least 24 random bytes (entitled webhook-secret)")
        }
        var endpoint = WebhookEndpoint(url: url, secretKey: key)
        object.read("events", problems) { value throws(ConfigurationError) in endpoint.events = try eventTypes(value, problems) }
        object.read("environments", problems) { value throws(ConfigurationError) in
            endpoint.environments = try environments(value, problems)
        }
        object.read("timeoutSeconds", problems) { value throws(ConfigurationError) in
            endpoint.timeoutSeconds = try Self.bounded(value, WebhookEndpoint.timeoutSecondsRange)
        }
        object.read("retryScheduleSeconds", problems) { value throws(ConfigurationError) in
            let waits = try value.array()
            guard WebhookEndpoint.retryScheduleCountRange.contains(waits.count) else {
                let range = WebhookEndpoint.retryScheduleCountRange
                throw ConfigurationError(path: value.path, message: "must list \(range.lowerBound) to \(range.upperBound) waits")
            }
            endpoint.retryScheduleSeconds = waits.compactMap { element in
                problems.check { () throws(ConfigurationError) in try Self.bounded(element, WebhookEndpoint.retryWaitSecondsRange) }
            }
        }
        object.read("maxRetryHours", problems) { value throws(ConfigurationError) in
            endpoint.maxRetryHours = try Self.bounded(value, WebhookEndpoint.maxRetryHoursRange)
        }
        object.finish(problems)
        return endpoint
    }

    /// An `events` list: `"*"` or documented event types, not empty.
    func eventTypes(_ value: Node, _ problems: Problems) throws(ConfigurationError) -> [String] {
        let types = try value.array().compactMap { element in
            problems.check { () throws(ConfigurationError) -> String in
                let type = try element.string()
                guard type == "*" || EventType.allDocumented.contains(EventType(rawValue: type)) else {
                    throw ConfigurationError(path: element.path, message: "unknown event type '\(type)'")
                }
                return type
            }
        }
        guard try !value.array().isEmpty else { throw ConfigurationError(path: value.path, message: "must not be empty") }
        return types
    }

    /// A whole number within `range`.
    static func bounded(_ node: Node, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        let value = try node.int()
        guard range.contains(value) else {
            throw ConfigurationError(path: node.path, message: "must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }
}
