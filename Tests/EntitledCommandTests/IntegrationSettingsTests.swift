import EntitledConfig
import Foundation
import Testing

/// `integrations[]` configuration: defaults, the endpoint identity, and errors with their paths.
@Suite struct IntegrationSettingsTests {
    static let slackURL = "https://hooks.slack.com/services/T0001/B0001/abcdefSECRET"
    let loader = ConfigurationLoader(environment: [
        "SEGMENT_KEY": "seg-write-key", "AMPLITUDE_KEY": "amp-api-key", "MIXPANEL_TOKEN": "mp-token", "POSTHOG_KEY": "phc_key",
        "SLACK_URL": IntegrationSettingsTests.slackURL,
    ])

    func parse(_ integrations: String) throws -> Configuration {
        try loader.parse(Data(#"{"integrations": \#(integrations)}"#.utf8))
    }

    @Test func parsesEachVendorWithItsPublicEndpointByDefault() throws {
        let configuration = try parse(
            #"""
            [{"type": "segment", "key": "env:SEGMENT_KEY"},
             {"type": "amplitude", "key": "env:AMPLITUDE_KEY", "endpoint": "https://api.eu.amplitude.com/2/httpapi"},
             {"type": "mixpanel", "key": "env:MIXPANEL_TOKEN", "events": ["subscription.renewed"], "environments": ["Sandbox"]},
             {"type": "posthog", "key": "env:POSTHOG_KEY"},
             {"type": "slack", "key": "env:SLACK_URL", "events": ["subscription.started"]}]
            """#)
        let all = configuration.integrations
        #expect(all.map(\.kind) == [.segment, .amplitude, .mixpanel, .posthog, .slack])
        #expect(all.map(\.url.absoluteString) == [
            "https://api.segment.io/v1/track", "https://api.eu.amplitude.com/2/httpapi", "https://api.mixpanel.com/import?strict=1",
            "https://us.i.posthog.com/capture/", Self.slackURL,
        ])
        #expect(all.map(\.key) == ["seg-write-key", "amp-api-key", "mp-token", "phc_key", Self.slackURL])
        #expect(all[0].events == ["*"] && all[0].environments == ["Production"])
        #expect(all[0].wants(type: "subscription.renewed", environment: "Production"))
        #expect(!all[0].wants(type: "subscription.renewed", environment: "Sandbox"))
        #expect(all[2].wants(type: "subscription.renewed", environment: "Sandbox"))
        #expect(!all[2].wants(type: "subscription.started", environment: "Sandbox"))
        // The identity never carries the key, nor the secret last part of a Slack URL.
        #expect(all.map(\.identity) == [
            "integration:segment:api.segment.io", "integration:amplitude:api.eu.amplitude.com", "integration:mixpanel:api.mixpanel.com",
            "integration:posthog:us.i.posthog.com", "integration:slack:hooks.slack.com/services/T0001/B0001",
        ])
    }

    @Test func everyBadKeyIsReportedWithItsPath() throws {
        #expect {
            try parse(
                #"""
                [{"type": "braze", "key": "env:SEGMENT_KEY"},
                 {"type": "segment", "key": "literal-key-in-the-file"},
                 {"type": "amplitude", "key": "env:AMPLITUDE_KEY", "endpoint": "ftp://example.com/x"},
                 {"type": "slack", "key": "env:SLACK_URL", "endpoint": "https://example.com"},
                 {"type": "mixpanel", "key": "env:MIXPANEL_TOKEN", "events": ["subscription.renewed", "made.up"], "extra": 1},
                 {"type": "posthog", "key": "env:NOT_SET"},
                 {"type": "slack", "key": "env:SEGMENT_KEY"},
                 {"key": "env:SEGMENT_KEY"}]
                """#)
        } throws: { error in
            let all = (error as? ConfigurationError)?.all ?? []
            let paths = Set(all.map(\.path))
            let unset = all.first { $0.path == "integrations[5].key" }?.message ?? ""
            return paths == [
                "integrations[0].type", "integrations[1].key", "integrations[2].endpoint", "integrations[3].endpoint",
                "integrations[4].events[1]", "integrations[4].extra", "integrations[5].key", "integrations[6].key", "integrations[7].type",
            ] && unset.contains("NOT_SET") && !all.contains { $0.message.contains("seg-write-key") }
        }
    }

    @Test func twoIntegrationsOfOneVendorToOneEndpointAreRefused() throws {
        #expect {
            try parse(#"[{"type": "segment", "key": "env:SEGMENT_KEY"}, {"type": "segment", "key": "env:AMPLITUDE_KEY"}]"#)
        } throws: { error in
            (error as? ConfigurationError)?.all.map(\.path) == ["integrations[1]"]
        }
        // Another vendor, or another endpoint of the same vendor, is a different integration.
        let configuration = try parse(
            #"""
            [{"type": "segment", "key": "env:SEGMENT_KEY"},
             {"type": "segment", "key": "env:AMPLITUDE_KEY", "endpoint": "https://eu1.api.segmentapis.com/v1/track"}]
            """#)
        #expect(configuration.integrations.count == 2)
    }

    @Test func printingAnIntegrationNeverShowsItsKey() throws {
        let configuration = try parse(#"[{"type": "segment", "key": "env:SEGMENT_KEY"}, {"type": "slack", "key": "env:SLACK_URL"}]"#)
        for integration in configuration.integrations {
            for text in ["\(integration)", String(reflecting: integration), "\([integration])"] {
                #expect(!text.contains("seg-write-key") && !text.contains("abcdefSECRET"), "\(text)")
                #expect(text.contains(integration.identity))
            }
        }
    }

    @Test func commandsWithoutSecretsLeaveIntegrationsOut() throws {
        let configuration = try ConfigurationLoader(environment: [:], resolvesSecrets: false)
            .parse(Data(#"{"integrations": [{"type": "segment", "key": "env:SEGMENT_KEY"}]}"#.utf8))
        #expect(configuration.integrations.isEmpty)
    }
}
