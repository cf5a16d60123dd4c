import AppStore
import AppStoreSimulator
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Storage
import Testing

/// Two servers on one PostgreSQL database, as two `entitled serve` processes are: each with its
/// own store (connection pool) and its own application (projection cache, encoded answers). An
/// answer one of them has served must never be served again by it after the other committed a
/// newer one: the rendered answer lives in the projection row, read through on every request.
@Suite struct ScaleOutTests {
    static var postgres: [String] {
        StoredBackend.all.contains(.postgres) ? [ProcessInfo.processInfo.environment["ENTITLED_TEST_POSTGRES"] ?? ""] : []
    }

    @Test(arguments: postgres)
    func aServerNeverServesAnAnswerOlderThanAnotherServersCommit(url: String) async throws {
        // A schema of its own, left behind like the other API tests' (the cluster is throwaway).
        let schema = "scale_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        var options = StoreConfiguration()
        options.postgresSchema = String(schema)
        options.postgresConnections = 2
        let configuration = try SignedAPITests.configuration(trusting: TestSigning.ca)
        let clock = VirtualClock(APIHarness.start)
        let storeA = try await openStore(url: url, configuration: options)
        let storeB = try await openStore(url: url, configuration: options)
        let (serverA, _) = try await startServer(configuration: configuration, store: storeA, clock: clock)
        let (serverB, _) = try await startServer(configuration: configuration, store: storeB, clock: clock)
        func get(_ port: Int) async throws -> Loopback.Reply {
            try await Loopback.send(port: port, "GET", "/v1/customers/u1", headers: ["Authorization": APIHarness.reader], body: [])
        }
        do {
            let token = try #require(try await get(serverB.port).json["appAccountToken"] as? String)
            var answers: [Loopback.Reply] = []
            for note in try StoredAPITests().steps(token: token) {
                // B has served (and cached) the previous answer; A commits a newer one.
                _ = try await get(serverB.port)
                let posted = try await Loopback.send(
                    port: serverA.port, "POST", "/v1/apple/notifications", body: Array(#"{"signedPayload":"\#(note)"}"#.utf8))
                #expect(posted.status == 200)
                var fromA = try await get(serverA.port).json
                let fromB = try await get(serverB.port)
                var comparable = fromB.json
                fromA.removeValue(forKey: "serverTime")
                comparable.removeValue(forKey: "serverTime")
                #expect(comparable as NSDictionary == fromA as NSDictionary)
                answers.append(fromB)
            }
            // The three notifications: expired, renewed, auto-renew off — each seen by B at once.
            let pro = answers.map { $0.entitlement("pro") }
            #expect(pro.map { $0?["status"] as? String } == ["expired", "active", "active"])
            #expect(pro.map { $0?["willRenew"] as? Bool } == [false, true, false])
        } catch {
            Issue.record(error)
        }
        await serverA.shutdown()
        await serverB.shutdown()
        await storeB.close()
        await storeA.close()
    }
}
