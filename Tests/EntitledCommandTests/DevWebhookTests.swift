@testable import EntitledTestSupport
import Foundation
import Testing

/// `entitled dev --webhooks FILE` delivers the simulator's events as `serve` does: the same
/// composition root builds the dispatcher, and dev runs it.
@Suite struct DevWebhookTests {
    @Test func devDeliversTheSeededCustomersEventsToAConfiguredEndpoint() async throws {
        let receiver = try WebhookReceiver(failing: 0)
        let folder = DevRestartTests.folder()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("hooks.json")
        try Data(#"{"webhooks": [{"url": "\#(receiver.url.absoluteString)", "secret": "\#(WebhookReceiver.secret)"}]}"#.utf8)
            .write(to: file)
        let dev = try await ServeProcess.start { DevRestartTests.devArguments($0, ["--webhooks", file.path]) }
        defer { dev.terminate() }
        let started = { receiver.deliveries.filter { String(decoding: $0.body, as: UTF8.self).contains(#""type":"subscription.started""#) } }
        #expect(try await eventually { !started().isEmpty })
        let first = try #require(started().first)
        #expect(first.id.hasPrefix("evt_") && first.signature.hasPrefix("v1,"))
        await receiver.shutdown()
    }
}
