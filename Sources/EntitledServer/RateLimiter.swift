import AppStore
import EntitledConfig

/// ``TokenBuckets`` by string key (an app key's name, a client address with an operation), set
/// in the configuration's terms: each key may spend `burst` at once and regains `perMinute` a
/// minute, on the injected clock.
final class RateLimiter: Sendable {
    let settings: TokenBucketSettings
    private let clock: any EpochClock
    private let buckets: TokenBuckets<String>

    init(_ settings: TokenBucketSettings, maxKeys: Int = 10_000, clock: any EpochClock) {
        self.settings = settings
        self.clock = clock
        buckets = TokenBuckets(capacity: Double(settings.burst), refillPerSecond: Double(settings.perMinute) / 60, maxKeys: maxKeys)
    }

    /// Spends one token of `key`'s bucket: nil when there was one, else the whole seconds until
    /// there is (for `Retry-After`). A refused request spends nothing.
    func take(_ key: String) -> Int? {
        let now = clock.nowMilliseconds()
        if let wait = buckets.secondsUntilToken(key, now: now) { return wait }
        buckets.charge(key, now: now)
        return nil
    }
}
