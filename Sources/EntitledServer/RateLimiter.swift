import AppStore
import EntitledConfig
import HTTPServer
import Synchronization

/// Token buckets by key (an app key's name, a client address with an operation): each key may
/// spend `burst` at once and regains `perMinute` a minute. Time comes from the injected clock;
/// the table is bounded (``maxKeys``: beyond it, full buckets are forgotten first).
public final class RateLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updatedAt: Int64
    }

    public let settings: TokenBucketSettings
    public let maxKeys: Int
    private let clock: any EpochClock
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(_ settings: TokenBucketSettings, maxKeys: Int = 10_000, clock: any EpochClock) {
        self.settings = settings
        self.maxKeys = maxKeys
        self.clock = clock
    }

    private var perMillisecond: Double { Double(settings.perMinute) / 60_000 }

    /// Spends one token of `key`'s bucket: nil when there was one, else the whole seconds until
    /// there is (for `Retry-After`).
    public func take(_ key: String) -> Int? {
        let now = clock.nowMilliseconds()
        let capacity = Double(settings.burst)
        return buckets.withLock { buckets -> Int? in
            var bucket = buckets[key].map { refilled($0, now: now) } ?? Bucket(tokens: capacity, updatedAt: now)
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return max(1, Int(((1 - bucket.tokens) / perMillisecond / 1000).rounded(.up)))
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            if buckets.count > maxKeys {
                buckets = buckets.filter { refilled($0.value, now: now).tokens < capacity - 1 }
                if buckets.count > maxKeys { buckets.removeAll(keepingCapacity: true) }
            }
            return nil
        }
    }

    private func refilled(_ bucket: Bucket, now: Int64) -> Bucket {
        let elapsed = Double(max(0, now - bucket.updatedAt))
        return Bucket(tokens: min(Double(settings.burst), bucket.tokens + elapsed * perMillisecond), updatedAt: now)
    }
}
