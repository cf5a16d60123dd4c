/// An amount of money as Google's APIs write it (`google.type.Money`): `{"currencyCode": "USD",
/// "units": "9", "nanos": 990000000}`.
///
/// Decoding never fails on the members' values: a malformed amount decodes to a value whose
/// ``milliunits`` is nil, so a hostile price is ignored without losing the purchase around it.
public struct Money: Sendable, Hashable, Codable {
    /// ISO 4217 code.
    public var currencyCode: String?
    /// Whole units, an int64 written as a string (kept as sent; read by ``milliunits``).
    public var units: String?
    /// Billionths of a unit, -999,999,999 through 999,999,999, with the sign of `units`.
    public var nanos: Int64?

    public init(currencyCode: String?, units: String?, nanos: Int64? = nil) {
        self.currencyCode = currencyCode
        self.units = units
        self.nanos = nanos
    }

    /// The amount `milliunits` thousandths of a unit of `currencyCode` (9990 → "9", 990000000).
    public init(currencyCode: String, milliunits: Int64) {
        self.init(currencyCode: currencyCode, units: String(milliunits / 1000), nanos: (milliunits % 1000) * 1_000_000)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        currencyCode = (try? c.decodeIfPresent(String.self, forKey: .currencyCode)).flatMap { $0 }.map { String($0.prefix(8)) }
        if let text = (try? c.decodeIfPresent(String.self, forKey: .units)).flatMap({ $0 }) {
            units = String(text.prefix(24))
        } else {
            units = (try? c.decodeIfPresent(Int64.self, forKey: .units)).flatMap { $0 }.map(String.init)
        }
        nanos = (try? c.decodeIfPresent(Int64.self, forKey: .nanos)).flatMap { $0 }
    }

    /// The amount in thousandths of a unit (the App Store's `price` representation), computed with
    /// integers only; nil unless it is exactly representable: `units` an int64, `nanos` in range,
    /// of the same sign and a whole number of thousandths, and the result within Int64.
    public var milliunits: Int64? {
        guard let text = units ?? (nanos != nil ? "0" : nil), text.utf8.count <= 20, let whole = Int64(text) else { return nil }
        let fraction = nanos ?? 0
        guard abs(fraction) <= 999_999_999, fraction % 1_000_000 == 0 else { return nil }
        guard whole == 0 || fraction == 0 || (whole > 0) == (fraction > 0) else { return nil }
        let (scaled, overflow) = whole.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return nil }
        let (sum, overflowed) = scaled.addingReportingOverflow(fraction / 1_000_000)
        return overflowed ? nil : sum
    }

    /// `currencyCode` when it is an ISO 4217 code (three capital letters).
    public var currency: String? {
        guard let code = currencyCode, code.utf8.count == 3, code.utf8.allSatisfy({ (65...90).contains($0) }) else { return nil }
        return code
    }
}

/// The pricing phase a subscription line item is in (`offerPhase`): exactly one member is present.
public struct OfferPhase: Sendable, Hashable, Codable {
    public typealias Marker = CanceledStateContext.Marker
    public var freeTrial: Marker?
    public var introductoryPrice: Marker?
    public var basePrice: Marker?
    public var prorationPeriod: Marker?

    public init(freeTrial: Marker? = nil, introductoryPrice: Marker? = nil, basePrice: Marker? = nil, prorationPeriod: Marker? = nil) {
        self.freeTrial = freeTrial
        self.introductoryPrice = introductoryPrice
        self.basePrice = basePrice
        self.prorationPeriod = prorationPeriod
    }

    public static let trial = OfferPhase(freeTrial: .init())
    public static let introductory = OfferPhase(introductoryPrice: .init())
    public static let base = OfferPhase(basePrice: .init())
    public static let proration = OfferPhase(prorationPeriod: .init())
}
