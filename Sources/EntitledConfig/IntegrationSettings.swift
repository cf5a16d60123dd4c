import Foundation

/// One analytics or chat integration (`integrations[]`): events delivered to a vendor's ingestion
/// API in its own wire format, with the webhooks' guarantees (durable, retried, in order per
/// customer). docs/integrations.md describes each vendor's format.
public struct IntegrationEndpoint: Sendable, Hashable {
    /// The vendors supported.
    public enum Kind: String, Sendable, CaseIterable {
        case slack, segment, amplitude, mixpanel, posthog
    }

    public var kind: Kind
    /// The vendor's credential: Segment's write key, Amplitude's API key, Mixpanel's project
    /// token, PostHog's project API key; for Slack the incoming webhook's URL. Never logged.
    public var key: String
    /// Where events are posted: the vendor's public endpoint unless `endpoint` overrides it (EU
    /// data residency, a proxy, tests); for Slack the webhook URL of ``key``.
    public var url: URL
    /// Event types delivered; `["*"]` is every type.
    public var events: [String]
    /// Environments whose events are delivered (default Production only: analytics should not
    /// count sandbox purchases).
    public var environments: [String]
    /// The same limits and retry schedule as a webhook's defaults.
    public var timeoutSeconds = 10
    public var retryScheduleSeconds = WebhookEndpoint.defaultRetryScheduleSeconds
    public var maxRetryHours = 72

    /// At most this many integrations.
    public static let maxIntegrations = 20

    public init(kind: Kind, key: String, url: URL, events: [String] = ["*"], environments: [String] = ["Production"]) {
        self.kind = kind
        self.key = key
        self.url = url
        self.events = events
        self.environments = environments
    }

    /// The vendor's public ingestion endpoint (nil for Slack: the key is the URL).
    public static func defaultURL(_ kind: Kind) -> URL? {
        switch kind {
        case .slack: nil
        case .segment: URL(string: "https://api.segment.io/v1/track")
        case .amplitude: URL(string: "https://api2.amplitude.com/2/httpapi")
        case .mixpanel: URL(string: "https://api.mixpanel.com/import?strict=1")
        case .posthog: URL(string: "https://us.i.posthog.com/capture/")
        }
    }

    /// The integration's id in the delivery tables and the console: `integration:` + the kind +
    /// the endpoint's host and port, never the key. A Slack URL's last path component is its
    /// secret, so only the path before it is added (`…/services/T…/B…`).
    public var identity: String {
        var host = url.host ?? ""
        if let port = url.port { host += ":\(port)" }
        guard kind == .slack else { return "integration:\(kind.rawValue):\(host)" }
        let parts = url.path.split(separator: "/").dropLast()
        return "integration:slack:\(host)/\(parts.joined(separator: "/"))"
    }

    /// Whether an event of `type` in `environment` (nil: none, e.g. `test`) goes to this integration.
    public func wants(type: String, environment: String?) -> Bool {
        (events.contains("*") || events.contains(type)) && (environment.map(environments.contains) ?? true)
    }
}

extension IntegrationEndpoint: CustomStringConvertible, CustomDebugStringConvertible {
    /// The identity and filters, never the key (nor a Slack URL's secret part), so that printing
    /// a configuration cannot leak it.
    public var description: String { "\(identity) events=\(events) environments=\(environments)" }
    public var debugDescription: String { description }
}

extension ConfigurationLoader {
    /// Parses `integrations`: at most ``IntegrationEndpoint/maxIntegrations``, each identity once.
    func integrations(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> [IntegrationEndpoint] {
        let nodes = try node.array()
        guard nodes.count <= IntegrationEndpoint.maxIntegrations else {
            throw ConfigurationError(path: node.path, message: "at most \(IntegrationEndpoint.maxIntegrations) integrations")
        }
        var identities = Set<String>()
        return nodes.enumerated().compactMap { index, element in
            guard let integration = problems.check({ () throws(ConfigurationError) in try integration(element, problems) }) else {
                return nil
            }
            guard identities.insert(integration.identity).inserted else {
                problems.record(
                    ConfigurationError(path: element.path, message: "a second \(integration.kind.rawValue) integration to the same endpoint"))
                return nil
            }
            return integration
        }
    }

    /// One `integrations[]` entry: `type`, `key` (`env:NAME`), optional `endpoint`, `events`,
    /// `environments`.
    func integration(_ node: Node, _ problems: Problems) throws(ConfigurationError) -> IntegrationEndpoint {
        var object = try node.object()
        let typeNode = try object.require("type")
        let raw = try typeNode.string()
        guard let kind = IntegrationEndpoint.Kind(rawValue: raw) else {
            let kinds = IntegrationEndpoint.Kind.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(path: typeNode.path, message: "unknown integration '\(raw)' (\(kinds))")
        }
        let keyNode = try object.require("key")
        let keyText = try keyNode.string()
        guard keyText.hasPrefix("env:") else {
            throw ConfigurationError(path: keyNode.path, message: "write the key as env:NAME so that it stays out of the file")
        }
        let key = try resolveSecret(keyText, path: keyNode.path, use: "the \(kind.rawValue) key of integration \(node.path)")
        guard !key.isEmpty, key.utf8.count <= 2048, key.allSatisfy({ !$0.isWhitespace && !$0.isNewline }) else {
            throw ConfigurationError(path: keyNode.path, message: "expected a key of 1 to 2048 characters without spaces")
        }
        var url: URL?
        if kind == .slack {
            url = Self.endpointURL(key)
            guard url != nil else {
                throw ConfigurationError(path: keyNode.path, message: "expected the Slack incoming webhook's https URL")
            }
        } else {
            url = IntegrationEndpoint.defaultURL(kind)
        }
        object.read("endpoint", problems) { value throws(ConfigurationError) in
            guard kind != .slack else {
                throw ConfigurationError(path: value.path, message: "a Slack integration posts to its key, the webhook URL")
            }
            guard let parsed = Self.endpointURL(try value.string()) else {
                throw ConfigurationError(path: value.path, message: "expected an http(s) URL such as https://api.eu.amplitude.com/2/httpapi")
            }
            url = parsed
        }
        guard let url else { throw ConfigurationError(path: node.path, message: "no endpoint") }
        var integration = IntegrationEndpoint(kind: kind, key: key, url: url)
        object.read("events", problems) { value throws(ConfigurationError) in integration.events = try eventTypes(value, problems) }
        object.read("environments", problems) { value throws(ConfigurationError) in
            integration.environments = try environments(value, problems)
        }
        object.finish(problems)
        return integration
    }

    /// An http(s) URL with a host (a query allowed), at most 2048 bytes: a webhook's or an integration's endpoint.
    static func endpointURL(_ raw: String) -> URL? {
        guard raw.utf8.count <= 2048, let url = URL(string: raw), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil
        else { return nil }
        return url
    }
}
