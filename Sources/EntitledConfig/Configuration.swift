import enum Entitlements.RestoreBehavior
import struct Entitlements.RetentionRuleSet
import struct Entitlements.WinBackOfferRule
import Foundation
import HTTPServer
import enum Storage.ReadYourWrites

/// The whole configuration of an `entitled` server (the JSON file documented in docs/configuration.md).
public struct Configuration: Sendable, Equatable {
    /// Where the HTTP server listens.
    public var listen: ListenAddress = .default
    /// `sqlite:PATH` (embedded default) or `postgres://…` / `postgresql://…`.
    public var database: String = Configuration.defaultDatabase
    /// PostgreSQL streaming replicas (`database.replicas`) that serve customer reads once they have
    /// replayed this process's last commit; empty (the default) reads the primary.
    public var databaseReplicas: [String] = []
    /// With replicas (`database.readYourWrites`): whether a customer read sees that customer's
    /// writes made through every server (default) or through this one only.
    public var databaseReadYourWrites: ReadYourWrites = .allServers
    /// Storage limits and retention (the `storage` section).
    public var storage: StorageSettings = StorageSettings()
    /// Keys for the customer and admin API.
    public var apiKeys: [APIKey] = []
    /// The apps whose purchases this server tracks.
    public var apps: [App] = []
    /// The `apps[]` entries with a `packageName`: Android apps sold through Google Play.
    public var playApps: [PlayApp] = []
    /// HTTP limits.
    public var http: HTTPSettings = HTTPSettings()
    /// Upper bound of `Cache-Control: max-age` on customer answers, in seconds.
    public var cacheTTLSeconds: Int = 3600
    /// Per-customer tokens (JWT HS256) for apps that call the API directly; nil disables them.
    public var customerTokens: CustomerTokenSettings?
    /// HTTPS on `listen` (the `tls` section); nil serves plain HTTP.
    public var tls: TLSSettings?
    /// Log format and level (the `log` section).
    public var log = LogSettings()
    /// A second address serving only `GET /metrics`, without credentials (plain HTTP); nil: none.
    public var metricsListen: ListenAddress?
    /// Webhook endpoints events are delivered to (`webhooks`; default none).
    public var webhooks: [WebhookEndpoint] = []
    /// Analytics and chat tools events are delivered to (`integrations`; default none).
    public var integrations: [IntegrationEndpoint] = []
    /// Scheduled exports of the tables to S3-compatible stores or folders (`exports`; default none).
    public var exports: [ExportSettings] = []
    /// Offerings and targeting to start an empty database with (`paywall`; docs/offerings.md).
    public var paywall: PaywallSeed?
    /// How long answer-change events are held back before they are released (`events`).
    public var events = EventSettings()
    /// Offer-signing rate limits and the signature log's retention (`offerSigning`).
    public var offerSigning = OfferSigningSettings()
    /// The console's reporting currency and rates (`console`; default none).
    public var console = ConsoleSettings()
    /// Where `listen` and `database` came from, and which values of the file the environment replaced.
    public var sources = SettingSources()
    /// Rate limits of anonymous customers' creation, refresh and login (`appKeyRateLimits`).
    public var appKeyRateLimits = AppKeyRateLimits()

    public static let defaultDatabase = "sqlite:./data/entitled.sqlite"

    public init() {}

    /// The app with this bundle identifier.
    public func app(bundleId: String) -> App? { apps.first { $0.bundleId == bundleId } }
}

/// `HOST:PORT`, with IPv6 hosts in brackets (`[::1]:8080`).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public static let `default` = ListenAddress(host: "127.0.0.1", port: 8080)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; nil when malformed or the port is out of range.
    public init?(parsing text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else { return nil }
        self.host = String(host)
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Per-customer bearer tokens: JWTs signed with HS256 under `secret`, `sub` = appUserId, `exp` required.
public struct CustomerTokenSettings: Sendable, Equatable {
    /// Default of ``maxLifetimeSeconds``: one day.
    public static let defaultMaxLifetimeSeconds = 86_400
    /// Bounds of ``maxLifetimeSeconds`` accepted from a configuration file: a minute to a year.
    public static let maxLifetimeSecondsRange = 60...31_536_000

    /// The resolved HMAC secret (never logged); at least 32 characters.
    public var secret: String
    /// A token whose `exp` lies further than this beyond now is refused (401), so a leaked token
    /// cannot have been minted to last forever.
    public var maxLifetimeSeconds: Int

    public init(secret: String, maxLifetimeSeconds: Int = defaultMaxLifetimeSeconds) {
        self.secret = secret
        self.maxLifetimeSeconds = maxLifetimeSeconds
    }
}

/// An API key: a bearer secret with scopes.
public struct APIKey: Sendable, Equatable {
    public enum Scope: String, Sendable, CaseIterable {
        case read, write, admin
        /// `GET /metrics` only.
        case metrics
        /// The console (`/console`, `/v1/metrics/…`, `/v1/console/…`) and every customer's
        /// answer and history: read-only.
        case console
    }

    public var name: String
    /// The resolved secret (never logged).
    public var secret: String
    public var scopes: Set<Scope>

    public init(name: String, secret: String, scopes: Set<Scope>) {
        self.name = name
        self.secret = secret
        self.scopes = scopes
    }
}

/// One app: its identity at Apple, trust roots, secrets and catalog.
public struct App: Sendable, Equatable {
    public var bundleId: String
    /// Required when Production is among the environments.
    public var appAppleId: Int64?
    /// Accepted environments: `Production`, `Sandbox`, `Xcode`, `LocalTesting`.
    public var environments: [String]
    /// Environments whose purchases grant access in customer answers (merged over every app:
    /// an environment grants when any app lists it). Default `Production` and `Sandbox`, so that
    /// TestFlight and App Review purchases count; may be empty.
    public var grantEnvironments: [String]
    /// DER or PEM files of trusted roots; empty means the bundled Apple Root CA - G3.
    public var appleRootCertificates: [String]
    /// DER or PEM files of the roots app receipts (PKCS#7) chain to; empty means the bundled
    /// Apple Root CA and Apple Root CA - G3.
    public var receiptRootCertificates: [String] = []
    /// The V1 shared secret (`password` of V1 notifications), if the app uses V1.
    public var sharedSecret: String?
    /// Grace days assumed when Apple gives no `gracePeriodExpiresDate` (V1, verifyReceipt).
    public var gracePeriodDays: Int
    /// What happens when a purchase already linked to one customer is posted by another
    /// (the engine's one `RestoreBehavior`, applied by the ledger's links).
    public var restoreBehavior: RestoreBehavior
    public var products: [Product]
    /// The App Store Server API key and reconciliation schedule (`serverAPI`); nil: the server never calls Apple.
    public var serverAPI: ServerAPISettings?
    /// The in-app purchase key offers are signed with (`signingKey`); nil: the server signs no offers.
    public var signingKey: SigningKeySettings?
    /// `consumption.autoRespond`: answer Apple's `CONSUMPTION_REQUEST`s from the ledger (needs
    /// `serverAPI`); false leaves the answer to the app's backend.
    public var consumptionAutoRespond = false
    /// `finishTransactions`: call Apple's Finish Transaction for each transaction once it is
    /// stored (a durable job; needs `serverAPI`), so the app need not finish it on the device.
    public var finishTransactions = false
    /// Public keys the app ships to create anonymous customers (`appKeys`); empty: none.
    public var appKeys: [AppKey] = []
    /// `allowAppKeyLogin`: an anonymous customer may log in to any id without a backend-minted
    /// token (docs/app-keys.md explains the risk). Off by default.
    public var allowAppKeyLogin = false
    /// `retention`: the rules that answer the App Store's retention-messaging requests
    /// (docs/retention.md); nil: the server answers none.
    public var retention: RetentionRuleSet?

    public init(
        bundleId: String, appAppleId: Int64? = nil, environments: [String] = ["Production", "Sandbox"],
        appleRootCertificates: [String] = [], sharedSecret: String? = nil, gracePeriodDays: Int = 16,
        restoreBehavior: RestoreBehavior = .transfer, products: [Product] = [],
        grantEnvironments: [String] = ["Production", "Sandbox"]
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
        self.grantEnvironments = grantEnvironments
        self.appleRootCertificates = appleRootCertificates
        self.sharedSecret = sharedSecret
        self.gracePeriodDays = gracePeriodDays
        self.restoreBehavior = restoreBehavior
        self.products = products
    }
}

/// `apps[].serverAPI`: the app's in-app purchase key for Apple's App Store Server API.
public struct ServerAPISettings: Sendable, Equatable {
    /// The key id, e.g. `ABC123DEFG`.
    public var keyId: String
    /// The issuer id (a UUID) of the App Store Connect team.
    public var issuerId: String
    /// The `.p8` key's PEM text (read from `privateKeyFile`, or from the variable it names with `env:NAME`).
    public var privateKeyPEM: String
    /// Calls go to Apple's earlier hosts (`api.storekit.itunes.apple.com`,
    /// `api.storekit-sandbox.itunes.apple.com`) instead of the recommended `api.storekit.apple.com`
    /// and `api.storekit-sandbox.apple.com`; both pairs answer the same calls.
    public var legacyHosts: Bool
    /// Replaces Apple's scheme, host and port for both environments; nil: Apple's hosts.
    public var baseURL: URL?
    /// How often `serve` reconciles with Apple's notification history.
    public var reconcileEveryMinutes: Int

    /// Allowed `reconcileEveryMinutes`: at least every 5 minutes, at most daily.
    public static let reconcileEveryMinutesRange = 5...1440

    public init(
        keyId: String, issuerId: String, privateKeyPEM: String, legacyHosts: Bool = false, baseURL: URL? = nil,
        reconcileEveryMinutes: Int = 60
    ) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.privateKeyPEM = privateKeyPEM
        self.legacyHosts = legacyHosts
        self.baseURL = baseURL
        self.reconcileEveryMinutes = reconcileEveryMinutes
    }
}

/// `apps[].signingKey`: the in-app purchase key the server signs subscription offers with (it may
/// be the `serverAPI` key).
public struct SigningKeySettings: Sendable, Equatable {
    /// The key id (`keyIdentifier` of a v1 signature, `kid` of a JWS).
    public var keyId: String
    /// The App Store Connect team's issuer id (`iss` of a JWS).
    public var issuerId: String
    /// The `.p8` key's PEM text, checked at load to be a P-256 private key.
    public var privateKeyPEM: String

    public init(keyId: String, issuerId: String, privateKeyPEM: String) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.privateKeyPEM = privateKeyPEM
    }
}

/// A product in an app's catalog.
public struct Product: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case autoRenewable, nonConsumable, consumable, nonRenewing
    }

    public var productId: String
    public var type: Kind
    public var subscriptionGroup: String?
    /// Service level within the group: 1 is the highest, as in App Store Connect.
    public var level: Int?
    /// ISO 8601 duration (`P1M`); required for non-renewing subscriptions.
    public var duration: String?
    public var entitlements: [String]
    /// ISO 3166-1 alpha-3 storefronts where it is sold; nil means everywhere.
    public var storefronts: [String]?
    /// Promotional offer identifiers (`offers.promotional`, auto-renewable products only).
    public var promotionalOffers: [String] = []
    /// Win-back offers and the lapse they require (`offers.winBack`, auto-renewable products only).
    public var winBackOffers: [WinBackOfferRule] = []

    public init(
        productId: String, type: Kind, subscriptionGroup: String? = nil, level: Int? = nil, duration: String? = nil,
        entitlements: [String] = [], storefronts: [String]? = nil
    ) {
        self.productId = productId
        self.type = type
        self.subscriptionGroup = subscriptionGroup
        self.level = level
        self.duration = duration
        self.entitlements = entitlements
        self.storefronts = storefronts
    }

    /// Whether the product is sold in `storefront` (ISO 3166-1 alpha-3, case-insensitive).
    public func isSold(in storefront: String) -> Bool {
        guard let storefronts else { return true }
        return storefronts.contains { $0.caseInsensitiveCompare(storefront) == .orderedSame }
    }
}

/// HTTP server limits (see `HTTPServer.Configuration` for what each one does).
public struct HTTPSettings: Sendable, Equatable {
    public var maxBodyBytes: Int = 1 << 20
    public var maxHeaderBytes: Int = 16 * 1024
    public var maxURLBytes: Int = 8 * 1024
    public var connectionLimit: Int = 4096
    /// 0 means no per-IP limit.
    public var perIPConnectionLimit: Int = 64
    public var idleTimeoutSeconds: Int = 30
    public var headerTimeoutSeconds: Int = 5
    /// Peers whose `X-Forwarded-For` names the client.
    public var trustedProxies: [CIDR] = []
    /// 0 means one poll thread per core.
    public var threads: Int = 0
    public var accessLog: Bool = true
    public var shutdownGraceSeconds: Int = 10

    public init() {}
}

/// The `storage` section: how long audit records are kept and how long the database may take.
public struct StorageSettings: Sendable, Equatable {
    /// Days a rejected message's audit record is kept before the periodic purge deletes it (1–3650).
    public var rejectedRetentionDays: Int = 30
    /// PostgreSQL: longest a statement may run, and longest the server waits for any answer from
    /// the database, in milliseconds (100–600000); past it the request answers 503.
    public var statementTimeoutMilliseconds: Int = 5000
    /// PostgreSQL: longest a connection attempt may take, in seconds (1–600).
    public var connectTimeoutSeconds: Int = 5
    /// PostgreSQL: connections this process keeps to the primary, and to each replica (1–100).
    public var connections: Int = 8

    public init() {}
}
