import Foundation

/// What the sample talks to and sells: the values of `entitled-dev.json` and `EntitledSample.storekit`
/// (a test checks that the three agree).
public struct SampleSettings: Sendable, Hashable {
    /// `entitled dev`'s address; the iOS Simulator shares the Mac's network.
    public var baseURL: URL
    /// The app key of `entitled-dev.json` (public: safe to ship in the binary).
    public var appKey: String
    public var bundleId: String
    /// The paywall's products, in the order it lists them.
    public var productIDs: [String]
    /// The entitlement that unlocks the gated screen.
    public var entitlement: String

    public init(baseURL: URL, appKey: String, bundleId: String, productIDs: [String], entitlement: String) {
        self.baseURL = baseURL
        self.appKey = appKey
        self.bundleId = bundleId
        self.productIDs = productIDs
        self.entitlement = entitlement
    }

    /// The sample against `entitled dev --config entitled-dev.json --storekit EntitledSample.storekit`.
    public static let dev = SampleSettings(
        baseURL: URL(string: "http://127.0.0.1:8080")!, appKey: "app_sample_dev_only_0123456789abcdef",
        bundleId: "com.example.EntitledSample",
        productIDs: [
            "com.example.EntitledSample.pro.monthly", "com.example.EntitledSample.pro.yearly",
            "com.example.EntitledSample.lifetime",
        ],
        entitlement: "pro")
}
