import EntitledConfig
import HTTPServer
import Storage

/// Stores the configuration's `paywall` section in a database that never had an offering, each
/// document checked by the admin API's own rules. Run once at start; afterwards the stored
/// offerings are the admin API's.
/// - Throws: ``StartupError/configuration(_:)`` naming the document a rule refuses.
func seedPaywall(_ seed: PaywallSeed, configuration: Configuration, ledger: FactLedger, now: Int64) async throws(StartupError) {
    let products = Set(configuration.apps.flatMap(\.products).map(\.productId))
    var changes: [PaywallChange] = []
    do {
        for offering in seed.offerings {
            let document = try OfferingRules.offering(id: offering.id, body: offering.json, products: products)
            let text = String(decoding: try OfferingRules.sortedEncoder.encode(document), as: UTF8.self)
            changes.append(.putOffering(id: offering.id, document: text))
        }
        if let current = seed.currentOffering { changes.append(.setCurrent(offeringId: current)) }
        if let targeting = seed.targeting {
            let rules = try OfferingRules.targeting(body: targeting, offerings: Set(seed.offerings.map(\.id)))
            let text = String(decoding: try OfferingRules.sortedEncoder.encode(TargetingBody(rules: rules)), as: UTF8.self)
            changes.append(.setTargeting(document: text))
        }
    } catch let error as HTTPError {
        throw .configuration("paywall: \(error.code): \(error.detail ?? "refused")")
    } catch {
        throw .configuration("paywall: \(error)")
    }
    let seeded = changes
    do {
        _ = try await ledger.store.changePaywall(actor: "configuration", now: now) { before in before.version == 0 ? seeded : [] }
    } catch {
        throw .runtime("paywall: the offerings could not be stored: \(error)")
    }
}
