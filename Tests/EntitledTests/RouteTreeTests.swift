import EntitledConfig
import EntitledServer
import Entitlements
import Storage
import Testing

@testable import HTTPServer

/// The router walks its tree of segments; the plain scan of every route of the path's length is
/// the reference. Over the server's own routes, every request shape must resolve alike.
@Suite struct RouteTreeTests {
    @Test func theTreeResolvesLikeTheScanOverTheServersRoutes() async throws {
        let store = try await openStore(url: "sqlite::memory:")
        defer { Task { await store.close() } }
        let application = Application(
            configuration: Configuration(), verifier: Unused(), ledger: FactLedger(store: store, policy: Policy()))
        let router = application.router
        let patterns = router.registeredRoutes.map(\.pattern)
        // Each segment a pattern has, so that a parameter also meets every literal it could shadow.
        let words = Set(patterns.flatMap { $0.split(separator: "/").map(String.init) }).filter { !$0.hasPrefix("{") }
        var paths: Set<String> = ["/", "", "//", "/v1", "/v1/", "/nope"]
        for pattern in patterns {
            let segments = pattern.split(separator: "/").map(String.init)
            for filler in ["x", "user-1", "a%2Fb"] + words.sorted() {
                let filled = segments.map { $0.hasPrefix("{") ? filler : $0 }
                paths.insert("/" + filled.joined(separator: "/"))
                paths.insert("/" + filled.joined(separator: "/") + "/")
                paths.insert("/" + (filled + ["extra"]).joined(separator: "/"))
                paths.insert("/" + filled.dropLast().joined(separator: "/"))
            }
        }
        let methods: [HTTPMethod] = [.get, .head, .post, .put, .patch, .delete, .options, HTTPMethod("PROPFIND")]
        var compared = 0
        for path in paths {
            for method in methods {
                #expect(
                    Self.describe(router.resolve(method, path)) == Self.describe(router.resolveByScan(method, path)),
                    "\(method) \(path)")
                compared += 1
            }
        }
        #expect(compared > 10_000)
        // Both find the server's routes at all (a tree that found nothing would agree on nothing).
        #expect(Self.describe(router.resolve(.get, "/v1/customers/u1/offerings")).hasPrefix("found GET /v1/customers/{appUserId}/offerings"))
    }

    /// Overlapping patterns in both registration orders: the first registered binding route
    /// wins whichever branch of the tree it lies on, as in the scan.
    @Test(arguments: [false, true])
    func overlappingPatternsKeepRegistrationOrder(parameterFirst: Bool) {
        var router = Router()
        let ok: Handler = .inline { _ in Response() }
        let overlapping = ["/v1/offerings/current", "/v1/offerings/{offeringId}"]
        for pattern in parameterFirst ? overlapping.reversed() : overlapping { router.add(.put, pattern, ok) }
        router.add(.get, "/v1/offerings/{offeringId}", ok)
        router.add(.get, "/v1/{resource}/current", ok)
        router.add(.delete, "/v1/customers/{appUserId}", ok)
        router.add(.get, "/", ok)
        for path in ["/v1/offerings/current", "/v1/offerings/other", "/v1/customers/current", "/v1/customers/u", "/", "/v1"] {
            for method in [HTTPMethod.get, .head, .put, .delete, .post] {
                #expect(Self.describe(router.resolve(method, path)) == Self.describe(router.resolveByScan(method, path)), "\(method) \(path)")
            }
        }
        let chosen = Self.describe(router.resolve(.put, "/v1/offerings/current"))
        #expect(chosen.hasPrefix(parameterFirst ? "found PUT /v1/offerings/{offeringId}" : "found PUT /v1/offerings/current"))
    }

    static func describe(_ resolution: Router.Resolution) -> String {
        switch resolution {
        case .found(let route, let parameters):
            "found \(route.method) \(route.pattern) \(parameters.sorted { $0.key < $1.key })"
        case .methodNotAllowed(let allow): "405 \(allow)"
        case .notFound: "404"
        }
    }
}
