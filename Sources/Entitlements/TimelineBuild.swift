// The timeline's decisions, per subscription and per purchase, from the facts collected.

extension TimelineBuilder {
    mutating func build() -> [CustomerEvent] {
        // Each transaction's versions in signed order, one per distinct content.
        var current: [String: TimelineTx] = [:]
        var chains: [String: [TimelineTx]] = [:]
        for id in versions.keys.sorted() {
            let ordered = Self.distinct(versions[id]!, key: \.versionKey)
            versionEvents(ordered)
            var last = ordered.last!
            last.revealed = ordered[0].revealed
            current[id] = last
            if last.type == .autoRenewable {
                chains[last.otid, default: []].append(last)
            } else {
                let subject = last.id
                let first = ordered.first!
                emit(.purchaseCompleted, at: first.purchaseDate, tx: first, subject: subject)
            }
        }
        for otid in chains.keys.sorted() {
            chains[otid]!.sort { ($0.purchaseDate, $0.id) < ($1.purchaseDate, $1.id) }
            let chain = chains[otid]!
            subscription(chain, infos: Self.distinct(infos[otid] ?? [], key: \.key), notes: notes[otid] ?? [],
                         signed: (signed[otid] ?? []).sorted { ($0.date, $0.index) < ($1.date, $1.index) })
        }
        for otid in infos.keys.sorted() where chains[otid] != nil {
            renewalInfoEvents(Self.distinct(infos[otid]!, key: \.key), chain: chains[otid]!)
        }
        playEvents()
        return events.filter { $0.occurredAt <= now }.sorted(by: CustomerEvent.happensBefore)
    }

    /// Sorted by `key`, one of each key (duplicates of a fact are one fact).
    static func distinct<T>(_ items: [T], key: (T) -> [Int64]) -> [T] {
        var result: [T] = []
        for item in items.sorted(by: { key($0).lexicographicallyPrecedes(key($1)) }) where result.last.map(key) != key(item) {
            result.append(item)
        }
        return result
    }

    // MARK: Events

    mutating func emit(
        _ type: EventType, at instant: Int64, tx: TimelineTx, subject: String,
        also: [(date: Int64, index: Int)] = [], details: [String: String] = [:], products: [String] = []
    ) {
        var newest = tx.revealed
        for fact in also where fact.date > newest.date { newest = fact }
        let entitlements = Set(([tx.productId] + products).flatMap { policy.products[$0]?.entitlements ?? [] }).sorted()
        events.append(
            CustomerEvent(
                type: type, occurredAt: instant, environment: environment, originalTransactionId: tx.otid, transactionId: tx.id,
                productId: tx.productId, entitlements: entitlements, details: tx.details.merging(details) { _, new in new },
                subject: subject, basis: newest.date, causeIndex: newest.index))
    }

    /// A transaction's versions: refunds and their reversals, extensions.
    mutating func versionEvents(_ ordered: [TimelineTx]) {
        var previous: TimelineTx?
        for version in ordered {
            defer { previous = version }
            let subscription = version.type == .autoRenewable
            switch (previous?.revocationDate, version.revocationDate) {
            case (nil, let date?):
                let type: EventType =
                    subscription ? (version.familyRevoke ? .subscriptionRevoked : .subscriptionRefunded) : .purchaseRefunded
                emit(type, at: date, tx: version, subject: version.id,
                     details: version.familyRevoke ? ["reason": "familyRevoke"] : ["reason": "refund"])
            case (_?, nil):
                emit(subscription ? .subscriptionRefundReversed : .purchaseRefundReversed, at: version.signedDate, tx: version,
                     subject: version.id)
            default:
                if let previous, let was = previous.expiresDate, let now = version.expiresDate, now > was, version.revocationDate == nil,
                    subscription
                {
                    emit(.subscriptionExtended, at: version.signedDate, tx: version, subject: version.otid,
                         details: ["from": String(was), "to": String(now)])
                }
            }
        }
    }

    /// `autoRenewStatus` and `priceIncreaseStatus` changing between successive renewal infos.
    mutating func renewalInfoEvents(_ ordered: [TimelineInfo], chain: [TimelineTx]) {
        var previous: TimelineInfo?
        for info in ordered {
            defer { previous = info }
            // The period the change happened in (the first one, when it came before any).
            let period = chain.last { $0.purchaseDate <= info.signedDate } ?? chain[0]
            let facts = [(date: info.signedDate, index: info.index)]
            if let previous, previous.autoRenew != info.autoRenew {
                emit(info.autoRenew ? .subscriptionAutoRenewEnabled : .subscriptionAutoRenewDisabled, at: info.signedDate,
                     tx: period, subject: period.otid, also: facts)
            }
            if let status = info.priceIncrease, status != previous?.priceIncrease {
                emit(.subscriptionPriceIncrease, at: info.signedDate, tx: period, subject: period.otid, also: facts,
                     details: ["status": status == 0 ? "pending" : "accepted"])
            }
        }
    }

    /// A subscription's periods: started, renewals, product changes, offers, and what each gap
    /// between periods (or the end of the last) was.
    mutating func subscription(
        _ chain: [TimelineTx], infos: [TimelineInfo], notes: [TimelineNote], signed: [(date: Int64, index: Int)]
    ) {
        let first = chain[0]
        // It started when its original transaction was bought: as any transaction says, else the
        // original one's purchase, else the first known (one event per subscription, see `identity`).
        let original = chain.first { $0.id == $0.otid }
        let at = chain.compactMap(\.originalPurchaseDate).min() ?? original?.purchaseDate ?? first.purchaseDate
        emit(.subscriptionStarted, at: at, tx: original ?? first, subject: first.otid)
        offer(first)
        for (previous, next) in zip(chain, chain.dropFirst()) {
            let end = previous.expiresDate ?? next.purchaseDate
            let involved = [previous.revealed]
            if previous.isUpgraded || (next.productId != previous.productId && next.purchaseDate < end) {
                emit(.subscriptionProductChanged, at: next.purchaseDate, tx: next, subject: next.otid, also: involved,
                     details: ["from": previous.productId, "to": next.productId, "timing": "immediate"], products: [previous.productId])
            } else if next.purchaseDate <= end {
                emit(.subscriptionRenewed, at: next.purchaseDate, tx: next, subject: next.otid, also: involved)
                if next.productId != previous.productId {
                    emit(.subscriptionProductChanged, at: next.purchaseDate, tx: next, subject: next.otid, also: involved,
                         details: ["from": previous.productId, "to": next.productId, "timing": "atRenewal"],
                         products: [previous.productId])
                }
            } else {
                let decided = next.revealed
                let outcome = periodEnd(
                    previous, end: end, before: next.purchaseDate, decided: decided, infos: infos, notes: notes, signed: signed)
                emit(.subscriptionRenewed, at: next.purchaseDate, tx: next, subject: next.otid, also: involved)
                if outcome == .inRetry {
                    emit(.subscriptionRecovered, at: next.purchaseDate, tx: next, subject: next.otid, also: involved)
                }
            }
            offer(next)
        }
        guard let last = chain.last, last.revocationDate == nil, !last.isUpgraded, let end = last.expiresDate, end <= now else { return }
        // The last period ended: what followed is decided once a fact signed at or after its end is known.
        guard let decided = signed.first(where: { $0.date >= end }) else { return }
        _ = periodEnd(last, end: end, before: nil, decided: decided, infos: infos, notes: notes, signed: signed)
    }

    /// A transaction in a promotional, offer-code, win-back or retention offer.
    mutating func offer(_ t: TimelineTx) {
        guard let type = t.details["offerType"], ["promotional", "offerCode", "winBack", "retentionOffer"].contains(type) else { return }
        emit(.subscriptionOfferRedeemed, at: t.purchaseDate, tx: t, subject: t.id)
    }

    enum PeriodEnd { case expired, inRetry }

    /// The events of a period ending at `end` without a renewal starting by then (the next period,
    /// if any, starts at `before`): a billing issue when a fact of the period or after shows one,
    /// then the grace period's end and the end of billing retry as far as they came before
    /// `before` (and `now`); else an expiry. `decided`: the fact that shows the end is known.
    mutating func periodEnd(
        _ period: TimelineTx, end: Int64, before next: Int64?, decided: (date: Int64, index: Int), infos: [TimelineInfo],
        notes: [TimelineNote], signed: [(date: Int64, index: Int)]
    ) -> PeriodEnd {
        let limit = next ?? .max
        let window = infos.filter { $0.signedDate >= period.purchaseDate && $0.signedDate < limit }
        let issueInfos = window.filter { $0.showsIssue(periodEnd: end) || $0.fallbackGrace }
        let failures = notes.filter { $0.kind == .failedToRenew && $0.signedDate >= period.purchaseDate && $0.signedDate < limit }
        let evidence = (issueInfos.map { (date: $0.signedDate, index: $0.index) } + failures.map { (date: $0.signedDate, index: $0.index) })
            .min { ($0.date, $0.index) < ($1.date, $1.index) }
        // The first fact of the subscription signed at or after the end decides it.
        let decided = signed.first { $0.date >= end } ?? decided
        guard let evidence else {
            let reason = window.last { $0.signedDate <= max(decided.date, end) }?.expirationIntent
            emit(.subscriptionExpired, at: end, tx: period, subject: period.otid, also: [decided], details: ["reason": Self.reason(reason)])
            return .expired
        }
        let grace = issueInfos.compactMap { $0.grace(periodEnd: end, fallbackDays: policy.fallbackGraceDays) }.max()
        var details = ["kind": grace == nil ? "billingRetry" : "gracePeriod"]
        if let grace { details["gracePeriodExpiresAt"] = String(grace) }
        emit(.subscriptionBillingIssue, at: end, tx: period, subject: period.otid, also: [evidence], details: details)
        // Known once a fact of the subscription signed at or after it is (a recovery may come): the
        // first such fact decides it, whichever came first here.
        func known(_ instant: Int64) -> (date: Int64, index: Int)? { signed.first { $0.date >= instant } }
        if let grace, grace < limit, grace <= now, let fact = known(grace) {
            emit(.subscriptionGracePeriodExpired, at: grace, tx: period, subject: period.otid, also: [evidence, fact])
        }
        // Billing retry ends with Apple's EXPIRED, renewal info no longer in retry, or after 60 days.
        var ends: [(date: Int64, index: Int)] = notes.filter { $0.kind == .expired && $0.signedDate >= end && $0.signedDate < limit }
            .map { ($0.signedDate, $0.index) }
        ends += window.filter { $0.signedDate > evidence.date && $0.inRetry == false && !$0.fallbackGrace }.map { ($0.signedDate, $0.index) }
        let timeout = end.plus(billingRetryDays * Time.day)
        if timeout < limit, let fact = known(timeout) { ends.append((timeout, fact.index)) }
        guard let retryEnd = ends.min(by: { ($0.date, $0.index) < ($1.date, $1.index) }), retryEnd.date <= now else { return .inRetry }
        emit(.subscriptionExpired, at: retryEnd.date, tx: period, subject: period.otid, also: [evidence, retryEnd],
             details: ["reason": "billingError"])
        return .expired
    }

    /// `expirationIntent` as a word: 1 voluntary, 2 billingError, 3 priceIncrease, 4 productUnavailable.
    static func reason(_ intent: Int?) -> String {
        switch intent {
        case 1: "voluntary"
        case 2: "billingError"
        case 3: "priceIncrease"
        case 4: "productUnavailable"
        default: "unknown"
        }
    }
}
