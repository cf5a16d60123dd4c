import AppStore
import Entitlements
import HTTPServer
import JSONCoding

/// What `GET /v1/customers/{appUserId}/offerings` reads of a customer's evaluated state: the
/// states targeting sees, the storefront of their latest transaction and the offers eligible now.
/// It is rendered with the customer's answer (``RenderedCustomer``) from the same stored state, and
/// holds exactly as long as that answer does (its changes with time are the answer's
/// `nextStatusChangeAt`), so the offerings read evaluates nothing either.
public struct CustomerAudience: Hashable, Sendable, Codable {
    /// ``AudienceState/of(_:)``, in ``AudienceState/allCases`` order.
    public var states: [AudienceState]
    /// ISO 3166-1 alpha-3 of the customer's latest transaction, if known.
    public var storefront: String?
    /// ``EligibleOffers/introductory``.
    public var introductory: [String]
    /// ``EligibleOffers/winBack``.
    public var winBack: [OfferReference]

    public init(_ state: CustomerState) {
        let states = AudienceState.of(state)
        self.states = AudienceState.allCases.filter(states.contains)
        storefront = state.storefront?.storefront
        introductory = state.offers.introductory
        winBack = state.offers.winBack
    }

    /// The offers of ``EligibleOffers`` the offerings read answers with.
    var offers: EligibleOffers { EligibleOffers(introductory: introductory, winBack: winBack) }

    /// The JSON line ``RenderedCustomer`` stores (sorted keys, as `JSONEncoder` writes them).
    var line: [UInt8] {
        var bytes: [UInt8] = []
        JSONWriter.write(
            .object([
                ("states", .array(states.map { .string($0.rawValue) })),
                ("storefront", storefront.map(AnswerJSON.Value.string) ?? .null),
                ("introductory", .array(introductory.map(AnswerJSON.Value.string))),
                ("winBack", .array(winBack.map { .object([("productId", .string($0.productId)), ("offerId", .string($0.offerId))]) })),
            ]), to: &bytes)
        return bytes
    }
}
