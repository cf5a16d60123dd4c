import EntitledCrypto
import Entitlements
import Foundation

/// What caused a projection change: the committed message and its facts, as events cite them.
struct EventCause: Sendable {
    /// The `notifications` row (nil when the message was not kept).
    var notificationID: Int64?
    var notificationUUID: String?
    var notificationType: String?
    var subtype: String?
    var bundleId: String?
    /// The facts' transaction ids, in the order they came.
    var transactionIds: [String]
    /// Digest of the newest fact (a key part of events only a fact distinguishes, e.g. a toggle).
    var factDigest: String?
    /// When it happened at Apple: the newest fact's signed date (ms), or the receipt time.
    var occurredAt: Int64
    /// The earliest signed date of the message's facts, or of the facts of a subscription it linked:
    /// the customer's history is re-derived from there.
    var earliestSignedDate: Int64
}

/// Event ids: what makes one event one, however often its facts arrive.
enum EventDerivation {
    /// `evt_` and 32 hex digits of SHA-256 over the customer, the type and the change's key parts.
    static func eventID(appUserId: String, type: String, key: [String]) -> String {
        let text = ([appUserId, type] + key).joined(separator: "\u{1F}")
        return "evt_" + Hex.encode(SHA256.hash(Array(text.utf8))).prefix(32)
    }
}
