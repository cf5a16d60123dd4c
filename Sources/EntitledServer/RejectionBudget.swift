import AppStore
import HTTPServer

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
        /// Google Play pushes whose OIDC token or body is refused.
        case googlePush
    }

    struct Key: Hashable, Sendable {
        var address: String
        var credential: Credential
    }

    /// Rejections a fresh address may cause at once, per class.
    public var capacity: Double { buckets.capacity }
    /// Tokens regained per second.
    public var refillPerSecond: Double { buckets.refillPerSecond }
    /// (address, class) pairs tracked at most; beyond it, the fullest buckets are forgotten.
    public var maxAddresses: Int { buckets.maxKeys }
    private let clock: any EpochClock
    private let buckets: TokenBuckets<Key>

    public init(capacity: Double = 20, refillPerSecond: Double = 1, maxAddresses: Int = 10_000, clock: any EpochClock) {
        self.buckets = TokenBuckets(capacity: capacity, refillPerSecond: refillPerSecond, maxKeys: maxAddresses)
        self.clock = clock
    }

    /// Whether `address` has budget left for `credential` failures; costs nothing.
    public func allows(_ address: String, _ credential: Credential) -> Bool {
        buckets.allows(Key(address: address, credential: credential), now: clock.nowMilliseconds())
    }

    /// Spends one token of `address`'s `credential` bucket for a rejection; answers whether there
    /// was one to spend (false: the class is out of budget, the answer should be 429).
    @discardableResult
    public func charge(_ address: String, _ credential: Credential) -> Bool {
        buckets.charge(Key(address: address, credential: credential), now: clock.nowMilliseconds())
    }

    /// The 429 answer for an address out of budget.
    public static let exhausted = HTTPError(
        .tooManyRejections, "too many rejected requests from this address", headers: ["Retry-After": "5"])
}
