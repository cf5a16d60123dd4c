import AppStore
import EntitledConfig
import HTTPServer

/// How fast offer signatures are handed out (`offerSigning`): a token bucket per customer and one
/// per signing key, so that neither one customer's token nor many customers together can make the
/// server sign (and log) without bound. Time comes from the injected clock.
final class OfferSigningLimiter: Sendable {
    private let customers: TokenBuckets<String>
    private let keys: TokenBuckets<String>
    private let clock: any EpochClock

    init(_ settings: OfferSigningSettings, clock: any EpochClock) {
        customers = TokenBuckets(
            capacity: Double(settings.customerBurst), refillPerSecond: Double(settings.customerPerMinute) / 60, maxKeys: 100_000)
        keys = TokenBuckets(capacity: Double(settings.keyBurst), refillPerSecond: Double(settings.keyPerSecond), maxKeys: 1_000)
        self.clock = clock
    }

    /// Spends a token of the customer's bucket and of the signing key's, or throws 429
    /// `OFFER_RATE_LIMITED` with `Retry-After` (spending none) when either is empty.
    func admit(appUserId: String, signingKey: String) throws(HTTPError) {
        let now = clock.nowMilliseconds()
        let waits = [customers.secondsUntilToken(appUserId, now: now), keys.secondsUntilToken(signingKey, now: now)].compactMap { $0 }
        if let wait = waits.max() {
            throw HTTPError(
                .offerRateLimited, "too many offer signatures for this customer or signing key; retry later",
                headers: ["Retry-After": String(wait)])
        }
        customers.charge(appUserId, now: now)
        keys.charge(signingKey, now: now)
    }
}
