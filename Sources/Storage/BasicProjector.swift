import Foundation

/// A minimal ``Projector`` that reads a few fields of each fact's decoded JSON.
///
/// It stands in until the entitlement engine is wired (tests, the crash child, `entitled rebuild`
/// before then); it knows nothing of grace periods, offers, family sharing or upgrades.
///
/// Per `originalTransactionId`, the latest `transaction` fact (by `signedDate`) gives `productId`,
/// `expiresDate`, `environment`, `subscriptionGroupIdentifier` and `revocationDate`; the latest
/// `renewal` fact gives `autoRenewStatus` (1 = on). Status is `revoked`, `active` (expires after
/// `now`) or `expired`. The entitlement is ``entitlements``[productId], or the product id itself.
public struct BasicProjector: Projector {
    /// Product id → entitlement name.
    public var entitlements: [String: String]

    /// Creates the projector.
    public init(entitlements: [String: String] = [:]) {
        self.entitlements = entitlements
    }

    /// Projects one customer from its transaction and renewal facts.
    public func project(customer: CustomerRecord, facts: [StoredFact], now: Int64) -> CustomerProjection {
        struct Latest {
            var transaction: [String: FlatJSON.Value]?
            var transactionDate: Int64 = .min
            var autoRenew: Bool?
            var renewalDate: Int64 = .min
        }
        var byOTID: [String: Latest] = [:]
        for stored in facts {
            guard let otid = stored.fact.originalTransactionId,
                let object = FlatJSON.parse(stored.fact.payload)
            else { continue }
            let signed = stored.fact.signedDate ?? 0
            var latest = byOTID[otid] ?? Latest()
            switch stored.fact.kind {
            case .transaction where signed >= latest.transactionDate:
                latest.transaction = object
                latest.transactionDate = signed
            case .renewal where signed >= latest.renewalDate:
                latest.autoRenew = object["autoRenewStatus"]?.int.map { $0 == 1 }
                latest.renewalDate = signed
            default:
                break
            }
            byOTID[otid] = latest
        }
        var subscriptions: [SubscriptionRow] = []
        var entitlementRows: [String: EntitlementRow] = [:]
        for (otid, latest) in byOTID {
            guard let transaction = latest.transaction, let productId = transaction["productId"]?.string else { continue }
            let expires = transaction["expiresDate"]?.int
            let environment = transaction["environment"]?.string ?? "Production"
            let status: String
            if transaction["revocationDate"]?.int != nil {
                status = "revoked"
            } else if let expires, expires <= now {
                status = "expired"
            } else {
                status = "active"
            }
            let autoRenew = latest.autoRenew ?? (status == "active")
            subscriptions.append(
                SubscriptionRow(
                    originalTransactionId: otid, productId: productId,
                    group: transaction["subscriptionGroupIdentifier"]?.string, status: status, expiresAt: expires,
                    graceUntil: nil, autoRenew: autoRenew, environment: environment))
            let name = entitlements[productId] ?? productId
            let row = EntitlementRow(
                entitlement: name, status: status, active: status == "active", productId: productId,
                originalTransactionId: otid, expiresAt: expires, graceUntil: nil, willRenew: autoRenew,
                environment: environment)
            let key = name + "\u{0}" + environment
            // Keep the best row per entitlement: active first, then the latest expiry, then the smallest id.
            if let existing = entitlementRows[key] {
                let better =
                    (row.active && !existing.active)
                    || (row.active == existing.active
                        && ((row.expiresAt ?? .max) > (existing.expiresAt ?? .max)
                            || ((row.expiresAt ?? .max) == (existing.expiresAt ?? .max)
                                && otid < (existing.originalTransactionId ?? ""))))
                if better { entitlementRows[key] = row }
            } else {
                entitlementRows[key] = row
            }
        }
        let projection = CustomerProjection(
            entitlements: Array(entitlementRows.values), subscriptions: subscriptions, state: []
        ).canonical
        // The state document, keys sorted, written directly (no Foundation round trip).
        var json = #"{"appAccountToken":"# + FlatJSON.quote(customer.appAccountToken) + #","appUserId":"# + FlatJSON.quote(customer.appUserId)
        json += #","entitlements":["#
        for (index, row) in projection.entitlements.enumerated() {
            if index > 0 { json += "," }
            json += #"{"active":\#(row.active),"entitlement":\#(FlatJSON.quote(row.entitlement)),"environment":\#(FlatJSON.quote(row.environment))"#
            if let expires = row.expiresAt { json += #","expiresAt":\#(expires)"# }
            if let product = row.productId { json += #","productId":"# + FlatJSON.quote(product) }
            json += #","status":\#(FlatJSON.quote(row.status)),"willRenew":\#(row.willRenew)}"#
        }
        json += "]}"
        return CustomerProjection(entitlements: projection.entitlements, subscriptions: projection.subscriptions, state: Array(json.utf8))
    }
}

/// Just enough JSON for ``BasicProjector``: the top-level members of an object whose values are
/// strings, numbers, booleans or null (nested values are skipped), and string quoting.
enum FlatJSON {
    enum Value {
        case string(String)
        case number(Double, Int64?)
        case bool(Bool)
        case null

        var string: String? { if case .string(let text) = self { return text } else { return nil } }
        var int: Int64? {
            switch self {
            case .number(let double, let int): return int ?? Int64(exactly: double.rounded())
            case .string(let text): return Int64(text)
            default: return nil
            }
        }
    }

    static func parse(_ text: String) -> [String: Value]? {
        var text = text
        return text.withUTF8 { bytes -> [String: Value]? in
            var index = 0
            func skipSpace() { while index < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[index]) { index += 1 } }
            func string() -> String? {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
                index += 1
                var out: [UInt8] = []
                while index < bytes.count {
                    let byte = bytes[index]
                    index += 1
                    switch byte {
                    case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
                    case UInt8(ascii: "\\"):
                        guard index < bytes.count else { return nil }
                        let escaped = bytes[index]
                        index += 1
                        switch escaped {
                        case UInt8(ascii: "n"): out.append(0x0a)
                        case UInt8(ascii: "t"): out.append(0x09)
                        case UInt8(ascii: "r"): out.append(0x0d)
                        case UInt8(ascii: "b"): out.append(0x08)
                        case UInt8(ascii: "f"): out.append(0x0c)
                        case UInt8(ascii: "u"):
                            guard index + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                            else { return nil }
                            index += 4
                            out.append(contentsOf: String(Unicode.Scalar(code).map(Character.init) ?? "\u{FFFD}").utf8)
                        default: out.append(escaped)
                        }
                    default: out.append(byte)
                    }
                }
                return nil
            }
            /// Skips any value (for nested objects and arrays), tracking strings and depth.
            func skipValue() -> Bool {
                var depth = 0
                repeat {
                    guard index < bytes.count else { return false }
                    switch bytes[index] {
                    case UInt8(ascii: "\""): guard string() != nil else { return false }
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1; index += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1; index += 1
                    case UInt8(ascii: ","), UInt8(ascii: ":"):
                        if depth == 0 { return true }
                        index += 1
                    default: index += 1
                    }
                } while depth > 0 || (index < bytes.count && ![UInt8(ascii: ","), UInt8(ascii: "}")].contains(bytes[index]))
                return true
            }
            func value() -> Value? {
                guard index < bytes.count else { return nil }
                switch bytes[index] {
                case UInt8(ascii: "\""): return string().map(Value.string)
                case UInt8(ascii: "t"): index += 4; return .bool(true)
                case UInt8(ascii: "f"): index += 5; return .bool(false)
                case UInt8(ascii: "n"): index += 4; return .null
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    let start = index
                    while index < bytes.count, !([UInt8(ascii: ","), UInt8(ascii: "}"), 0x20, 0x0a, 0x0d, 0x09].contains(bytes[index])) { index += 1 }
                    let literal = String(decoding: bytes[start..<index], as: UTF8.self)
                    guard let double = Double(literal) else { return nil }
                    return .number(double, Int64(literal))
                default:
                    return skipValue() ? .null : nil
                }
            }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
            index += 1
            var members: [String: Value] = [:]
            while true {
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { return members }
                guard let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                skipSpace()
                guard let parsed = value() else { return nil }
                members[key] = parsed
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { return members }
                return nil
            }
        }
    }

    /// The JSON string literal for `text`, quotes included.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
