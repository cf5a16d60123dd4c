import EntitledConfig
import Foundation
import HTTPClient
import Storage

/// One place ``WebhookDispatcher`` delivers events to: a signed webhook endpoint or an
/// integration. Each is its own endpoint in ``WebhookDeliveryStore`` (its ``key``), with its own
/// filter, retry schedule and request, so both share the durable, retried, per-customer-ordered
/// delivery and the console's view of it.
struct DeliveryTarget: Sendable {
    /// The endpoint's id in the delivery tables: a webhook's URL, an integration's identity.
    let key: String
    /// The metrics label: a webhook's index in `webhooks`, an integration's identity.
    let label: String
    let timeoutSeconds: Int
    let retryScheduleSeconds: [Int]
    let maxRetryHours: Int
    /// Whether an event of this type and environment is delivered here.
    let wants: @Sendable (_ type: String, _ environment: String?) -> Bool
    /// The request of one attempt, at `timestamp` (epoch seconds).
    let request: @Sendable (_ event: OutboxEvent, _ timestamp: Int64) -> OutboundRequest

    /// A webhook endpoint: the event's JSON, signed per attempt (Standard Webhooks).
    init(webhook endpoint: WebhookEndpoint, index: Int) {
        key = endpoint.url.absoluteString
        label = String(index)
        timeoutSeconds = endpoint.timeoutSeconds
        retryScheduleSeconds = endpoint.retryScheduleSeconds
        maxRetryHours = endpoint.maxRetryHours
        wants = { endpoint.wants(type: $0, environment: $1) }
        request = { event, timestamp in
            let body = EventJSON.render(event)
            var headers = ["content-type": "application/json", "user-agent": "entitled-webhooks/\(ServerMetrics.version)"]
            for (name, value) in WebhookSignature.headers(key: endpoint.secretKey, id: event.id, timestamp: timestamp, body: body) {
                headers[name] = value
            }
            return OutboundRequest(
                method: "POST", url: endpoint.url, headers: headers, body: body, timeoutSeconds: Double(endpoint.timeoutSeconds))
        }
    }

    /// An integration: the vendor's own format (``IntegrationFormat``), the same on every attempt.
    init(integration: IntegrationEndpoint) {
        key = integration.identity
        label = integration.identity
        timeoutSeconds = integration.timeoutSeconds
        retryScheduleSeconds = integration.retryScheduleSeconds
        maxRetryHours = integration.maxRetryHours
        wants = { integration.wants(type: $0, environment: $1) }
        request = { event, _ in IntegrationFormat.request(integration, event: event) }
    }

    /// The targets of a configuration: its webhooks, then its integrations.
    static func all(webhooks: [WebhookEndpoint], integrations: [IntegrationEndpoint]) -> [DeliveryTarget] {
        webhooks.enumerated().map { DeliveryTarget(webhook: $1, index: $0) } + integrations.map { DeliveryTarget(integration: $0) }
    }
}

extension Configuration {
    /// Every delivery endpoint's key in the delivery tables: the webhooks' URLs, then the
    /// integrations' identities (the console's health page and customer timeline list both).
    var deliveryEndpoints: [String] { webhooks.map(\.url.absoluteString) + integrations.map(\.identity) }
}
