import AppStoreServerAPI
import EntitledConfig
import HTTPServer

/// The console's read-only view of Apple's retention messaging setup (`admin` or `console` scope):
/// `GET /v1/console/retention`, read live from the Retention Messaging API. Changes go through
/// `entitled retention`.
struct RetentionSetupRoutes {
    let apps: [App]
    let clients: [String: AppStoreServerAPIClient]
    let gate: AccessGate

    func register(on router: inout Router) {
        let routes = self
        router.get("/v1/console/retention") { request in
            try routes.gate.require(request, scope: .console)
            return try .json(RetentionBody(apps: await RetentionSetup.read(apps: routes.apps, clients: routes.clients)))
        }
    }

    struct RetentionBody: Encodable {
        var apps: [RetentionSetup]
    }
}
