import EntitledConfig
import EntitledCrypto
import Entitlements
import Foundation
import GooglePlay
import Testing

@Suite struct PlayConfigurationTests {
    /// A folder with a valid service-account key file, `key.json`.
    static let folder: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("play-config-\(UUID().uuidString)").path
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let file = ServiceAccountKey.KeyFile(
            private_key_id: "k1", private_key: try! TestKeys.serviceAccount.pkcs8PEM(), client_email: "entitled@p.iam.gserviceaccount.com",
            token_uri: "https://oauth2.googleapis.com/token")
        FileManager.default.createFile(atPath: path + "/key.json", contents: Data(PlayJSON.encode(file)))
        FileManager.default.createFile(atPath: path + "/broken.json", contents: Data("{}".utf8))
        return path
    }()

    func parse(_ apps: String) throws(ConfigurationError) -> Configuration {
        try ConfigurationLoader(environment: [:]).parse(Data(#"{"apps": [\#(apps)]}"#.utf8), baseDirectory: Self.folder)
    }

    static let pubsub = #""pubsub": {"audience": "https://e.example/v1/google/notifications", "serviceAccountEmail": "push@p.iam.gserviceaccount.com"}"#

    @Test func aPlayAppIsReadWithItsDefaults() throws {
        let configuration = try parse("""
            {"bundleId": "com.example.ios", "environments": ["Sandbox"]},
            {"packageName": "com.example.app", "googlePlay": {"serviceAccountKeyFile": "key.json", \(Self.pubsub)},
             "products": [{"productId": "premium", "type": "autoRenewable", "basePlans": ["monthly"], "subscriptionGroup": "g", "entitlements": ["pro"]},
                          {"productId": "coins", "type": "consumable"}]}
            """)
        #expect(configuration.apps.map(\.bundleId) == ["com.example.ios"])
        let app = try #require(configuration.playApps.first)
        #expect(app.packageName == "com.example.app")
        #expect(app.googlePlay.serviceAccountKeyFile == Self.folder + "/key.json")
        #expect(app.googlePlay.apiBaseURL.absoluteString == "https://androidpublisher.googleapis.com")
        #expect(app.googlePlay.pubsub.certsURL.absoluteString == "https://www.googleapis.com/oauth2/v3/certs")
        #expect(app.googlePlay.pubsub.audience == "https://e.example/v1/google/notifications")
        #expect(app.googlePlay.acknowledge)
        #expect(app.googlePlay.voidedPurchasesPollMinutes == 60)
        #expect(app.googlePlay.refundReviews == RefundReviewSettings(autoRespond: false, sampleContentProvided: false, refundPreference: nil))
        #expect(app.products == [
            PlayProduct(productId: "premium", type: .autoRenewable, basePlans: ["monthly"], subscriptionGroup: "g", entitlements: ["pro"]),
            PlayProduct(productId: "coins", type: .consumable),
        ])
    }

    @Test func everyKeyIsRead() throws {
        let app = try #require(try parse("""
            {"packageName": "com.example.app", "googlePlay": {"serviceAccountKeyFile": "key.json", "apiBaseURL": "http://127.0.0.1:9000",
             "acknowledge": false, "voidedPurchasesPollMinutes": 15,
             "refundReviews": {"autoRespond": true, "sampleContentProvided": true, "refundPreference": "DECLINE"},
             "pubsub": {"audience": "a", "serviceAccountEmail": "push@p.iam.gserviceaccount.com", "certsURL": "http://127.0.0.1:9000/oauth2/v3/certs"}}}
            """).playApps.first)
        #expect(app.googlePlay.apiBaseURL.absoluteString == "http://127.0.0.1:9000")
        #expect(!app.googlePlay.acknowledge)
        #expect(app.googlePlay.voidedPurchasesPollMinutes == 15)
        #expect(app.googlePlay.refundReviews == RefundReviewSettings(autoRespond: true, sampleContentProvided: true, refundPreference: .decline))
        #expect(app.googlePlay.pubsub.certsURL.absoluteString == "http://127.0.0.1:9000/oauth2/v3/certs")
    }

    @Test func everyProblemIsReportedWithItsPath() {
        let file = """
            {"packageName": "not a package", "googlePlay": {"serviceAccountKeyFile": "key.json", \(Self.pubsub)}},
            {"packageName": "com.example.b", "bundleId": "com.example.b"},
            {"packageName": "com.example.c", "googlePlay": {"serviceAccountKeyFile": "missing.json", "voidedPurchasesPollMinutes": 1,
             "apiBaseURL": "ftp://x", "pubsub": {"serviceAccountEmail": "nobody"}, "extra": 1,
             "refundReviews": {"autoRespond": "yes", "refundPreference": "decline", "other": 1}},
             "products": [{"productId": "p", "type": "nonRenewing"}, {"productId": "q", "type": "consumable", "basePlans": ["m"]},
                          {"productId": "r", "type": "autoRenewable", "basePlans": []}]},
            {"packageName": "com.example.d", "googlePlay": {"serviceAccountKeyFile": "broken.json"}},
            {"packageName": "com.example.e"}
            """
        let error = #expect(throws: ConfigurationError.self) { try parse(file) }
        let paths = Set(error?.all.map(\.path) ?? [])
        for expected in [
            "apps[0].packageName", "apps[1].bundleId", "apps[2].googlePlay.serviceAccountKeyFile", "apps[2].googlePlay.voidedPurchasesPollMinutes",
            "apps[2].googlePlay.apiBaseURL", "apps[2].googlePlay.pubsub.audience", "apps[2].googlePlay.pubsub.serviceAccountEmail",
            "apps[2].googlePlay.extra", "apps[2].googlePlay.refundReviews.autoRespond", "apps[2].googlePlay.refundReviews.refundPreference",
            "apps[2].googlePlay.refundReviews.other", "apps[2].products[0].type", "apps[2].products[1].basePlans", "apps[2].products[2].basePlans",
            "apps[3].googlePlay.serviceAccountKeyFile", "apps[3].googlePlay.pubsub", "apps[4].googlePlay",
        ] {
            #expect(paths.contains(expected), "\(expected) in \(paths.sorted())")
        }
    }

    @Test func duplicatePackageNamesAreRefused() {
        let app = #"{"packageName": "com.example.app", "googlePlay": {"serviceAccountKeyFile": "key.json", \#(Self.pubsub)}}"#
        let error = #expect(throws: ConfigurationError.self) { try parse(app + "," + app) }
        #expect(error?.all.contains { $0.message.contains("duplicate packageName") } == true)
    }
}
