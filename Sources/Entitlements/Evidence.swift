// Evidence: what renewal-info versions and notifications say about one subscription, kept as
// dates combined by minimum, maximum and membership only, so that their order never matters.

/// Dated evidence about one subscription (per `originalTransactionId`), from every renewal-info
/// version and notification. Only maxima, minima and membership in date ranges are used, so order
/// and duplicates don't matter.
struct Evidence {
    /// Newest "auto-renew on" (renewal versions, AUTO_RENEW_ENABLED, SUBSCRIBED, …).
    var renewOn: Int64 = .min
    /// Every "auto-renew off" date.
    var renewOff: [Int64] = []
    /// Newest "billing fine" (renewal versions not in retry, DID_RENEW, DID_RECOVER, …).
    var billingOK: Int64 = .min
    /// Every "billing failed" date (renewal versions in retry, DID_FAIL_TO_RENEW).
    var billingIssue: [Int64] = []
    /// Every grace period end a renewal-info version gave, with that version's date.
    var graceEnds: [(signed: Int64, end: Int64)] = []
    /// Every DID_FAIL_TO_RENEW with subtype GRACE_PERIOD.
    var graceStarts: [Int64] = []
    /// Newest EXPIRED notification.
    var expiredNotice: Int64 = .min
    /// Every GRACE_PERIOD_EXPIRED notification.
    var graceExpiredNotices: [Int64] = []
    /// Newest PRICE_INCREASE notification (V1 PRICE_INCREASE_CONSENT counts as pending).
    var priceIncreaseDate: Int64 = .min
    var priceIncrease: PriceIncrease?

    var renewOffMax: Int64 { renewOff.max() ?? .min }

    /// Auto-renew per the newest evidence; off wins a tie. nil without evidence.
    var autoRenew: Bool? {
        let off = renewOffMax
        if off == .min && renewOn == .min { return nil }
        return renewOn > off
    }

    /// The first "off" after the last "on".
    var unsubscribedAt: Int64? {
        var first: Int64?
        for date in renewOff where date > renewOn { first = min(first ?? date, date) }
        return first
    }

    /// The first billing failure after the last success and not before `floor`.
    func issueSince(_ floor: Int64) -> Int64? {
        var first: Int64?
        for date in billingIssue where date > billingOK && date >= floor { first = min(first ?? date, date) }
        return first
    }

    var newestIssue: Int64 { billingIssue.max() ?? .min }

    /// Newest GRACE_PERIOD_EXPIRED notification.
    var graceExpiredNotice: Int64 { graceExpiredNotices.max() ?? .min }

    /// Whether a renewal at `recovery` came inside the billing grace period of the failure that
    /// ended the period bought at `periodStart` and ending at `periodEnd` (Apple: no interruption to
    /// the days of paid service then). The grace end comes from renewal info signed between the
    /// period's purchase and the recovery; without one, a DID_FAIL_TO_RENEW/GRACE_PERIOD in that time
    /// shows grace, or, for V1 data, `fallbackGraceEnd` after a failure. A GRACE_PERIOD_EXPIRED
    /// before the recovery shows the recovery came in billing retry.
    func recoveredInGrace(periodStart: Int64, periodEnd: Int64, recovery: Int64, fallbackGraceEnd: Int64?) -> Bool {
        if graceExpiredNotices.contains(where: { $0 >= periodEnd && $0 < recovery }) { return false }
        var graceEnd: Int64?
        for grace in graceEnds where grace.signed >= periodStart && grace.signed < recovery {
            graceEnd = max(graceEnd ?? grace.end, grace.end)
        }
        if let graceEnd { return recovery < graceEnd }
        if graceStarts.contains(where: { $0 >= periodStart && $0 < recovery }) { return true }
        if let fallbackGraceEnd, billingIssue.contains(where: { $0 >= periodStart && $0 < recovery }) {
            return recovery < fallbackGraceEnd
        }
        return false
    }

    mutating func notePriceIncrease(_ value: PriceIncrease, at date: Int64) {
        // Newest wins; on a tie `accepted` wins (consent is not withdrawn).
        if date > priceIncreaseDate || (date == priceIncreaseDate && value == .accepted) {
            priceIncreaseDate = date
            priceIncrease = value
        }
    }
}

extension Evidence {
    /// What a V2 notification says about its subscription.
    mutating func apply(_ n: NotificationFact) {
        let date = n.signedDate
        switch n.type {
        case .didFailToRenew:
            billingIssue.append(date)
            if n.subtype == .gracePeriod { graceStarts.append(date) }
        case .didRenew:
            billingOK = max(billingOK, date)
        case .subscribed:
            billingOK = max(billingOK, date)
            renewOn = max(renewOn, date)
        case .didChangeRenewalStatus:
            if n.subtype == .autoRenewEnabled {
                renewOn = max(renewOn, date)
            } else if n.subtype == .autoRenewDisabled {
                renewOff.append(date)
            }
        case .expired:
            expiredNotice = max(expiredNotice, date)
        case .gracePeriodExpired:
            graceExpiredNotices.append(date)
        case .priceIncrease:
            if n.subtype == .pending {
                notePriceIncrease(.pending, at: date)
            } else if n.subtype == .accepted {
                notePriceIncrease(.accepted, at: date)
            }
        default:
            break
        }
    }

    /// What a V1 notification says about its subscription.
    mutating func apply(_ n: V1NotificationFact) {
        let date = n.date
        switch n.type {
        case .didFailToRenew:
            billingIssue.append(date)
        case .didRenew, .didRecover, .renewal:
            billingOK = max(billingOK, date)
        case .initialBuy, .interactiveRenewal:
            billingOK = max(billingOK, date)
            renewOn = max(renewOn, date)
        case .didChangeRenewalStatus:
            if let on = n.autoRenewStatus {
                if on { renewOn = max(renewOn, date) } else { renewOff.append(date) }
            }
        case .priceIncreaseConsent:
            notePriceIncrease(.pending, at: date)
        default:
            break
        }
    }
}

extension Evidence {
    mutating func note(autoRenew: Bool, inRetry: Bool?, graceEnd: Int64?, at date: Int64) {
        if autoRenew { renewOn = max(renewOn, date) } else { renewOff.append(date) }
        if let graceEnd { graceEnds.append((date, graceEnd)) }
        switch inRetry {
        case true?: billingIssue.append(date)
        case false?: billingOK = max(billingOK, date)
        case nil: break
        }
    }
}
