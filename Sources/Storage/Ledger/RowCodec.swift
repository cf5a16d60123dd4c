/// The compact text encoding of a projection's rows, stored beside the encoded state in
/// `customer_states.projection_rows` so the hot read is a single-row lookup.
///
/// Each row starts with `E` (entitlement) or `S` (subscription), then its fields in a fixed order,
/// each either `~` (nil) or `<byte count>:<UTF-8 bytes>`. Length prefixes make any text safe
/// without escaping.
enum RowCodec {
    static func encode(_ projection: CustomerProjection) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64 * (projection.entitlements.count + projection.subscriptions.count))
        func field(_ text: String?) {
            guard let text else {
                out.append(UInt8(ascii: "~"))
                return
            }
            out.append(contentsOf: String(text.utf8.count).utf8)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: text.utf8)
        }
        func int(_ value: Int64?) { field(value.map { String($0) }) }
        func bool(_ value: Bool) { field(value ? "1" : "0") }
        for row in projection.entitlements {
            out.append(UInt8(ascii: "E"))
            field(row.entitlement); field(row.status); bool(row.active); field(row.productId)
            field(row.originalTransactionId); int(row.expiresAt); int(row.graceUntil); bool(row.willRenew)
            field(row.environment)
        }
        for row in projection.subscriptions {
            out.append(UInt8(ascii: "S"))
            field(row.originalTransactionId); field(row.productId); field(row.group); field(row.status)
            int(row.expiresAt); int(row.graceUntil); bool(row.autoRenew); field(row.environment)
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String, state: [UInt8]) throws -> CustomerProjection {
        var projection = CustomerProjection(entitlements: [], subscriptions: [], state: state)
        var bytes = Array(text.utf8)[...]
        func fail() -> StorageError { StorageError(.corrupt, "malformed projection rows") }
        func field() throws -> String? {
            guard let first = bytes.first else { throw fail() }
            if first == UInt8(ascii: "~") {
                bytes = bytes.dropFirst()
                return nil
            }
            var length = 0
            while let digit = bytes.first, digit != UInt8(ascii: ":") {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit), length < 1 << 24 else { throw fail() }
                length = length * 10 + Int(digit - UInt8(ascii: "0"))
                bytes = bytes.dropFirst()
            }
            bytes = bytes.dropFirst()
            guard bytes.count >= length else { throw fail() }
            let value = String(decoding: bytes.prefix(length), as: UTF8.self)
            bytes = bytes.dropFirst(length)
            return value
        }
        func required() throws -> String {
            guard let value = try field() else { throw fail() }
            return value
        }
        func int() throws -> Int64? {
            guard let text = try field() else { return nil }
            guard let value = Int64(text) else { throw fail() }
            return value
        }
        func bool() throws -> Bool { try required() == "1" }
        while let tag = bytes.first {
            bytes = bytes.dropFirst()
            switch tag {
            case UInt8(ascii: "E"):
                projection.entitlements.append(
                    EntitlementRow(
                        entitlement: try required(), status: try required(), active: try bool(), productId: try field(),
                        originalTransactionId: try field(), expiresAt: try int(), graceUntil: try int(), willRenew: try bool(),
                        environment: try required()))
            case UInt8(ascii: "S"):
                projection.subscriptions.append(
                    SubscriptionRow(
                        originalTransactionId: try required(), productId: try required(), group: try field(),
                        status: try required(), expiresAt: try int(), graceUntil: try int(), autoRenew: try bool(),
                        environment: try required()))
            default:
                throw fail()
            }
        }
        return projection
    }
}
