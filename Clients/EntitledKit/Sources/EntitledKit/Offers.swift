import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An offer to apply to a purchase (``Purchases/purchase(productID:offer:)``).
public enum PurchaseOffer: Sendable, Hashable {
    /// A configured promotional offer: the server signs it for the customer.
    case promotional(String)
    /// A configured win-back offer: the server signs it when the customer is inside its window.
    case winBack(String)
    /// The product's introductory offer, only when the server's answer says the customer is eligible.
    case introductory
}

extension CustomerAnswer.Offers {
    /// Every offer the customer may take on `productID`, as values ``Purchases/purchase(productID:offer:)`` takes.
    public func available(for productID: String) -> [PurchaseOffer] {
        (introductory.contains(productID) ? [.introductory] : [])
            + promotional.filter { $0.productId == productID }.map { .promotional($0.offerId) }
            + winBack.filter { $0.productId == productID }.map { .winBack($0.offerId) }
    }
}

/// What the server signed for an offer (`POST /v1/customers/{appUserId}/offers/sign`).
public struct SignedOffer: Sendable, Codable, Hashable {
    /// `v1` (StoreKit's `promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`): the key id,
    /// lowercase nonce, milliseconds since 1970 and the base64 DER signature.
    public var keyId: String?
    public var nonce: UUID
    public var timestamp: Int64?
    public var signature: String?
    /// `jws`: the compact JWS StoreKit takes.
    public var jws: String?
    /// `introductoryEligibility` only: the decision the JWS carries.
    public var allowIntroductoryOffer: Bool?
}

/// What the StoreKit layer passes to the purchase sheet: the offer and the server's signature.
public struct SignedPurchaseOffer: Sendable, Hashable {
    public var offer: PurchaseOffer
    public var signed: SignedOffer
}

/// An offer the customer may not take now.
public struct OfferNotEligible: Error, Sendable, Hashable {
    public var productID: String
    public var offer: PurchaseOffer

    public init(productID: String, offer: PurchaseOffer) {
        self.productID = productID
        self.offer = offer
    }
}

extension EntitledClient {
    /// The server's kind and format names.
    public enum OfferKind: String, Sendable { case promotional, winBack, introductoryEligibility }
    public enum OfferFormat: String, Sendable { case v1, jws }

    /// Asks the server to sign an offer of `productID` for the customer (`409 OFFER_NOT_ELIGIBLE`
    /// when the customer may not take it).
    public func signOffer(
        productID: String, kind: OfferKind, offerId: String?, format: OfferFormat, appUserId: String? = nil
    ) async throws -> SignedOffer {
        let id = try resolve(appUserId)
        var request = URLRequest(url: customerURL(id, "/offers/sign", query: true))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        var body = ["productId": productID, "kind": kind.rawValue, "format": format.rawValue]
        body["offerId"] = offerId
        request.httpBody = try JSONEncoder().encode(body)
        let (data, _) = try await send(request)
        do { return try JSONDecoder().decode(SignedOffer.self, from: data) } catch {
            throw EntitledError.invalidResponse("signed offer: \(error)")
        }
    }
}
