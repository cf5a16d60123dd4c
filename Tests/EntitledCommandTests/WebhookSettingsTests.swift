import EntitledConfig
import EntitledCrypto
import EntitledServer
import Foundation
import Testing

/// `webhooks[]` configuration, secrets and the Standard Webhooks signature.
@Suite struct WebhookSettingsTests {
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    let loader = ConfigurationLoader(environment: ["HOOK_SECRET": WebhookSettingsTests.secret])

    func parse(_ webhooks: String) throws -> Configuration {
        try loader.parse(Data(#"{"webhooks": \#(webhooks)}"#.utf8))
    }

    @Test func parsesTheDocumentedKeysWithDefaults() throws {
        let configuration = try parse(
            #"""
            [{"url": "https://api.example.com/hooks", "secret": "env:HOOK_SECRET"},
             {"url": "http://127.0.0.1:9000/h", "secret": "\#(Self.secret)", "events": ["subscription.renewed", "test"],
              "environments": ["Sandbox"], "timeoutSeconds": 3, "retryScheduleSeconds": [1, 2], "maxRetryHours": 1}]
            """#)
        let first = try #require(configuration.webhooks.first)
        #expect(first.url.absoluteString == "https://api.example.com/hooks")
        #expect(first.secretKey == Base64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        #expect(first.events == ["*"])
        #expect(first.environments == ["Production", "Sandbox"])
        #expect(first.timeoutSeconds == 10)
        #expect(first.retryScheduleSeconds == [30, 120, 600, 3600, 21600, 43200])
        #expect(first.maxRetryHours == 72)
        let second = configuration.webhooks[1]
        #expect(second.events == ["subscription.renewed", "test"])
        #expect(second.wants(type: "test", environment: nil))
        #expect(!second.wants(type: "subscription.renewed", environment: "Production"))
        #expect(second.wants(type: "subscription.renewed", environment: "Sandbox"))
        #expect(!second.wants(type: "subscription.started", environment: "Sandbox"))
        #expect(second.retryScheduleSeconds == [1, 2])
        #expect(second.maxRetryHours == 1)
    }

    @Test(arguments: [
        (#"[{"url": "ftp://x/h", "secret": "\#(secret)"}]"#, "webhooks[0].url"),
        (#"[{"url": "https://x/h", "secret": "whsec_c2hvcnQ="}]"#, "webhooks[0].secret"),
        (#"[{"url": "https://x/h", "secret": "plain-secret-of-some-length-0123456789"}]"#, "webhooks[0].secret"),
        (#"[{"url": "https://x/h", "secret": "\#(secret)", "events": ["subscription.bought"]}]"#, "webhooks[0].events[0]"),
        (#"[{"url": "https://x/h", "secret": "\#(secret)", "timeoutSeconds": 0}]"#, "webhooks[0].timeoutSeconds"),
        (#"[{"url": "https://x/h", "secret": "\#(secret)", "retryScheduleSeconds": []}]"#, "webhooks[0].retryScheduleSeconds"),
        (#"[{"url": "https://x/h", "secret": "\#(secret)", "maxRetryHours": 721}]"#, "webhooks[0].maxRetryHours"),
        (#"[{"url": "https://x/h", "secret": "\#(secret)", "retries": 3}]"#, "webhooks[0].retries"),
        (#"[{"url": "https://x/h", "secret": "\#(secret)"}, {"url": "https://x/h", "secret": "\#(secret)"}]"#, "webhooks[1].url"),
    ])
    func rejectsBadEndpoints(json: String, path: String) throws {
        #expect {
            try parse(json)
        } throws: { error in
            (error as? ConfigurationError)?.path == path && !"\(error)".contains("MfKQ9r8G")
        }
    }

    @Test func eventsSectionDefaultsAndKeys() throws {
        #expect(try loader.parse(Data("{}".utf8)).events == EventSettings(settleSeconds: 5, maxHoldSeconds: 300))
        let configuration = try loader.parse(Data(#"{"events": {"settleSeconds": 0, "maxHoldSeconds": 60}}"#.utf8))
        #expect(configuration.events == EventSettings(settleSeconds: 0, maxHoldSeconds: 60))
    }

    @Test(arguments: [
        (#"{"settleSeconds": -1}"#, "events.settleSeconds"),
        (#"{"settleSeconds": 301}"#, "events.settleSeconds"),
        (#"{"maxHoldSeconds": 0}"#, "events.maxHoldSeconds"),
        (#"{"settleSeconds": 30, "maxHoldSeconds": 10}"#, "events.maxHoldSeconds"),
        (#"{"settle": 3}"#, "events.settle"),
    ])
    func rejectsBadEventsSection(json: String, path: String) throws {
        #expect {
            try loader.parse(Data(#"{"events": \#(json)}"#.utf8))
        } throws: { error in
            (error as? ConfigurationError)?.path == path
        }
    }

    /// The Standard Webhooks reference vector (its libraries' shared test case).
    @Test func signatureMatchesTheStandardWebhooksVector() throws {
        let key = try #require(WebhookSecret.key(Self.secret))
        let signature = WebhookSignature.signature(
            key: key, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func generatedSecretsAreFreshAndLongEnough() throws {
        let a = WebhookSecret.generate()
        let b = WebhookSecret.generate()
        #expect(a != b)
        #expect(try #require(WebhookSecret.key(a)).count == 32)
    }
}
