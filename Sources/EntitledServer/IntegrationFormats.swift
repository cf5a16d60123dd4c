import EntitledConfig
import EntitledCrypto
import Foundation
import HTTPClient
import HTTPServer
import Storage

/// The request body and headers each integration's vendor expects for one outbox event: pure
/// functions of the event and the integration (docs/integrations.md). Every vendor gets the same
/// properties (``IntegrationFormat/properties(_:)``) and an idempotency key derived from the
/// event's id, so a retried delivery is counted once.
enum IntegrationFormat {
    /// The request delivering `event` to `integration`.
    static func request(_ integration: IntegrationEndpoint, event: OutboxEvent) -> OutboundRequest {
        var headers = ["content-type": "application/json", "user-agent": "entitled-integrations/\(ServerMetrics.version)"]
        let body: WireJSON
        switch integration.kind {
        case .slack:
            body = slack(event)
        case .segment:
            body = segment(event)
            headers["authorization"] = basic(integration.key)
        case .amplitude:
            body = amplitude(event, apiKey: integration.key)
        case .mixpanel:
            body = mixpanel(event)
            headers["authorization"] = basic(integration.key)
        case .posthog:
            body = posthog(event, apiKey: integration.key)
        }
        return OutboundRequest(
            method: "POST", url: integration.url, headers: headers, body: body.bytes, timeoutSeconds: Double(integration.timeoutSeconds))
    }

    /// HTTP Basic credentials with the key as the user name and an empty password (Segment's write
    /// key, Mixpanel's project token).
    static func basic(_ key: String) -> String { "Basic " + Base64.encode(Array((key + ":").utf8)) }

    // MARK: Vendors

    /// Slack incoming webhook: `{"text": …}`, one readable line.
    static func slack(_ event: OutboxEvent) -> WireJSON {
        .object([("text", .string(slackText(event)))])
    }

    /// Segment HTTP Tracking API `track`: `userId` (or `anonymousId` for a purchase with no
    /// customer yet), `event`, `properties`, `timestamp`, `messageId` (the idempotency key).
    static func segment(_ event: OutboxEvent) -> WireJSON {
        var members: [(String, WireJSON)] = [("messageId", .string(event.id))]
        if let user = event.appUserId {
            members.append(("userId", .string(user)))
        } else {
            members.append(("anonymousId", .string(distinctId(event))))
        }
        var properties = self.properties(event)
        if let revenue = revenue(event) { properties.append(("revenue", revenue.amount)) }
        members += [
            ("event", .string(event.type)), ("properties", .object(properties)),
            ("timestamp", .string(ISO8601.format(milliseconds: event.occurredAt))),
            ("context", .object([("library", .object([("name", .string("entitled")), ("version", .string(ServerMetrics.version))]))])),
        ]
        return .object(members)
    }

    /// Amplitude's identifiers shorter than this are refused unless `options.min_id_length` lowers it.
    static let amplitudeMinimumIdLength = 5

    /// Amplitude HTTP V2 API: `api_key` and one event with `user_id` (or `device_id`),
    /// `event_type`, `time` (ms), `insert_id`, `event_properties`, and for revenue events
    /// `productId`, `price`, `quantity`, `revenue`, `revenueType`.
    static func amplitude(_ event: OutboxEvent, apiKey: String) -> WireJSON {
        let id = distinctId(event)
        var item: [(String, WireJSON)] = [
            (event.appUserId == nil ? "device_id" : "user_id", .string(id)), ("event_type", .string(event.type)),
            ("time", .int(event.occurredAt)), ("insert_id", .string(event.id)), ("event_properties", .object(properties(event))),
        ]
        if let revenue = revenue(event) {
            if let product = event.productId { item.append(("productId", .string(product))) }
            item += [
                ("price", revenue.amount), ("quantity", .int(1)), ("revenue", revenue.amount),
                ("revenueType", .string(revenue.refund ? "refund" : "purchase")),
            ]
        }
        var members: [(String, WireJSON)] = [("api_key", .string(apiKey)), ("events", .array([.object(item)]))]
        if id.count < amplitudeMinimumIdLength { members.append(("options", .object([("min_id_length", .int(1))]))) }
        return .object(members)
    }

    /// Mixpanel `/import`: a one-event array; `properties.time` (ms), `distinct_id`,
    /// `$insert_id` (at most 36 letters, digits or `-`: the event id's hex).
    static func mixpanel(_ event: OutboxEvent) -> WireJSON {
        let properties: [(String, WireJSON)] =
            [("time", .int(event.occurredAt)), ("distinct_id", .string(distinctId(event))), ("$insert_id", .string(hexId(event.id)))]
            + self.properties(event)
        return .array([.object([("event", .string(event.type)), ("properties", .object(properties))])])
    }

    /// PostHog `/capture`: `api_key`, `event`, `distinct_id`, `properties`, `timestamp`, and
    /// `uuid` (from the event id, so a retry is the same event).
    static func posthog(_ event: OutboxEvent, apiKey: String) -> WireJSON {
        .object([
            ("api_key", .string(apiKey)), ("event", .string(event.type)), ("distinct_id", .string(distinctId(event))),
            ("properties", .object(properties(event))), ("timestamp", .string(ISO8601.format(milliseconds: event.occurredAt))),
            ("uuid", .string(uuid(event.id))),
        ])
    }

    // MARK: Shared vocabulary

    /// The analytics identity: the app user id; for a purchase no customer owns yet the
    /// `appAccountToken` or `transaction:` + its original transaction id; `entitled` for an event
    /// of no purchase (`test`).
    static func distinctId(_ event: OutboxEvent) -> String {
        event.appUserId ?? event.appAccountToken ?? event.originalTransactionId.map { "transaction:" + $0 } ?? "entitled"
    }

    /// The properties every vendor receives, in this order; absent values are left out. `country`
    /// is the storefront (ISO 3166-1 alpha-3), `price` a number.
    static func properties(_ event: OutboxEvent) -> [(String, WireJSON)] {
        var members: [(String, WireJSON)] = [("eventId", .string(event.id))]
        func put(_ name: String, _ value: String?) { if let value { members.append((name, .string(value))) } }
        put("environment", event.environment)
        put("appUserId", event.appUserId)
        put("appAccountToken", event.appAccountToken)
        put("bundleId", event.bundleId)
        put("productId", event.productId)
        put("originalTransactionId", event.originalTransactionId)
        if !event.entitlements.isEmpty { members.append(("entitlements", .array(event.entitlements.map(WireJSON.string)))) }
        let details = event.details
        put("store", details["store"])
        if let price = details["price"] { members.append(("price", number(price))) }
        put("currency", details["currency"])
        put("periodType", details["periodType"])
        put("country", details["storefront"])
        put("transactionId", details["transactionId"])
        let named: Set = ["store", "price", "currency", "periodType", "storefront", "transactionId"]
        for (name, value) in details.sorted(by: { $0.key < $1.key }) where !named.contains(name) { put(name, value) }
        members.append(("occurredAt", .string(ISO8601.format(milliseconds: event.occurredAt))))
        return members
    }

    /// The revenue an event records: positive for a charge or a reversed refund, negative for a
    /// refund; nil for events that move no money (or a price of zero, a free trial).
    static func revenue(_ event: OutboxEvent) -> (amount: WireJSON, refund: Bool)? {
        guard let price = event.details["price"], isDecimal(price), price.contains(where: { $0 != "0" && $0 != "." }) else { return nil }
        switch event.type {
        case "subscription.started", "subscription.renewed", "purchase.completed", "subscription.refund_reversed",
            "purchase.refund_reversed":
            return (.number(price), false)
        case "subscription.product_changed" where event.details["timing"] == "immediate":
            return (.number(price), false)
        case "subscription.refunded", "purchase.refunded":
            return (.number("-" + price), true)
        default:
            return nil
        }
    }

    /// A price as a JSON number when it is a plain decimal (`9.99`), else as the string it is.
    static func number(_ text: String) -> WireJSON { isDecimal(text) ? .number(text) : .string(text) }

    static func isDecimal(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), text.utf8.count <= 32 else { return false }
        return parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }
    }

    /// 32 lowercase hex digits naming the event: its id's own (`evt_` + 32 hex), else a digest of it.
    static func hexId(_ id: String) -> String {
        let tail = id.hasPrefix("evt_") ? String(id.dropFirst(4)) : ""
        if tail.utf8.count == 32, Hex.decode(tail.lowercased().utf8) != nil { return tail.lowercased() }
        return String(Hex.encode(SHA256.hash(Array(id.utf8))).prefix(32))
    }

    /// The event's hex id as an RFC 9562 version 8 (custom) UUID: the same event, the same UUID.
    static func uuid(_ id: String) -> String {
        var hex = Array(hexId(id))
        hex[12] = "8"
        let variant = Int(String(hex[16]), radix: 16) ?? 0
        hex[16] = Array("89ab")[variant & 3]
        let text = String(hex)
        func slice(_ from: Int, _ to: Int) -> Substring {
            text[text.index(text.startIndex, offsetBy: from)..<text.index(text.startIndex, offsetBy: to)]
        }
        return [slice(0, 8), slice(8, 12), slice(12, 16), slice(16, 20), slice(20, 32)].joined(separator: "-")
    }

    /// `Subscription renewed: com.example.pro.monthly, 9.99 USD, normal, appStore, USA (customer u1, Production)`.
    static func slackText(_ event: OutboxEvent) -> String {
        let words = event.type.replacingOccurrences(of: ".", with: " ").replacingOccurrences(of: "_", with: " ")
        var facts: [String] = []
        if let product = event.productId { facts.append(product) }
        let details = event.details
        if let price = details["price"] { facts.append([price, details["currency"]].compactMap { $0 }.joined(separator: " ")) }
        for name in ["periodType", "store", "storefront", "reason", "kind", "from", "to", "timing", "offerId"] {
            if let value = details[name] { facts.append(value) }
        }
        var who = ["customer " + distinctId(event)]
        if let environment = event.environment { who.append(environment) }
        let line = words.prefix(1).uppercased() + words.dropFirst() + (facts.isEmpty ? "" : ": " + facts.joined(separator: ", "))
            + " (" + who.joined(separator: ", ") + ")"
        return slackEscaped(line)
    }

    /// Slack's control characters in message text: `&`, `<`, `>`.
    static func slackEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}

/// A JSON value whose object members keep the order they are given in: the payloads above are
/// written byte for byte the same on every attempt.
indirect enum WireJSON: Sendable {
    case string(String)
    /// A number written as this literal (a decimal price keeps its digits).
    case number(String)
    case int(Int64)
    case array([WireJSON])
    case object([(String, WireJSON)])

    var bytes: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    func write(into out: inout [UInt8]) {
        switch self {
        case .string(let text): Self.quote(text, into: &out)
        case .number(let literal): out += Array(literal.utf8)
        case .int(let value): out += Array(String(value).utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (name, value)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.quote(name, into: &out)
                out.append(UInt8(ascii: ":"))
                value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func quote(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
            case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
            case 0x0A: out += Array(#"\n"#.utf8)
            case 0x0D: out += Array(#"\r"#.utf8)
            case 0x09: out += Array(#"\t"#.utf8)
            case ..<0x20: out += Array(String(format: "\\u%04x", byte).utf8)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
