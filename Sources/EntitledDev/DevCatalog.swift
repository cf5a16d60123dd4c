import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledServer
import Foundation

/// Where `entitled dev` takes its apps and products from: the demo catalog, your configuration
/// file (`--config`), an Xcode StoreKit configuration file (`--storekit`), or both.
enum DevCatalog {
    /// The bundle id a `.storekit` file is sold under when neither `--bundle-id` nor a
    /// configuration names one (the demo catalog's).
    static let defaultBundleId = "com.example.app"

    /// The environments every app accepts and grants in this mode: the simulator's Sandbox, and
    /// Xcode, which StoreKit testing in Xcode signs with a local key (accepted unverified, as
    /// Apple's libraries do).
    static let localEnvironments = ["Sandbox", "Xcode"]

    /// The simulator's catalog: the `.storekit` file's products when one is given (sold under
    /// `bundleId`, else the configuration's first app's), else the configuration's first app's
    /// products, else the demo catalog.
    static func simulatorCatalog(options: DevOptions, file: Configuration?) throws(StartupError) -> Catalog {
        if let storeKit = options.storeKit {
            let bundleId = options.bundleId ?? file?.apps.first?.bundleId ?? defaultBundleId
            let data = try SimulateRunner.read(storeKit)
            do {
                return try Catalog.load(storeKit: data, bundleId: bundleId)
            } catch let error as SimulatorError {
                throw .configuration("\(storeKit): \(error.message)")
            } catch {
                throw .configuration("\(storeKit): not an Xcode StoreKit configuration file (\(error))")
            }
        }
        guard let file else { return .demo }
        guard let app = file.apps.first(where: { options.bundleId == nil || $0.bundleId == options.bundleId }) else {
            throw .configuration("\(options.configurationFile ?? ""): no app with bundleId \(options.bundleId ?? "")")
        }
        return Catalog(
            bundleId: app.bundleId, appAppleId: app.appAppleId ?? 1_234_567_890, gracePeriodDays: app.gracePeriodDays,
            products: app.products.map(simulated(from:)))
    }

    /// The simulator's product for a configured one. A configuration has no prices or renewal
    /// periods: auto-renewables renew monthly and everything is free (a `.storekit` file has both).
    static func simulated(from product: Product) -> SimulatedProduct {
        switch product.type {
        case .autoRenewable:
            SimulatedProduct(
                id: product.productId, kind: .autoRenewable, group: product.subscriptionGroup, level: product.level,
                period: ISODuration("P1M"), price: 0)
        case .nonConsumable: SimulatedProduct(id: product.productId, kind: .nonConsumable, price: 0)
        case .consumable: SimulatedProduct(id: product.productId, kind: .consumable, price: 0)
        case .nonRenewing:
            SimulatedProduct(
                id: product.productId, kind: .nonRenewing, period: product.duration.flatMap(ISODuration.init) ?? ISODuration("P1M"),
                price: 0)
        }
    }

    /// The apps the server runs with: the configuration's (or none), every one accepting and
    /// granting the local environments; the catalog's app trusts the simulator's root (`rootFile`)
    /// and gains the catalog's products it does not configure (granting as
    /// ``DevEnvironment/product(from:)`` says). Returns the apps and the catalog app's index.
    static func apps(_ configured: [App], catalog: Catalog, rootFile: String) -> (apps: [App], simulated: Int) {
        var apps = configured
        for index in apps.indices {
            for environment in localEnvironments {
                if !apps[index].environments.contains(environment) { apps[index].environments.append(environment) }
                if !apps[index].grantEnvironments.contains(environment) { apps[index].grantEnvironments.append(environment) }
            }
        }
        let index: Int
        if let found = apps.firstIndex(where: { $0.bundleId == catalog.bundleId }) {
            index = found
            // Only the simulator signs here: the app trusts its root (Xcode's payloads are not verified).
            apps[index].appleRootCertificates = [rootFile]
            let known = Set(apps[index].products.map(\.productId))
            apps[index].products += catalog.products.filter { !known.contains($0.id) }.map(DevEnvironment.product(from:))
        } else {
            index = apps.count
            apps.append(
                App(
                    bundleId: catalog.bundleId, appAppleId: catalog.appAppleId, environments: ["Sandbox", "Production", "Xcode"],
                    appleRootCertificates: [rootFile], gracePeriodDays: catalog.gracePeriodDays ?? 16,
                    products: catalog.products.map(DevEnvironment.product(from:)),
                    grantEnvironments: ["Production", "Sandbox", "Xcode"]))
        }
        return (apps, index)
    }
}
