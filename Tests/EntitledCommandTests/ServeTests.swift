@testable import EntitledTestSupport
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

@Suite struct ServeTests {
    @Test func servesHealthAndReadinessThenStopsCleanlyOnSIGTERM() async throws {
        let server = try await ServeProcess.start()
        defer { server.terminate() }
        let health = try await get("http://127.0.0.1:\(server.port)/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok"}"#)
        let ready = try await get("http://127.0.0.1:\(server.port)/readyz")
        #expect(ready.status == 200)
        // The database folder is created on first start.
        #expect(FileManager.default.fileExists(atPath: server.folder.appendingPathComponent("nested").path))

        kill(server.process.processIdentifier, SIGTERM)
        let (status, output) = try await blocking {
            server.process.waitUntilExit()
            return (server.process.terminationStatus, server.remainingOutput())
        }
        #expect(status == 0)
        #expect(output.contains(#""event":"stopped""#))
    }

    /// A server that ends before it listens fails the test with its exit status and what it
    /// wrote to standard error, not with an error that names neither.
    @Test func aServerThatEndsBeforeListeningSaysWhy() async throws {
        let error = await #expect(throws: ServeStartFailure.self) {
            _ = try await ServeProcess.start(extraArguments: ["--no-such-option"])
        }
        #expect(error?.status == 2)
        #expect(error?.standardError.contains("unknown option --no-such-option") == true)
        #expect(error?.description.contains("unknown option --no-such-option") == true)
    }

    @Test func sigintAlsoStopsWithStatusZero() async throws {
        let server = try await ServeProcess.start()
        defer { server.terminate() }
        kill(server.process.processIdentifier, SIGINT)
        let status = try await blocking {
            server.process.waitUntilExit()
            return server.process.terminationStatus
        }
        #expect(status == 0)
    }

    func get(_ url: String) async throws -> (status: Int, body: String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}

@Suite struct DevCommandTests {
    @Test func devServesSeededCustomersOnTheVirtualClockAndStopsOnSIGTERM() async throws {
        let dev = try await ServeProcess.start { folder in
            ["dev", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--data", folder.path, "--day-every", "0.2"]
        }
        defer { dev.terminate() }
        // The seed runs before the "listening" line; wait (bounded) for the clock to move a few virtual days.
        let moved = try await eventually {
            let clock = try await Loopback.send(
                port: dev.port, "GET", "/dev/clock", headers: ["Authorization": "Bearer dev-key-entitled-local-only"])
            return ((clock.json["day"] as? NSNumber)?.intValue ?? 0) >= 3
        }
        #expect(moved)
        let page = try await Loopback.send(
            port: dev.port, "GET", "/dev/customers", headers: ["Authorization": "Bearer dev-key-entitled-local-only"])
        #expect(page.status == 200)
        let customers = page.json["customers"] as? [[String: Any]] ?? []
        #expect(Set(customers.compactMap { $0["appUserId"] as? String }) == ["alice", "bob", "carol", "dave", "erin", "frank", "gina"])
        #expect(customers.contains { $0["state"] as? String == "active" })
        let dashboard = try await Loopback.send(port: dev.port, "GET", "/")
        #expect(dashboard.headers["content-type"]?.hasPrefix("text/html") == true)
        // The API answers with the printed development key; the simulator's notifications were verified.
        let alice = try await Loopback.send(
            port: dev.port, "GET", "/v1/customers/alice?environment=Sandbox",
            headers: ["Authorization": "Bearer dev-key-entitled-local-only"])
        #expect(alice.entitlement("pro")?["productId"] as? String == "pro.monthly")

        kill(dev.process.processIdentifier, SIGTERM)
        let status = try await blocking {
            dev.process.waitUntilExit()
            return dev.process.terminationStatus
        }
        #expect(status == 0)
    }
}
