import Synchronization

/// Token buckets keyed by `Key`: each key may spend `capacity` tokens at once and regains
/// `refillPerSecond`; at most `maxKeys` keys are tracked (beyond it the full buckets are
/// forgotten, then all). Time is passed in (the caller's injected clock), so it is deterministic.
final class TokenBuckets<Key: Hashable & Sendable>: Sendable {
    struct Bucket {
        var tokens: Double
        var updatedAt: Int64
    }

    let capacity: Double
    let refillPerSecond: Double
    let maxKeys: Int
    private let buckets = Mutex<[Key: Bucket]>([:])

    init(capacity: Double, refillPerSecond: Double, maxKeys: Int) {
        self.capacity = capacity
        self.refillPerSecond = refillPerSecond
        self.maxKeys = maxKeys
    }

    /// Whether `key` has a token now; costs nothing.
    func allows(_ key: Key, now: Int64) -> Bool {
        buckets.withLock { buckets in buckets[key].map { refilled($0, now: now).tokens >= 1 } ?? true }
    }

    /// Spends one of `key`'s tokens (none below zero); answers whether there was one.
    @discardableResult
    func charge(_ key: Key, now: Int64) -> Bool {
        buckets.withLock { buckets in spend(key, now: now, in: &buckets) }
    }

    /// Seconds (at least 1) until `key` has a token again; nil when it has one now. Costs nothing.
    func secondsUntilToken(_ key: Key, now: Int64) -> Int? {
        let tokens = buckets.withLock { buckets in buckets[key].map { refilled($0, now: now).tokens } ?? capacity }
        guard tokens < 1 else { return nil }
        guard refillPerSecond > 0 else { return Int(Int32.max) }
        return max(1, Int(((1 - tokens) / refillPerSecond).rounded(.up)))
    }

    @discardableResult
    private func spend(_ key: Key, now: Int64, in buckets: inout [Key: Bucket]) -> Bool {
        var bucket = buckets[key].map { refilled($0, now: now) } ?? Bucket(tokens: capacity, updatedAt: now)
        let had = bucket.tokens >= 1
        bucket.tokens = max(0, bucket.tokens - 1)
        buckets[key] = bucket
        if buckets.count > maxKeys {
            let full = buckets.filter { refilled($0.value, now: now).tokens >= capacity - 1 }.map(\.key)
            for key in full { buckets.removeValue(forKey: key) }
            if buckets.count > maxKeys { buckets.removeAll(keepingCapacity: true) }
        }
        return had
    }

    private func refilled(_ bucket: Bucket, now: Int64) -> Bucket {
        let elapsed = Double(max(0, now - bucket.updatedAt)) / 1000
        return Bucket(tokens: min(capacity, bucket.tokens + elapsed * refillPerSecond), updatedAt: now)
    }
}
