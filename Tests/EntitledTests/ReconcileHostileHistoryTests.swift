import AppStore
import AppStoreServerAPI
import Foundation
import HTTPClient
import Synchronization
import Testing

/// Passes requests on and lets `rewrite` change the notification history Apple answers (the request
/// too, before it is sent).
final class HistoryRewriter: OutboundHTTP {
    let base: any OutboundHTTP
    let request: @Sendable (OutboundRequest) -> OutboundRequest
    let answer: @Sendable ([String: Any]) -> [String: Any]

    init(
        _ base: any OutboundHTTP, request: @escaping @Sendable (OutboundRequest) -> OutboundRequest = { $0 },
        answer: @escaping @Sendable ([String: Any]) -> [String: Any]
    ) {
        self.base = base
        self.request = request
        self.answer = answer
    }

    func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
        guard request.url.path == "/inApps/v1/notifications/history" else { return try await base.send(request) }
        var response = try await base.send(self.request(request))
        if response.status == 200, let json = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let body = try? JSONSerialization.data(withJSONObject: answer(json))
        {
            response.body = [UInt8](body)
        }
        return response
    }
}

/// Reconciliation against a history that never ends or holds an item that does not verify.
@Suite(.serialized) struct ReconcileHostileHistoryTests {
    /// `url` without its `paginationToken`: every page asked for is the first.
    static func firstPage(_ request: OutboundRequest) -> OutboundRequest {
        var request = request
        if var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
            components.queryItems = components.queryItems?.filter { $0.name != "paginationToken" }
            if components.queryItems?.isEmpty == true { components.queryItems = nil }
            request.url = components.url ?? request.url
        }
        return request
    }

    @Test(.timeLimit(.minutes(1))) func aRepeatedPaginationTokenEndsThePassAndIsReported() async throws {
        let requests = RequestCounter()
        try await ReconcileScenarioTests.withWorld(
            outbound: { base in
                HistoryRewriter(
                    base,
                    request: { request in
                        requests.add()
                        return Self.firstPage(request)
                    },
                    answer: { json in
                        var json = json
                        json["hasMore"] = true
                        json["paginationToken"] = "the-same-token"
                        return json
                    })
            }
        ) { world in
            try await world.act("customer") { $0.customer = "alice" }
            do {
                _ = try await world.reconciler.runOnce()
                Issue.record("an endless history must fail the pass")
            } catch {
                #expect("\(error)".contains("endless pagination: a page token repeated after 2 pages"), "\(error)")
            }
            #expect(requests.count == 2, "the repeat is seen on the second page, not after 100,000")
        }
    }

    @Test func anUnverifiableHistoryItemIsRejectedAndTheRestApplied() async throws {
        try await ReconcileScenarioTests.withWorld(
            outbound: { base in
                HistoryRewriter(base) { json in
                    // The first item's payload with a broken signature, added in front of the others.
                    var json = json
                    guard var items = json["notificationHistory"] as? [[String: Any]], let first = items.first,
                        let payload = first["signedPayload"] as? String
                    else { return json }
                    var broken = first
                    broken["signedPayload"] = String(payload.dropLast(4)) + (payload.hasSuffix("AAAA") ? "BBBB" : "AAAA")
                    items.insert(broken, at: 0)
                    json["notificationHistory"] = items
                    return json
                }
            }
        ) { world in
            let reports = try await world.play(outage: true)
            let undelivered = await world.simulator.sender.history(onlyFailures: true)
            #expect(!undelivered.isEmpty)
            #expect(reports.after.rejected >= 1 && reports.after.rejected == reports.after.pages, "one bad item per page: \(reports.after)")
            #expect(reports.after.new == undelivered.count, "every genuine notification is still applied")
            #expect(reports.after.notifications == reports.after.new + reports.after.duplicates + reports.after.rejected)
            let rendered = world.metrics.registry.render()
            #expect(
                rendered.split(separator: "\n").contains { $0.hasPrefix("entitled_notifications_total{") && $0.contains("rejected") },
                "the bad item is recorded as a rejected notification")
        }
    }
}

/// Counts calls from any thread.
final class RequestCounter: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
