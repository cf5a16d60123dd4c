import AppStore
import EntitledConfig
import EntitledCrypto
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPClient
import Storage

/// The Google Play line of `bench api`: Pub/Sub pushes through the whole path, as the App Store
/// line sends signed notifications — each push's OIDC token verified (RS256, against the fake
/// Google's JWKS), the purchase fetched from the fake's Developer API over loopback (with the
/// service account's cached access token), and the facts committed durably (acknowledgement, a
/// job after the commit, is off). One new subscription per existing customer, linked by its
/// `obfuscatedExternalAccountId`, whose answer it recomputes.
extension APIBenchmark {
    static let playPackageName = "com.example.bench.android"
    static let playAudience = "https://bench.entitled.invalid/v1/google/notifications"
    static let playPushAccount = "play-push@bench.iam.gserviceaccount.com"

    /// The fake Google selling one subscription per customer, a configuration whose Play app
    /// trusts it, and the pushes (one body a line in `bodiesFile`) with their bearer token.
    struct PlayWorkload: Sendable {
        let fake: FakeGoogleServer
        let configuration: Configuration
        let bodiesFile: URL
        /// `Bearer <token>`: one token for every push (valid an hour), as a push subscription
        /// reuses its token; each push is still verified.
        let authorization: String
    }

    /// Buys `count` subscriptions at a fake Google on the system clock (customer `n`'s
    /// `appAccountToken` on purchase `n`) and writes their pushes.
    static func playWorkload(base: Configuration, count: Int, folder: URL) async throws -> PlayWorkload {
        let google = try FakeGoogle(
            // Priced as Google prices every subscription: an order without a total is no price,
            // and the pricer would log each one as ignored.
            products: [
                FakePlayProduct(
                    productId: "pro.monthly", kind: .subscription(basePlans: ["monthly"], periodSeconds: 30 * 86_400),
                    price: Money(currencyCode: "USD", units: "9", nanos: 990_000_000))
            ],
            clock: SystemClock())
        let fake = try FakeGoogleServer(google: google)
        do {
            let keyFile = folder.appendingPathComponent("play-service-account.json")
            try Data(try fake.serviceAccountKeyFile()).write(to: keyFile)
            var configuration = base
            configuration.playApps = [
                PlayApp(
                    packageName: playPackageName,
                    googlePlay: GooglePlaySettings(
                        serviceAccountKeyFile: keyFile.path, apiBaseURL: fake.baseURL,
                        pubsub: PubSubSettings(audience: playAudience, serviceAccountEmail: playPushAccount, certsURL: fake.certsURL),
                        // Acknowledgement is a job run after the commit, on the job runner's schedule, not the push's path.
                        acknowledge: false),
                    products: [PlayProduct(productId: "pro.monthly", type: .autoRenewable, subscriptionGroup: "pro", entitlements: ["pro"])])
            ]
            for index in 0..<count {
                try google.buySubscription(
                    packageName: playPackageName, productId: "pro.monthly", obfuscatedAccountId: _StorageBenchmark.appAccountToken(index))
            }
            // The pusher only signs the token here (its transport is never used): wrk sends.
            let pusher = FakePubSubPusher(
                google: google, endpoint: fake.baseURL, identity: .init(audience: playAudience, serviceAccountEmail: playPushAccount),
                transport: CurlHTTP())
            let publishTime = GoogleTimestamp(milliseconds: google.clock.nowMilliseconds())
            let lines = google.takeNotifications().enumerated().map { index, notification in
                let message = PubSubMessage(
                    data: Base64.encode(PlayJSON.encode(notification)), messageId: "bench-\(index)", publishTime: publishTime, attributes: [:])
                return String(decoding: PlayJSON.encode(PubSubPushEnvelope(message: message, subscription: pusher.subscription)), as: UTF8.self)
            }
            let bodiesFile = folder.appendingPathComponent("play-bodies.jsonl")
            try Data(lines.joined(separator: "\n").utf8).write(to: bodiesFile)
            return PlayWorkload(fake: fake, configuration: configuration, bodiesFile: bodiesFile, authorization: "Bearer " + (try pusher.token()))
        } catch {
            await fake.shutdown()
            throw error
        }
    }
}
