// Offer eligibility per subscription group, from the group's history and the policy's offers.

extension Derivation {
    /// What one group contributes to ``EligibleOffers``, and the instants after `now` at which a
    /// win-back window of it opens or closes (for `nextStatusChangeAt`).
    ///
    /// - Introductory: the group's products when the customer never had any subscription in it
    ///   (Apple gives one introductory offer per group; a full-price purchase uses it up too).
    /// - Promotional: the group's configured promotional offers once the customer had one.
    /// - Win-back: a configured offer when nothing in the group is current (expired, revoked or
    ///   refunded; billing retry still counts as subscribed) and the lapse, from the end of the
    ///   current subscription's grace or expiry, is inside the offer's window.
    func groupOffers(group: String, hasHistory: Bool, current: Grant?) -> (offers: EligibleOffers, boundaries: [Int64]) {
        var offers = EligibleOffers()
        var boundaries: [Int64] = []
        let products = policy.products.filter { $0.value.type == .autoRenewable && $0.value.subscriptionGroup == group }
            .sorted { $0.key < $1.key }
        guard hasHistory else {
            offers.introductory = products.map(\.key)
            return (offers, boundaries)
        }
        for (productId, product) in products {
            offers.promotional += product.promotionalOffers.map { OfferReference(productId: productId, offerId: $0) }
        }
        guard let current, !current.active, current.status != .billingRetry, let expires = current.expiresAt else {
            return (offers, boundaries)
        }
        let lapsedAt = max(expires, current.gracePeriodExpiresAt ?? expires)
        for (productId, product) in products {
            for rule in product.winBackOffers {
                let opens = lapsedAt.plus(Int64(rule.minimumLapsedDays).times(Time.day))
                let closes = rule.maximumLapsedDays.map { lapsedAt.plus(Int64($0).times(Time.day)) }
                if now >= opens && (closes.map { now < $0 } ?? true) {
                    offers.winBack.append(OfferReference(productId: productId, offerId: rule.offerId))
                }
                for boundary in [opens, closes].compactMap({ $0 }) where boundary > now { boundaries.append(boundary) }
            }
        }
        return (offers, boundaries)
    }
}

extension EligibleOffers {
    /// Appends `other`'s offers (groups are visited in name order; the lists are sorted at the end).
    mutating func append(_ other: EligibleOffers) {
        introductory += other.introductory
        winBack += other.winBack
        promotional += other.promotional
    }

    /// Each list sorted by product, then offer.
    mutating func sort() {
        introductory.sort()
        let order: (OfferReference, OfferReference) -> Bool = {
            $0.productId != $1.productId ? $0.productId < $1.productId : $0.offerId < $1.offerId
        }
        winBack.sort(by: order)
        promotional.sort(by: order)
    }
}
