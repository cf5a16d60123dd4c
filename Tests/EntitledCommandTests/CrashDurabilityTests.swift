import AppStore
import AppStoreTesting
@testable import EntitledTestSupport
import Foundation
import Synchronization
import Testing

/// A 200 to Apple means committed: kill -9 the server in the middle of a burst, restart it on the
/// same database, and every notification that was acknowledged must already be there (a re-post
/// answers "duplicate"), and the projections must equal a rebuild from the ledger.
@Suite struct CrashDurabilityTests {
    @Test func everyAcknowledgedNotificationSurvivesKillDashNine() async throws {
        let ca = try TestCertificateAuthority()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-crash-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let rootFile = folder.appendingPathComponent("root.der")
        try Data(ca.rootDER).write(to: rootFile)
        let configFile = folder.appendingPathComponent("entitled.json")
        try Data(
            """
            {"apps": [{"bundleId": "\(APIHarness.bundleId)", "appAppleId": 1234, "environments": ["Production"],
                       "appleRootCertificates": ["\(rootFile.path)"],
                       "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro",
                                     "level": 1, "entitlements": ["pro"]}]}],
             "http": {"accessLog": false}}
            """.utf8
        ).write(to: configFile)

        // Signed ahead of time so the burst is only HTTP, verification and commits.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let notifications = try (0..<1500).map { i -> (uuid: String, body: [UInt8]) in
            let uuid = "crash-\(i)"
            let transaction = Apple.transaction(
                otid: "o\(i)", tid: "t\(i)", purchase: now - 86_400_000, expires: now + 30 * 86_400_000)
            let payload = ResponseBodyV2DecodedPayload(
                notificationType: .subscribed, subtype: .initialBuy, notificationUUID: uuid,
                data: NotificationData(
                    environment: .production, appAppleId: 1234, bundleId: APIHarness.bundleId, bundleVersion: "1",
                    signedTransactionInfo: try ca.signer.sign(transaction)),
                version: "2.0", signedDate: now - 86_400_000)
            return (uuid, Array(#"{"signedPayload":"\#(try ca.signer.sign(payload))"}"#.utf8))
        }

        let first = try await ServeProcess.start(extraArguments: ["--config", configFile.path], folder: folder)
        let burst = Burst()
        let port = first.port
        // Eight posters; the server is killed once a third of the burst is acknowledged.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await blocking {
                        while true {
                            let index = burst.next.add(1, ordering: .relaxed).oldValue
                            guard index < notifications.count else { return }
                            let item = notifications[index]
                            guard
                                let reply = try? Loopback.exchange(
                                    port: port, "POST", "/v1/apple/notifications", headers: [:], body: item.body)
                            else { continue }
                            if reply.status == 200 { burst.acknowledged.withLock { $0.append(item.uuid) } }
                        }
                    }
                }
            }
            group.addTask {
                // Watch on a thread of its own, so a busy pool cannot delay the kill past the burst.
                let pid = first.process.processIdentifier
                try await blocking {
                    // Polls (a deadline, not a fixed sleep): the kill must land mid-burst, soon after the 100th answer.
                    let deadline = ContinuousClock.now + .seconds(60)
                    while burst.acknowledged.withLock({ $0.count }) < 100 && ContinuousClock.now < deadline { usleep(500) }
                    kill(pid, SIGKILL)
                }
            }
            try await group.waitForAll()
        }
        let survivors = burst.acknowledged.withLock { $0 }
        #expect(survivors.count >= 100)
        #expect(survivors.count < notifications.count, "the kill should land mid-burst")
        first.terminate()

        let second = try await ServeProcess.start(extraArguments: ["--config", configFile.path], folder: folder)
        defer { second.terminate() }
        let byUUID = Dictionary(uniqueKeysWithValues: notifications.map { ($0.uuid, $0.body) })
        let statuses = try await blocking { [port = second.port] in
            try survivors.map { uuid in
                try Loopback.exchange(port: port, "POST", "/v1/apple/notifications", headers: [:], body: byUUID[uuid]!)
                    .json["status"] as? String
            }
        }
        #expect(statuses.allSatisfy { $0 == "duplicate" }, "acknowledged but lost: \(zip(survivors, statuses).filter { $0.1 != "duplicate" }.map(\.0))")

        second.terminate()
        let rebuild = try await CLI.run([
            "rebuild", "--config", configFile.path, "--database", "sqlite:\(folder.path)/nested/entitled.sqlite",
        ])
        #expect(rebuild.status == 0)
        #expect(rebuild.stdout.contains("differences: 0"), "\(rebuild.stdout)")
    }
}

/// What the posters share: the next notification to send and the acknowledged UUIDs.
final class Burst: Sendable {
    let next = Atomic<Int>(0)
    let acknowledged = Mutex<[String]>([])
}
