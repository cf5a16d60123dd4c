import EntitledCrypto
import Synchronization

/// Remembers certificate chains that already verified, so a warm verification does no X.509 work:
/// one ES256 check with the cached leaf key, then the JSON decode.
///
/// The key is the SHA-256 of leaf DER ‖ intermediate DER plus the fingerprint of the root the chain
/// reached. An entry keeps the chain's combined validity window (latest notBefore … earliest
/// notAfter), and a hit re-checks the verification time against it: in offline mode each payload
/// brings its own `signedDate`, so "this chain verified once" does not mean "valid at this time".
/// Entries live for ``timeToLive`` milliseconds after insertion and there are at most ``capacity``.
///
/// Shareable between verifiers with the same roots (the root is part of the key).
public final class VerifiedChainCache: Sendable {
    /// A verified chain.
    struct Entry: Sendable {
        /// The leaf's P-256 key, parsed once; reused for every signature check.
        var leafKey: P256PublicKey
        /// leaf, intermediate, root — kept for OCSP in online mode.
        var chain: [X509Certificate]
        /// Latest notBefore of the three certificates, seconds since 1970.
        var validFrom: Int64
        /// Earliest notAfter of the three certificates, seconds since 1970.
        var validUntil: Int64
        /// When the entry was stored, milliseconds (the injected clock).
        var storedAt: Int64
    }

    struct Key: Hashable, Sendable {
        var chainDigest: [UInt8]
        var rootFingerprint: [UInt8]
    }

    /// How long an entry is trusted without re-verification, in milliseconds.
    public let timeToLive: Int64
    /// The most entries kept.
    public let capacity: Int

    struct State {
        var entries: [Key: Entry] = [:]
        var hits = 0
        var misses = 0
    }

    // One lock for entries and counters, so a lookup takes it once.
    private let state = Mutex(State())

    /// - Parameters:
    ///   - timeToLive: milliseconds an entry stays usable (default 15 minutes).
    ///   - capacity: maximum entries (default 1024; Apple rotates leaves rarely, so a handful is typical).
    public init(timeToLive: Int64 = 15 * 60 * 1000, capacity: Int = 1024) {
        self.timeToLive = timeToLive
        self.capacity = max(1, capacity)
    }

    /// The number of lookups that found a live entry, and that did not.
    public var statistics: (hits: Int, misses: Int) { state.withLock { ($0.hits, $0.misses) } }

    /// The number of entries held (live or not yet evicted).
    public var count: Int { state.withLock { $0.entries.count } }

    /// Drops every entry.
    public func removeAll() { state.withLock { $0.entries.removeAll() } }

    /// The live entry for this chain under any of `rootFingerprints`; counts one hit or one miss.
    func lookup(chainDigest: [UInt8], rootFingerprints: [[UInt8]], now: Int64) -> Entry? {
        state.withLock { state in
            for root in rootFingerprints {
                let key = Key(chainDigest: chainDigest, rootFingerprint: root)
                guard let entry = state.entries[key] else { continue }
                guard now - entry.storedAt < timeToLive, now >= entry.storedAt else {
                    state.entries[key] = nil
                    continue
                }
                state.hits += 1
                return entry
            }
            state.misses += 1
            return nil
        }
    }

    func store(_ entry: Entry, for key: Key, now: Int64) {
        state.withLock { state in
            if state.entries[key] == nil, state.entries.count >= capacity {
                // Full: drop what has expired; if nothing has, drop the oldest. O(n), but only when full.
                state.entries = state.entries.filter { now - $0.value.storedAt < timeToLive }
                if state.entries.count >= capacity, let oldest = state.entries.min(by: { $0.value.storedAt < $1.value.storedAt }) {
                    state.entries[oldest.key] = nil
                }
            }
            state.entries[key] = entry
        }
    }
}
