// # Entitlements
//
// The pure domain core of Entitled: what Apple told us about one customer (facts), what the app
// configured (policy) and the time (`now`) go in; the customer's state comes out. No I/O, no clock,
// no Foundation: only the standard library.
//
// ## Rules
//
// - **Canonical facts.** Facts of other environments are ignored. Each transaction's newest version
//   (by `signedDate`; V1 entries by `receiptDate`; on a tie a signed V2 version, then a total order over
//   every field) wins; likewise the newest renewal info per `originalTransactionId`. Notifications only
//   add dated evidence, combined by minimum and maximum. Duplicates and arrival order change nothing.
// - **Status from facts and `now`.** A subscription is `active` until its current transaction's
//   `expiresDate`. Then, if Apple is retrying billing (the newest billing evidence since the period
//   began is a failure: renewal info in `isInBillingRetryPeriod`, `DID_FAIL_TO_RENEW`; not a success:
//   renewal info out of retry, `DID_RENEW`, `SUBSCRIBED`), it is in `gracePeriod` until
//   `gracePeriodExpiresDate` (V1 data without it: `Policy.fallbackGraceDays`; V2 without it: no grace),
//   then `billingRetry` (no access) until 60 days after expiry, then `expired`. `EXPIRED` at or after
//   the last failure ends the retry; `GRACE_PERIOD_EXPIRED` ends grace. `nextStatusChangeAt` is the next
//   such boundary.
// - **Revocation.** A `revocationDate` (V1 `cancellation_date`) makes the transaction `refunded`, or
//   `revoked` when Family Sharing access was withdrawn (`FAMILY_REVOKE`, family-shared ownership).
//   `REFUND`, `REVOKE` and `REFUND_REVERSED` notifications newer than the winning transaction version
//   refund, revoke or reinstate it; `REFUND_DECLINED` changes nothing. Upgraded transactions
//   (`isUpgraded`) are superseded, never refunded.
// - **Current subscription.** Per `originalTransactionId`, the non-upgraded transaction with the latest
//   `purchaseDate` is current (an upgrade takes effect at once; a downgrade or crossgrade shows as
//   `renewsTo` until Apple's renewal transaction for the new product arrives). Per group, the best
//   status wins, then the latest purchase.
// - **Entitlements.** Each grant (subscription, non-consumable, run of non-renewing purchases) gives its
//   product's entitlements; an entitlement shows its best grant: active > gracePeriod > billingRetry >
//   expired > revoked > refunded, then the latest expiry, then purchased over family-shared. A revoked
//   family share leaves access another purchase grants.
// - **Non-subscriptions.** Non-consumables are owned unless revoked. Non-renewing purchases of one group
//   (or product) stack: each runs for the policy's duration from the later of its purchase and the
//   previous end. Consumables credit each transaction's quantity once and debit refunds.
// - **Proceeds.** Paid days per group (purchased, not free trial, not refunded; to each period's original
//   expiry, so renewal-date extensions don't count; days before a recovery inside billing grace do)
//   accumulate and reset after a lapse over 60 days; a renewal starting after 365 paid days is estimated
//   at 0.85, others at 0.70 (always 0.85 for the Small Business Program).
// - **Customer class.** `new` with no purchases but consumables, `active` when a grant gives access,
//   else `inactive`.

/// Evaluates what a customer is entitled to at `now`.
///
/// Deterministic and order-independent: any permutation of `facts`, with any duplicates, gives an
/// equal state. Expiry needs no event: the same facts at a later `now` give the later state.
///
/// What notification facts do (their transaction and renewal info are separate facts):
/// `DID_FAIL_TO_RENEW` (V1 too) dates a billing issue (with `GRACE_PERIOD`, a grace period for paid service); `DID_RENEW`, `SUBSCRIBED` (V1 `DID_RENEW`,
/// `DID_RECOVER`, `INITIAL_BUY`, `INTERACTIVE_RENEWAL`) date billing success; `DID_CHANGE_RENEWAL_STATUS`
/// dates auto-renew on/off; `EXPIRED` ends billing retry (even beside renewal info of the same instant
/// still in retry); `GRACE_PERIOD_EXPIRED` ends grace;
/// `PRICE_INCREASE` (V1 `PRICE_INCREASE_CONSENT`) marks a price increase pending or accepted; `REFUND`,
/// `REVOKE` (V1 `REVOKE`) and `REFUND_REVERSED` refund, revoke or reinstate the named transaction. The other
/// types (`OFFER_REDEEMED`, `DID_CHANGE_RENEWAL_PREF`, `RENEWAL_EXTENDED`, `REFUND_DECLINED`, `TEST`, …)
/// act only through the transaction and renewal info they carry.
///
/// - Parameters:
///   - facts: Verified facts about one customer, in any order, duplicates allowed.
///   - policy: Products, entitlements, groups and levels, durations, fallback grace days.
///   - now: The instant to evaluate at, in epoch milliseconds.
///   - environment: The only environment considered (facts of others are ignored). The server asks
///     for `Production` unless a request names another.
/// - Returns: The customer's state at `now`.
public func evaluate(
    facts: [Fact], policy: Policy, now: Int64, environment: Environment = .production
) -> CustomerState {
    let canon = Canon(facts: facts, policy: policy, environment: environment)
    var derivation = Derivation(canon: canon, policy: policy, now: now, environment: environment)
    return derivation.run()
}

/// Apple retries billing for up to 60 days after a subscription expires.
public let billingRetryDays: Int64 = 60

/// A lapse longer than this resets paid-service days toward the 85% rate.
public let paidServiceLapseDays: Int64 = 60

/// Paid service needed for the 85% rate (one year).
public let paidServiceYearDays: Int64 = 365
