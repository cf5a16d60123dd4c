import AppStore
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Storage
import Testing

/// The configuration's `paywall` section: parsed with its paths, stored once in a database that
/// never had an offering, each document checked by the admin API's rules.
@Suite struct PaywallSeedTests {
    static let loader = ConfigurationLoader(environment: [:])

    /// The harness's apps with `paywall` set to `section`.
    static func configuration(_ section: String) throws -> Configuration {
        var configuration = try loader.parse(Data(#"{"paywall": \#(section)}"#.utf8))
        let harness = OfferingAPITests.configuration()
        configuration.apps = harness.apps
        configuration.apiKeys = harness.apiKeys
        return configuration
    }

    static let section = #"""
        {"offerings": [
           {"id": "default", "metadata": {"title": "Pro"}, "packages": [{"id": "$monthly", "products": {"appStore": "pro.monthly"}}]},
           {"id": "fr", "packages": [{"id": "$annual", "products": {"appStore": "pro.yearly"}}]}],
         "currentOffering": "default",
         "targeting": [{"id": "france", "when": {"storefronts": ["FRA"]}, "offeringId": "fr"}]}
        """#

    @Test(arguments: [
        (#"{"offerings": [{"packages": []}]}"#, "paywall.offerings[0].id"),
        (#"{"offerings": [{"id": "a"}, {"id": "a"}]}"#, "paywall.offerings[1].id"),
        (#"{"offerings": [], "currentOffering": "b"}"#, "paywall.currentOffering"),
        (#"{"targeting": {}}"#, "paywall.targeting"),
        (#"{"offering": []}"#, "paywall.offering"),
    ])
    func badSectionsNameTheirKey(section: String, path: String) throws {
        #expect(throws: ConfigurationError.self) { try Self.loader.parse(Data(#"{"paywall": \#(section)}"#.utf8)) }
        do {
            _ = try Self.loader.parse(Data(#"{"paywall": \#(section)}"#.utf8))
        } catch {
            #expect(error.all.map(\.path).contains(path), "\(error)")
        }
    }

    @Test(arguments: StoredBackend.all)
    func aNewDatabaseIsSeededOnceAndKeepsItsOwnChangesAfterwards(backend: StoredBackend) async throws {
        let store = try await backend.open()
        let clock = VirtualClock(APIHarness.start)
        let first = try await buildApplication(configuration: try Self.configuration(Self.section), clock: clock, store: store)
        let seeded = try await first.ledger.paywall()
        #expect(seeded.version == 4)
        #expect(seeded.offerings.map(\.id) == ["default", "fr"])
        #expect(seeded.current == "default")
        #expect(seeded.targeting?.contains("france") == true)
        // Changed through the API's store since: a restart with another section changes nothing.
        _ = try await store.changePaywall(actor: "admin", now: APIHarness.start) { _ in [.setCurrent(offeringId: "fr")] }
        let other = #"{"offerings": [{"id": "x", "packages": [{"id": "$lifetime", "products": {"appStore": "lifetime"}}]}]}"#
        let second = try await buildApplication(configuration: try Self.configuration(other), clock: clock, store: store)
        let kept = try await second.ledger.paywall()
        #expect(kept.version == 5)
        #expect(kept.current == "fr")
        #expect(kept.offerings.map(\.id) == ["default", "fr"])
        await store.close()
    }

    @Test func anOfferingTheAPIWouldRefuseStopsTheStart() async throws {
        let store = try await StoredBackend.sqlite.open()
        let bad = #"{"offerings": [{"id": "x", "packages": [{"id": "$monthly", "products": {"appStore": "no.such.product"}}]}]}"#
        do {
            _ = try await buildApplication(configuration: try Self.configuration(bad), clock: VirtualClock(APIHarness.start), store: store)
            Issue.record("the start went on")
        } catch {
            #expect(String(describing: error).contains("INVALID_OFFERING"))
            #expect(String(describing: error).contains("no.such.product"))
        }
        #expect(try await store.paywallVersion() == 0)
        await store.close()
    }
}
