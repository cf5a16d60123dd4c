import AppStore
import AppStoreSimulator
import Foundation
import HTTPServer
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct DeliveryTests {
    @Test func productionRetriesOnApplesScheduleInVirtualTime() async throws {
        let h = try await Harness(environment: .production, failFirst: 3)
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "coins"
        }
        var records = await h.simulator.sender.history()
        #expect(records.count == 1)
        #expect(records[0].attempts.count == 1)
        #expect(records[0].attempts[0].httpStatus == 500)
        #expect(records[0].nextAttemptDate == start + Milliseconds.hour)
        #expect(await h.simulator.sender.history(onlyFailures: true).count == 1)

        // Nothing happens before the retry is due.
        try await h.simulator.advance(to: start + 59 * Milliseconds.minute)
        #expect(await h.simulator.sender.history()[0].attempts.count == 1)

        try await h.advance("P3D")
        records = await h.simulator.sender.history()
        let hours = records[0].attempts.map { ($0.date - start) / Milliseconds.hour }
        #expect(hours == [0, 1, 13, 37])
        #expect(records[0].attempts.map(\.succeeded) == [false, false, false, true])
        #expect(records[0].nextAttemptDate == nil)
        #expect(records[0].delivered)
        #expect(await h.simulator.sender.history(onlyFailures: true).isEmpty)
        // Every attempt carried the same signed payload (same notificationUUID).
        let payloads = await h.receiver.signedPayloads()
        #expect(payloads.count == 4)
        #expect(Set(payloads).count == 1)
    }

    @Test func productionGivesUpAfterSixAttempts() async throws {
        let h = try await Harness(environment: .production, failFirst: 100)
        try await h.perform("test")
        try await h.advance("P10D")
        let record = await h.simulator.sender.history()[0]
        #expect(record.attempts.map { ($0.date - start) / Milliseconds.hour } == [0, 1, 13, 37, 85, 157])
        #expect(record.nextAttemptDate == nil)
        #expect(!record.delivered)
    }

    @Test func sandboxSendsOnce() async throws {
        let h = try await Harness(environment: .sandbox, failFirst: 1)
        try await h.perform("test")
        try await h.advance("P10D")
        let record = await h.simulator.sender.history()[0]
        #expect(record.attempts.count == 1)
        #expect(record.nextAttemptDate == nil)
    }

    @Test func retriesInterleaveWithRenewalsInTimeOrder() async throws {
        let h = try await Harness(environment: .production, failFirst: 1)
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        try await h.advance("P2M")
        let records = await h.simulator.sender.history()
        #expect(records.map(\.notificationType) == ["SUBSCRIBED", "DID_RENEW", "DID_RENEW"])
        #expect(records[0].attempts.map { $0.date - start } == [0, Milliseconds.hour])
        #expect(records.allSatisfy { $0.delivered })
    }

    @Test func scenarioFileRunsEndToEnd() async throws {
        let h = try await Harness(customers: false)
        let scenario = """
            # A month of alice, with a billing failure and a recovery.
            {"action": "customer", "customer": "alice", "storefront": "USA"}
            {"action": "customer", "customer": "bob", "paymentMethod": "failing"}
            {"at": "PT0S", "action": "purchase", "customer": "alice", "product": "pro.monthly", "offer": "intro", "appAccountToken": "11111111-2222-4333-8444-555555555555"}
            {"at": "P3D", "action": "autoRenew", "customer": "alice", "product": "pro.monthly", "enabled": false}
            {"at": "P4D", "action": "autoRenew", "customer": "alice", "product": "pro.monthly", "enabled": true}
            {"at": "P5D", "action": "paymentMethod", "customer": "alice", "paymentMethod": "failing"}
            {"at": "P1M", "action": "paymentMethod", "customer": "alice", "paymentMethod": "ok"}

            {"at": "P1M", "action": "test"}
            """
        let out = try h.open(try await h.simulator.run(scenario: scenario))
        #expect(
            out.map(\.kind) == [
                "SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED",
                "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED", "DID_FAIL_TO_RENEW", "DID_RENEW/BILLING_RECOVERY", "TEST",
            ])
        #expect(out[0].transaction?.appAccountToken == "11111111-2222-4333-8444-555555555555")
        #expect(out[3].payload.signedDate == start + 7 * Milliseconds.day)
        #expect(out[4].payload.signedDate == ISODuration("P1M")!.added(to: start))
        #expect(await h.receiver.signedPayloads().count == 6)
    }

    @Test func scenarioErrorsNameTheLine() async throws {
        let h = try await Harness()
        await #expect {
            try await h.simulator.run(scenario: "{\"action\": \"test\"}\n{\"action\": \"purchase\", \"customer\": \"zed\", \"product\": \"coins\"}")
        } throws: { error in
            (error as? SimulatorError)?.message.hasPrefix("line 2:") == true
        }
    }

    /// The status travels with the error (set where it is made), not guessed from its code's spelling.
    @Test func scenarioErrorsKeepTheirStatus() async throws {
        let h = try await Harness()
        await #expect {
            try await h.simulator.run(scenario: "{\"action\": \"purchase\", \"customer\": \"zed\", \"product\": \"coins\"}")
        } throws: { error in
            (error as? SimulatorError).map { $0.code == "UNKNOWN_CUSTOMER" && $0.status == 404 } == true
        }
        await #expect {
            try await h.simulator.run(scenario: "{\"action\": \"fly\"}")
        } throws: { error in
            (error as? SimulatorError)?.status == 400
        }
        #expect(SimulatorError(code: "UNKNOWN_LOOKING", "a 400 whatever its code says").status == 400)
    }
}

/// Loopback HTTP with URLSession (async, so no cooperative thread blocks).
func http(_ method: String, _ url: String, body: String? = nil) async throws -> (Int, Data) {
    var request = URLRequest(url: URL(string: url)!, timeoutInterval: 10)
    request.httpMethod = method
    if let body {
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    return try await withCheckedThrowingContinuation { continuation in
        URLSession.shared.dataTask(with: request) { data, response, error in
            if let http = response as? HTTPURLResponse {
                continuation.resume(returning: (http.statusCode, data ?? Data()))
            } else {
                continuation.resume(throwing: error ?? URLError(.badServerResponse))
            }
        }.resume()
    }
}

func startServer(_ router: Router) throws -> HTTPServer {
    var configuration = HTTPServer.Configuration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.threads = 1
    configuration.accessLog = nil
    configuration.errorLog = nil
    let server = HTTPServer(configuration: configuration, router: router)
    try server.start()
    return server
}

@Suite(.serialized) struct LoopbackTests {
    @Test func controlAPIAndURLSessionDeliveryOverLoopback() async throws {
        // A receiver standing in for the server: fails its first request, then accepts.
        let received = Mutex<[String]>([])
        var receiverRoutes = Router()
        receiverRoutes.post("/apple") { request in
            let body = try request.decodeJSON(ResponseBodyV2.self)
            let count = received.withLock {
                $0.append(body.signedPayload ?? "")
                return $0.count
            }
            return Response(status: count == 1 ? 503 : 200)
        }
        let receiver = try startServer(receiverRoutes)
        let ca = try SimulatorCA.ephemeral()
        let simulator = Simulator(
            catalog: testCatalog(), environment: .production, ca: ca, clock: VirtualClock(milliseconds: start),
            transport: HTTPNotificationTransport(url: URL(string: "http://127.0.0.1:\(receiver.port)/apple")!))
        let control = try startServer(ControlAPI.router(for: simulator))
        let base = "http://127.0.0.1:\(control.port)"
        do {
            let (customerStatus, _) = try await http("POST", base + "/actions", body: #"{"action": "customer", "customer": "alice"}"#)
            #expect(customerStatus == 200)
            let (status, data) = try await http(
                "POST", base + "/actions", body: #"{"action": "purchase", "customer": "alice", "product": "pro.monthly"}"#)
            #expect(status == 200)
            let answer = try JSONDecoder().decode(ControlAPI.ActionResponse.self, from: data)
            #expect(answer.notifications.map(\.notificationType) == ["SUBSCRIBED"])
            #expect(answer.notifications.first?.status == 1)

            let (unknown, _) = try await http("POST", base + "/actions", body: #"{"action": "purchase", "customer": "zed", "product": "coins"}"#)
            #expect(unknown == 404)
            let (bad, _) = try await http("POST", base + "/actions", body: #"{"action": "fly"}"#)
            #expect(bad == 400)

            let (advanceStatus, advanceData) = try await http("POST", base + "/clock/advance", body: #"{"by": "P1M"}"#)
            #expect(advanceStatus == 200)
            let advanced = try JSONDecoder().decode(ControlAPI.ActionResponse.self, from: advanceData)
            #expect(advanced.notifications.map(\.notificationType) == ["DID_RENEW"])
            #expect(advanced.now == ISODuration("P1M")!.added(to: start))

            let (_, historyData) = try await http("GET", base + "/notifications")
            let history = try JSONDecoder().decode([DeliveryRecord].self, from: historyData)
            #expect(history.count == 2)
            #expect(history[0].attempts.map(\.httpStatus) == [503, 200])
            #expect(history[0].attempts.map { $0.date - start } == [0, Milliseconds.hour])
            #expect(history[1].attempts.map(\.httpStatus) == [200])
            #expect(received.withLock { $0.count } == 3)

            let (_, stateData) = try await http("GET", base + "/state")
            let state = try JSONDecoder().decode(StateSnapshot.self, from: stateData)
            #expect(state.subscriptions.count == 1)
            #expect(state.transactions.count == 2)

            let (_, pem) = try await http("GET", base + "/ca/root.pem")
            #expect(String(decoding: pem, as: UTF8.self).hasPrefix("-----BEGIN CERTIFICATE-----"))
            let (_, clock) = try await http("GET", base + "/clock")
            #expect(String(decoding: clock, as: UTF8.self).contains("2026-02-15T00:00:00.000Z"))
        } catch {
            await control.shutdown()
            await receiver.shutdown()
            throw error
        }
        await control.shutdown()
        await receiver.shutdown()
    }
}

@Suite struct ConcurrencyTests {
    @Test func concurrentRequestsRunOneAtATime() async throws {
        let h = try await Harness()
        try await h.perform("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        let simulator = h.simulator
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await simulator.advance(by: ISODuration("P6M")!) }
            for _ in 0..<10 {
                group.addTask {
                    var request = ActionRequest("purchase")
                    request.customer = "bob"
                    request.product = "coins"
                    try await simulator.perform(request)
                }
            }
            try await group.waitForAll()
        }
        let records = await simulator.sender.history()
        let sent: Int = 1 + 6 + 10
        #expect(records.count == sent)
        #expect(records.filter { $0.notificationType == "DID_RENEW" }.count == 6)
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.signedDate <= $1.signedDate })
    }
}

@Suite struct V1NotificationTests {
    @Test func v1AppsGetLegacyBodiesOnTheV1Schedule() async throws {
        let receiver = InMemoryReceiver(failFirst: 1)
        let simulator = Simulator(
            catalog: testCatalog(), environment: .production, ca: try SimulatorCA.ephemeral(),
            clock: VirtualClock(milliseconds: start), transport: receiver, v1SharedSecret: "s3cret")
        func act(_ name: String, _ configure: (inout ActionRequest) -> Void = { _ in }) async throws {
            var request = ActionRequest(name)
            configure(&request)
            try await simulator.perform(request)
        }
        try await act("customer") { $0.customer = "alice" }
        try await act("purchase") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
        }
        try await act("purchase") {
            $0.customer = "alice"
            $0.product = "coins"
        }  // no V1 counterpart
        try await act("upgrade") {
            $0.customer = "alice"
            $0.product = "pro.monthly"
            $0.to = "pro.yearly"
        }
        try await act("autoRenew") {
            $0.customer = "alice"
            $0.product = "pro.yearly"
            $0.enabled = false
        }
        try await act("refund") {
            $0.customer = "alice"
            $0.product = "pro.yearly"
        }
        try await simulator.advance(by: ISODuration("P1D")!)
        let records = await simulator.sender.history()
        #expect(records.map(\.notificationType) == ["INITIAL_BUY", "CANCEL", "INTERACTIVE_RENEWAL", "DID_CHANGE_RENEWAL_STATUS", "CANCEL"])
        #expect(records.allSatisfy { $0.version == 1 && $0.signedPayload.isEmpty })
        #expect(records[0].attempts.map { ($0.date - start) / Milliseconds.hour } == [0, 6])
        let bodies = await receiver.bodies.map { try! JSONDecoder().decode(ResponseBodyV1.self, from: Data($0)) }
        #expect(bodies.count == 6)
        let initial = bodies[0]
        #expect(initial.password == "s3cret")
        #expect(initial.environment == .prod)
        #expect(initial.bid == bundleId)
        #expect(initial.isAutoRenewEnabled == true)
        #expect(initial.unifiedReceipt?.status == 0)
        #expect(initial.unifiedReceipt?.latestReceiptInfo?.first?.productId == "pro.monthly")
        #expect(initial.unifiedReceipt?.pendingRenewalInfo?.first?.autoRenewStatus == "1")
        let statusChange = bodies[3]
        #expect(statusChange.isAutoRenewEnabled == false)
        #expect(statusChange.autoRenewStatusChangeDate == start)
        let cancel = bodies[4]
        #expect(cancel.unifiedReceipt?.latestReceiptInfo?.first?.cancellationDate == start)
        #expect(cancel.unifiedReceipt?.latestReceiptInfo?.first?.productId == "pro.yearly")
        #expect(cancel.unifiedReceipt?.latestReceiptInfo?.last?.isUpgradedValue == true)
    }
}
