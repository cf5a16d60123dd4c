import AppStore
import HTTPServer
import Synchronization

/// Token buckets for rejected credentials, one per (client address, ``Credential`` class), so junk
/// cannot make the server burn CPU on signature checks nor probe keys at full speed.
///
/// The classes are separate so that nobody is refused for someone else's failures: behind a
/// reverse proxy many clients share one address, and a few bad API keys must not stop Apple's
/// notifications (nor a valid key). Cheap checks (API keys, customer tokens, the V1 shared
/// secret) always run and spend only on failure, so a valid credential is never answered 429;
/// only expensive signature verification (``Credential/appleSignature``,
/// ``Credential/clientSignature``) consults its own class's budget before the work. Time comes
/// from the injected clock.
public final class RejectionBudget: Sendable {
    /// What failed: each class has its own bucket per address.
    public enum Credential: String, Sendable, CaseIterable {
        /// Missing or unknown API keys (and anything that is not a customer token).
        case apiKey
        /// Customer tokens with a bad signature, claim or lifetime.
        case customerToken
        /// V2 notifications that fail verification or mapping.
        case appleSignature
        /// V1 notifications with a wrong shared secret or unusable content.
        case sharedSecret
        /// Signed transactions and app transactions posted by customers that fail verification.
        case clientSignature
    }

    struct Key: Hashable {
        var address: String
        var credential: Credential
    }

    struct Bucket {
        var tokens: Double
        var updatedAt: Int64
    }

    /// Rejections a fresh address may cause at once, per class.
    public let capacity: Double
    /// Tokens regained per second.
    public let refillPerSecond: Double
    /// (address, class) pairs tracked at most; beyond it, the fullest buckets are forgotten.
    public let maxAddresses: Int
    private let clock: any EpochClock
    private let buckets = Mutex<[Key: Bucket]>([:])

    public init(capacity: Double = 20, refillPerSecond: Double = 1, maxAddresses: Int = 10_000, clock: any EpochClock) {
        self.capacity = capacity
        self.refillPerSecond = refillPerSecond
        self.maxAddresses = maxAddresses
        self.clock = clock
    }

    /// Whether `address` has budget left for `credential` failures; costs nothing.
    public func allows(_ address: String, _ credential: Credential) -> Bool {
        let now = clock.nowMilliseconds()
        return buckets.withLock { buckets in
            guard let bucket = buckets[Key(address: address, credential: credential)] else { return true }
            return refilled(bucket, now: now).tokens >= 1
        }
    }

    /// Spends one token of `address`'s `credential` bucket for a rejection; answers whether there
    /// was one to spend (false: the class is out of budget, the answer should be 429).
    @discardableResult
    public func charge(_ address: String, _ credential: Credential) -> Bool {
        let now = clock.nowMilliseconds()
        let key = Key(address: address, credential: credential)
        return buckets.withLock { buckets in
            var bucket = buckets[key].map { refilled($0, now: now) } ?? Bucket(tokens: capacity, updatedAt: now)
            let had = bucket.tokens >= 1
            bucket.tokens = max(0, bucket.tokens - 1)
            buckets[key] = bucket
            if buckets.count > maxAddresses {
                let full = buckets.filter { refilled($0.value, now: now).tokens >= capacity - 1 }.map(\.key)
                for key in full { buckets.removeValue(forKey: key) }
                if buckets.count > maxAddresses { buckets.removeAll(keepingCapacity: true) }
            }
            return had
        }
    }

    private func refilled(_ bucket: Bucket, now: Int64) -> Bucket {
        let elapsed = Double(max(0, now - bucket.updatedAt)) / 1000
        return Bucket(tokens: min(capacity, bucket.tokens + elapsed * refillPerSecond), updatedAt: now)
    }

    /// The 429 answer for an address out of budget.
    public static let exhausted = HTTPError(
        .tooManyRejections, "too many rejected requests from this address", headers: ["Retry-After": "5"])
}
