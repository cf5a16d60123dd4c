import AppStore
import AppStoreSimulator
import EntitledConfig
import EntitledServer
import Entitlements
import Foundation
import HTTPServer

/// The dashboard's Google Play routes:
///
/// - `GET /dev/play` — the simulated Play app, its products, and every purchase the dashboard made
///   with the fake Google's current state of it;
/// - `POST /dev/play/actions` — one ``DevPlay/ActionRequest``; answers the pushes it led to.
///
/// Both answer 404 `NO_PLAY_APP` when `entitled dev` simulates no Play app (your configuration has
/// App Store apps only).
extension Dashboard {
    struct PlayBody: Encodable {
        var packageName: String
        var products: [PlayProductBody]
        var purchases: [PlayPurchaseBody]
        var pushes: [String: Int]
    }

    struct PlayProductBody: Encodable {
        var id: String
        var type: String
        var subscriptionGroup: String?
        var entitlements: [String]
    }

    struct PlayPurchaseBody: Encodable {
        var customer: String
        var productId: String
        var purchaseToken: String
        /// The Developer API's state (`SUBSCRIPTION_STATE_…`, or `PURCHASED`, `CONSUMED`, `CANCELED`).
        var state: String?
        var expiresAt: String?
        var autoRenewing: Bool?
        var acknowledged: Bool?
        var linkedPurchaseToken: String?
    }

    struct PlayActionBody: Encodable {
        var now: Int64
        var serverTime: String
        /// The pushes the action led to, oldest first (named `notifications` as `/dev/actions`' are).
        var notifications: [DevPlay.Push]
    }

    typealias DevRoute = (HTTPMethod, String, @escaping @Sendable (Request, DevDriver) async throws -> Response) -> Void

    static func registerPlay(_ route: DevRoute) {
        route(.get, "/dev/play") { _, driver in
            guard let play = driver.play else { throw noPlayApp }
            return try .json(playBody(play))
        }
        route(.post, "/dev/play/actions") { request, driver in
            guard driver.play != nil else { throw noPlayApp }
            let action = try request.decodeJSON(DevPlay.ActionRequest.self)
            let pushes = try await driver.act(play: action)
            let now = driver.simulator.now
            return try .json(PlayActionBody(now: now, serverTime: ISO8601.format(milliseconds: now), notifications: pushes))
        }
    }

    static let noPlayApp = HTTPError(
        status: 404, code: "NO_PLAY_APP", detail: "entitled dev simulates no Google Play app: your configuration has App Store apps only")

    static func playBody(_ play: DevPlay) -> PlayBody {
        let counts = play.counts
        return PlayBody(
            packageName: play.app.packageName,
            products: play.app.products.map {
                PlayProductBody(id: $0.productId, type: $0.type.rawValue, subscriptionGroup: $0.subscriptionGroup, entitlements: $0.entitlements)
            },
            purchases: play.purchases().map { purchase, summary in
                PlayPurchaseBody(
                    customer: purchase.customer, productId: purchase.productId, purchaseToken: purchase.token, state: summary?.state,
                    expiresAt: summary?.expiresAt.map { ISO8601.format(milliseconds: $0) }, autoRenewing: summary?.autoRenewing,
                    acknowledged: summary?.acknowledged, linkedPurchaseToken: summary?.linkedPurchaseToken)
            },
            pushes: ["sent": counts.sent, "accepted": counts.accepted, "failed": counts.sent - counts.accepted])
    }
}
