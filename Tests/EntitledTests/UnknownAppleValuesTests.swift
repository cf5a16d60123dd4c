import AppStore
import EntitledServer
@testable import EntitledTestSupport
import struct Entitlements.NotificationType
import struct Entitlements.NotificationSubtype
import Foundation
import Testing

@testable import Storage

/// A verified notification of a type (or subtype) this build does not know is never rejected: it
/// is accepted and recorded with its raw type, the answer does not change, and a metric counts it.
@Suite struct UnknownAppleValuesTests {
    @Test(arguments: [("FUTURE_TYPE_2027", nil), ("DID_RENEW", "FUTURE_SUBTYPE")] as [(String, String?)])
    func anUnknownTypeIsAcceptedRecordedAndCounted(type: String, subtype: String?) async throws {
        let metrics = ServerMetrics()
        try await APIHarness.run(metrics: metrics) { api in
            let before = try await api.customer("u1").json
            let payload = Apple.notification(
                NotificationType(rawValue: type), subtype.map(NotificationSubtype.init(rawValue:)), signed: APIHarness.start)
            let reply = try await api.postV2(payload)
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "accepted")
            #expect(try await api.ledger.count("SELECT COUNT(*) FROM notifications WHERE notification_type = \(type)") == 1)
            var after = try await api.customer("u1").json
            after["serverTime"] = before["serverTime"]
            #expect(after as NSDictionary == before as NSDictionary)
            let text = metrics.registry.render()
            let field = subtype == nil ? "notificationType" : "subtype"
            #expect(MetricsEndpointTests.value(text, #"entitled_unknown_apple_values_total{kind="notification",field="\#(field)"}"#) == 1)
            #expect(
                MetricsEndpointTests.value(
                    text, #"entitled_unknown_apple_values_total{kind="notification",field="\#(subtype == nil ? "subtype" : "notificationType")"}"#)
                    == nil)
        }
    }
}
