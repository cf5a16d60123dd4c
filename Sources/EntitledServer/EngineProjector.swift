import AppStore
import Entitlements
import Storage

/// The server's `Projector`: the engine's facts written and read with the ``ProjectionCache``'s
/// codec (their sorted-keys JSON), and a customer's state document rendered as their answer.
///
/// Storage evaluates each affected customer with ``policy`` inside the write transaction; the
/// document it stores is the customer's API answer, rendered (``RenderedCustomer``, by the
/// ``ProjectionCache``; empty with the cache off) from the engine's `CustomerState` for their
/// primary environment. It holds no instant but the next status change, so it depends on the
/// facts and on which statuses hold at `now`, not on the instant itself — a rebuild then finds no
/// difference unless a status changed.
public struct EngineProjector: Projector {
    public let policy: Policy
    /// Encodes and decodes the facts and renders the answer.
    public let cache: ProjectionCache

    public init(policy: Policy, cache: ProjectionCache = ProjectionCache()) {
        self.policy = policy
        self.cache = cache
    }

    /// A fact's ledger text: the sorted-keys JSON (whose bytes must never change).
    public func encode(_ fact: Fact) -> String { cache.payload(fact) }

    /// The engine fact a ledger text holds; nil when it is not one.
    public func decode(_ text: String) -> Fact? { cache.fact(text) }

    /// The customer's rendered answer (their state at the epoch: reads splice in their own time).
    public func document(customer: CustomerRecord, state: CustomerState) -> [UInt8] {
        cache.document(for: CustomerBody(customer: customer, state: state, now: 0))
    }
}
