import EntitledConfig
import EntitledCrypto
import Foundation
import HTTPClient
import Storage
import Testing

@testable import EntitledServer

/// Each integration's request checked against the vendor's published request format: the JSON
/// shapes, required fields, identifier rules and limits of their API references (quoted in
/// docs/integrations.md), and the same idempotency key on every attempt.
@Suite struct IntegrationFormatTests {
    static let renewed = OutboxEvent(
        sequence: 7, id: "evt_d41f92f218ea6da7fee629cdf06ebe39", type: "subscription.renewed", appUserId: "u1",
        appAccountToken: "6f1c0a34-3c39-4a8b-9a55-0d6d3c9f8c11", environment: "Production", bundleId: "com.example.app",
        productId: "com.example.pro.monthly", originalTransactionId: "2000000000000001", entitlements: ["pro"],
        details: ["store": "appStore", "transactionId": "2000000000000002", "price": "9.99", "currency": "USD", "periodType": "normal",
                  "storefront": "USA"],
        cause: "{}", occurredAt: 1_771_146_000_000, recordedAt: 1_771_146_001_000, answer: [])

    static var refunded: OutboxEvent {
        var event = renewed
        event.id = "evt_0123456789abcdef0123456789abcdef"
        event.type = "subscription.refunded"
        event.appUserId = "customer-42"
        event.details["reason"] = "refund"
        return event
    }

    /// A purchase no customer owns yet, starting a free trial.
    static var unlinkedTrial: OutboxEvent {
        var event = renewed
        event.id = "evt_ffffffffffffffffffffffffffffffff"
        event.type = "subscription.started"
        event.appUserId = nil
        event.appAccountToken = nil
        event.details["price"] = "0"
        event.details["periodType"] = "trial"
        return event
    }

    static let events = [renewed, refunded, unlinkedTrial]

    static func integration(_ kind: IntegrationEndpoint.Kind) -> IntegrationEndpoint {
        let url = IntegrationEndpoint.defaultURL(kind) ?? URL(string: "https://hooks.slack.com/services/T1/B1/secret")!
        return IntegrationEndpoint(kind: kind, key: kind == .slack ? url.absoluteString : "key-\(kind.rawValue)", url: url)
    }

    func json(_ request: OutboundRequest) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(request.body ?? []))
    }

    func basicUser(_ request: OutboundRequest) -> String? {
        guard let value = request.headers["authorization"], value.hasPrefix("Basic "),
            let decoded = Base64.decode(value.dropFirst(6)), let text = String(bytes: decoded, encoding: .utf8), text.hasSuffix(":")
        else { return nil }
        return String(text.dropLast())
    }

    static func isISO8601(_ value: Any?) -> Bool {
        guard let text = value as? String else { return false }
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return parser.date(from: text) != nil
    }

    /// The properties every vendor gets: the event's store, product, price, currency, period
    /// type and country with the customer's ids.
    func expectCommonProperties(_ properties: [String: Any]?, of event: OutboxEvent) {
        #expect(properties?["store"] as? String == "appStore")
        #expect(properties?["productId"] as? String == event.productId)
        #expect((properties?["price"] as? NSNumber)?.decimalValue == Decimal(string: event.details["price"]!))
        #expect(properties?["currency"] as? String == "USD")
        #expect(properties?["periodType"] as? String == event.details["periodType"])
        #expect(properties?["country"] as? String == "USA")
        #expect(properties?["appUserId"] as? String == event.appUserId)
        #expect(properties?["appAccountToken"] as? String == event.appAccountToken)
        #expect(properties?["originalTransactionId"] as? String == event.originalTransactionId)
        #expect(properties?["eventId"] as? String == event.id)
    }

    @Test(arguments: IntegrationEndpoint.Kind.allCases)
    func aRetryIsByteForByteTheSameRequest(kind: IntegrationEndpoint.Kind) {
        for event in Self.events {
            let first = IntegrationFormat.request(Self.integration(kind), event: event)
            let again = IntegrationFormat.request(Self.integration(kind), event: event)
            #expect(first.body == again.body && first.headers == again.headers)
            #expect(first.method == "POST" && first.headers["content-type"] == "application/json")
        }
    }

    /// Segment HTTP Tracking API `track`: POST /v1/track, Basic auth with the write key as user;
    /// `event`, `userId` or `anonymousId`, `properties`, ISO 8601 `timestamp`, `messageId`; under 32 KB.
    @Test func segmentTrack() throws {
        for event in Self.events {
            let request = IntegrationFormat.request(Self.integration(.segment), event: event)
            #expect(request.url.absoluteString == "https://api.segment.io/v1/track")
            #expect(basicUser(request) == "key-segment")
            #expect((request.body ?? []).count < 32 * 1024)
            let body = try #require(try json(request) as? [String: Any])
            #expect(Set(body.keys).isSubset(of: ["messageId", "userId", "anonymousId", "event", "properties", "timestamp", "context"]))
            #expect(body["event"] as? String == event.type)
            #expect(body["messageId"] as? String == event.id)
            #expect(Self.isISO8601(body["timestamp"]))
            #expect((body["userId"] as? String) == event.appUserId)
            #expect((body["userId"] == nil) == (body["anonymousId"] is String), "exactly one of userId and anonymousId")
            let properties = body["properties"] as? [String: Any]
            expectCommonProperties(properties, of: event)
            #expect(body["context"] is [String: Any])
        }
        let refund = try #require(try json(IntegrationFormat.request(Self.integration(.segment), event: Self.refunded)) as? [String: Any])
        #expect(((refund["properties"] as? [String: Any])?["revenue"] as? NSNumber)?.decimalValue == Decimal(string: "-9.99"))
        let trial = try #require(try json(IntegrationFormat.request(Self.integration(.segment), event: Self.unlinkedTrial)) as? [String: Any])
        #expect((trial["properties"] as? [String: Any])?["revenue"] == nil, "a free trial records no revenue")
        #expect(trial["anonymousId"] as? String == "transaction:2000000000000001")
    }

    /// Amplitude HTTP V2 API: `api_key`, `events[]` (at most 2000, under 1 MB), each with
    /// `event_type` and `user_id` or `device_id` (at least 5 characters unless
    /// `options.min_id_length` says less), `time` in ms, `insert_id`, `event_properties`; revenue
    /// with `price`, `quantity`, `revenue`, `productId`, `revenueType`.
    @Test func amplitudeHTTPV2() throws {
        for event in Self.events {
            let request = IntegrationFormat.request(Self.integration(.amplitude), event: event)
            #expect(request.url.absoluteString == "https://api2.amplitude.com/2/httpapi")
            #expect(request.headers["authorization"] == nil, "the key travels in the body")
            #expect((request.body ?? []).count < 1_000_000)
            let body = try #require(try json(request) as? [String: Any])
            #expect(Set(body.keys).isSubset(of: ["api_key", "events", "options"]))
            #expect(body["api_key"] as? String == "key-amplitude")
            let events = try #require(body["events"] as? [[String: Any]])
            #expect(events.count == 1)
            let item = events[0]
            #expect(item["event_type"] as? String == event.type)
            #expect((item["time"] as? NSNumber)?.int64Value == event.occurredAt)
            #expect(item["insert_id"] as? String == event.id)
            let id = try #require((item["user_id"] ?? item["device_id"]) as? String)
            let minimum = ((body["options"] as? [String: Any])?["min_id_length"] as? Int) ?? 5
            #expect(id.count >= minimum)
            #expect((item["user_id"] as? String) == event.appUserId)
            expectCommonProperties(item["event_properties"] as? [String: Any], of: event)
        }
        let renewal = try #require(
            (try json(IntegrationFormat.request(Self.integration(.amplitude), event: Self.renewed)) as? [String: Any])?["events"]
                as? [[String: Any]]
        )[0]
        #expect((renewal["price"] as? NSNumber)?.decimalValue == Decimal(string: "9.99"))
        #expect(renewal["quantity"] as? Int == 1)
        #expect((renewal["revenue"] as? NSNumber)?.decimalValue == Decimal(string: "9.99"))
        #expect(renewal["productId"] as? String == "com.example.pro.monthly")
        #expect(renewal["revenueType"] as? String == "purchase")
        let refund = try #require(
            (try json(IntegrationFormat.request(Self.integration(.amplitude), event: Self.refunded)) as? [String: Any])?["events"]
                as? [[String: Any]]
        )[0]
        #expect((refund["revenue"] as? NSNumber)?.decimalValue == Decimal(string: "-9.99"))
        #expect(refund["revenueType"] as? String == "refund")
    }

    /// Mixpanel `/import`: Basic auth with the project token as user; a JSON array (at most
    /// 2000 events, 10 MB) of `{event, properties}` with `time`, `distinct_id` and `$insert_id`
    /// (at most 36 characters, letters, digits and `-`).
    @Test func mixpanelImport() throws {
        for event in Self.events {
            let request = IntegrationFormat.request(Self.integration(.mixpanel), event: event)
            let url = request.url
            #expect(url.host == "api.mixpanel.com" && url.path == "/import" && url.query == "strict=1")
            #expect(basicUser(request) == "key-mixpanel")
            let body = try #require(try json(request) as? [[String: Any]])
            #expect((1...2000).contains(body.count))
            #expect(Set(body[0].keys) == ["event", "properties"])
            #expect(body[0]["event"] as? String == event.type)
            let properties = try #require(body[0]["properties"] as? [String: Any])
            #expect((properties["time"] as? NSNumber)?.int64Value == event.occurredAt)
            let distinct = try #require(properties["distinct_id"] as? String)
            #expect(!["", "anon", "anonymous", "nil", "none", "null", "n/a", "undefined"].contains(distinct.lowercased()))
            let insert = try #require(properties["$insert_id"] as? String)
            #expect(insert.count <= 36 && insert.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
            #expect(insert == String(event.id.dropFirst(4)))
            expectCommonProperties(properties, of: event)
        }
    }

    /// PostHog `/capture`: `api_key`, `event`, `distinct_id`, `properties`, ISO 8601
    /// `timestamp`, and `uuid`, a UUID.
    @Test func posthogCapture() throws {
        var uuids = Set<String>()
        for event in Self.events {
            let request = IntegrationFormat.request(Self.integration(.posthog), event: event)
            #expect(request.url.absoluteString == "https://us.i.posthog.com/capture/")
            let body = try #require(try json(request) as? [String: Any])
            #expect(Set(body.keys) == ["api_key", "event", "distinct_id", "properties", "timestamp", "uuid"])
            #expect(body["api_key"] as? String == "key-posthog")
            #expect(body["event"] as? String == event.type)
            #expect(body["distinct_id"] as? String == IntegrationFormat.distinctId(event))
            #expect(Self.isISO8601(body["timestamp"]))
            let uuid = try #require(body["uuid"] as? String)
            #expect(UUID(uuidString: uuid) != nil)
            uuids.insert(uuid)
            expectCommonProperties(body["properties"] as? [String: Any], of: event)
        }
        #expect(uuids.count == Self.events.count, "each event its own UUID")
        #expect(IntegrationFormat.uuid("evt_d41f92f218ea6da7fee629cdf06ebe39") == "d41f92f2-18ea-8da7-bee6-29cdf06ebe39")
    }

    /// Slack incoming webhook: `{"text": …}`, a readable line with `&`, `<`, `>` escaped.
    @Test func slackText() throws {
        let request = IntegrationFormat.request(Self.integration(.slack), event: Self.renewed)
        #expect(request.url.absoluteString == "https://hooks.slack.com/services/T1/B1/secret")
        let body = try #require(try json(request) as? [String: Any])
        #expect(Set(body.keys) == ["text"])
        #expect(
            body["text"] as? String
                == "Subscription renewed: com.example.pro.monthly, 9.99 USD, normal, appStore, USA (customer u1, Production)")
        var hostile = Self.renewed
        hostile.appUserId = "<!channel> & co"
        let hostileBody = try json(IntegrationFormat.request(Self.integration(.slack), event: hostile)) as? [String: Any]
        let text = try #require(hostileBody?["text"] as? String)
        #expect(text.contains("&lt;!channel&gt; &amp; co") && !text.contains("<"))
    }

    @Test func stringsAreEscapedIntoValidJSON() throws {
        var event = Self.renewed
        event.appUserId = "quote\" back\\ line\n tab\t bell\u{07} é"
        for kind in IntegrationEndpoint.Kind.allCases {
            let request = IntegrationFormat.request(Self.integration(kind), event: event)
            #expect((try? json(request)) != nil, "\(kind)")
        }
        let body = try #require(try json(IntegrationFormat.request(Self.integration(.posthog), event: event)) as? [String: Any])
        #expect(body["distinct_id"] as? String == event.appUserId)
    }
}
