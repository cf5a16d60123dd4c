/// What a transaction needs from its product's policy.
struct ProductInfo {
    var type: ProductType?
    var group: String?
}

/// Product policies by productId, looked up once per distinct product.
struct ProductCache {
    let policy: Policy
    private var ids = Interner()
    private var cached: [ProductInfo] = []

    init(policy: Policy) { self.policy = policy }

    mutating func info(for productId: String) -> ProductInfo {
        let id = ids.id(productId)
        if id == cached.count {
            let product = policy.products[productId]
            cached.append(ProductInfo(type: product?.type, group: product?.subscriptionGroup))
        }
        return cached[id]
    }
}
