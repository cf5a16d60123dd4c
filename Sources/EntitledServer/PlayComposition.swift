import AppStore
import EntitledConfig
import Foundation
import GooglePlay
import HTTPClient

/// The clients of each configured Google Play app: its service account's access tokens and
/// Developer API client, and the verifier of its Pub/Sub pushes (Google's keys from `certsURL`).
/// Every call goes through `outbound` (``CurlHTTP`` when nil).
func buildPlayClients(
    configuration: Configuration, clock: any EpochClock, outbound: (any OutboundHTTP)?, sleeper: any Sleeper
) throws(StartupError) -> [PlayClients] {
    guard !configuration.playApps.isEmpty else { return [] }
    let transport = outbound ?? CurlHTTP()
    var keySets: [String: GoogleKeySet] = [:]
    return try configuration.playApps.map { (app) throws(StartupError) -> PlayClients in
        let settings = app.googlePlay
        let account: ServiceAccountKey
        do {
            account = try ServiceAccountKey(contentsOf: settings.serviceAccountKeyFile)
        } catch {
            throw .configuration("apps[\(app.packageName)].googlePlay.serviceAccountKeyFile: \((error as? GooglePlayError)?.message ?? "unreadable")")
        }
        let tokens = AccessTokenProvider(account: account, transport: transport, clock: clock)
        let api = DeveloperAPIClient(
            settings: DeveloperAPIClient.Settings(baseURL: settings.apiBaseURL), tokens: tokens, transport: transport, sleeper: sleeper)
        // Apps pushing through subscriptions of one Google project share Google's key set.
        let certs = settings.pubsub.certsURL.absoluteString
        let keys = keySets[certs] ?? GoogleKeySet(certsURL: settings.pubsub.certsURL, transport: transport, clock: clock)
        keySets[certs] = keys
        let verifier = PushVerifier(
            settings: PushVerifier.Settings(audience: settings.pubsub.audience, serviceAccountEmail: settings.pubsub.serviceAccountEmail),
            keys: keys, clock: clock)
        return PlayClients(app: app, api: api, pushVerifier: verifier)
    }
}

/// The voided-purchases poll of each Google Play app (`googlePlay.voidedPurchasesPollMinutes`),
/// storing through `play`.
func buildPlayVoidedPolls(play: PlayIngest?, clock: any EpochClock) -> [PlayVoidedPoll] {
    guard let play else { return [] }
    let owner = UUID().uuidString
    return play.apps.values.sorted { $0.app.packageName < $1.app.packageName }.map {
        PlayVoidedPoll(
            packageName: $0.app.packageName, everyMinutes: $0.app.googlePlay.voidedPurchasesPollMinutes, play: play,
            state: play.ledger.store, clock: clock, owner: owner)
    }
}
