import EntitledConfig
import EntitledServer
import Foundation
import HTTPClient
import Storage

/// `bench api`'s reads: a customer's answer and the offering their paywall shows, over the same
/// customers in one server, in alternating rounds of the same length.
extension APIBenchmark {
    /// Prints the reads' lines and, when nginx is installed, its reference's; returns the figures.
    static func reads(
        configuration: Configuration, folder: URL, customerCount: Int, duration: Int, connections: Int, now: Int64,
        fastPaths: FastPaths, wrk: String
    ) async throws -> (customers: WrkReport, nginx: WrkReport?) {
        // Written with the ingest's script at the start (``writeScripts(in:)``).
        let readScript = folder.appendingPathComponent("read.lua")
        let store = try await openStore(url: "sqlite:\(folder.path)/reads.sqlite")
        print("loading \(customerCount) customers…")
        let ledger = FactLedger(store: store, configuration: configuration, cache: fastPaths.projectionCache())
        try await _StorageBenchmark.bulkLoad(store, customers: 0..<customerCount, now: now) { n, user, token in
            syntheticProjection(n: n, user: user, token: token, now: now, projector: ledger.projector)
        }
        // Each answer rendered and stored once, as the first read after a change does: the
        // timed reads measure the hit. Many at once, so that the stores share commits.
        try await withThrowingTaskGroup(of: Void.self) { group in
            let workers = 32
            for worker in 0..<workers {
                group.addTask {
                    for n in stride(from: worker, to: customerCount, by: workers) {
                        _ = try await ledger.renderedCustomer(
                            appUserId: _StorageBenchmark.appUserId(n), context: ledger.answerContext(now: now))
                    }
                }
            }
            try await group.waitForAll()
        }
        // A paywall as an app would have it: a current offering with copy, and a rule on the
        // customer's state (answered from their rendered answer, like the rest of the choice).
        let offering = #"""
            {"id":"default","description":"Monthly","metadata":{"title":"Go Pro","subtitle":"Every feature, every device","highlight":"$monthly"},
             "packages":[{"id":"$monthly","products":{"appStore":"pro.monthly","playStore":"pro_monthly"}}]}
            """#
        let winback = #"{"id":"winback","packages":[{"id":"$monthly","products":{"appStore":"pro.monthly"}}]}"#
        let rules = #"{"rules":[{"id":"lapsed","when":{"states":["inactive"]},"offeringId":"winback"}]}"#
        _ = try await store.changePaywall(actor: "bench", now: now) { _ in
            [
                .putOffering(id: "default", document: offering), .putOffering(id: "winback", document: winback),
                .setCurrent(offeringId: "default"), .setTargeting(document: rules),
            ]
        }
        // The same wrk settings for the server's reads and for nginx's.
        func wrkArguments(_ url: String, suffix: String = "", seconds: Int = duration) -> [String] {
            ["-t2", "-c\(connections)", "-d\(seconds)s", "--latency", "-s", readScript.path, url, "--", String(customerCount), benchSecret, suffix]
        }
        let (customers, offerings, answer) = try await withServer(configuration: configuration, store: store, fastPaths: fastPaths) { port in
            func run(_ suffix: String) async throws -> WrkReport {
                let output = try await Executable.run(wrk, wrkArguments("http://127.0.0.1:\(port)", suffix: suffix, seconds: 1))
                guard let report = WrkReport(parsing: output) else { throw BenchmarkError("could not read wrk's output:\n\(output)") }
                return report
            }
            // One customer's answer as the reads get it: what nginx serves as its static file.
            let reply = try await CurlHTTP().send(
                OutboundRequest(
                    method: "GET", url: URL(string: "http://127.0.0.1:\(port)/v1/customers/\(_StorageBenchmark.appUserId(0))")!,
                    headers: ["Authorization": "Bearer \(benchSecret)"]))
            guard reply.status == 200 else { throw BenchmarkError("GET /v1/customers/user-0 answered \(reply.status)") }
            // The two reads alternate in one-second rounds, `duration` of each in all, in the order
            // customer, offerings, offerings, customer, customer, …: on a shared machine the rate
            // drifts over a run, and one long run of each put that drift on whichever ran second.
            var rounds: (customers: [WrkReport], offerings: [WrkReport]) = ([], [])
            for round in 0..<max(1, duration) {
                for offeringsRead in round.isMultiple(of: 2) ? [false, true] : [true, false] {
                    if offeringsRead { rounds.offerings.append(try await run("/offerings")) } else { rounds.customers.append(try await run("")) }
                }
            }
            let rates = { (reports: [WrkReport]) in reports.map { String(format: "%.0f", $0.requestsPerSecond) }.joined(separator: " ") }
            print("reads in \(rounds.customers.count) alternated 1 s rounds, requests/s: customer \(rates(rounds.customers)); offerings \(rates(rounds.offerings))")
            return (WrkReport(median: rounds.customers), WrkReport(median: rounds.offerings), reply.body)
        }
        await store.close()
        print(
            String(
                format: "reads SQLite, %d customers: %8.0f requests/s median round (target 30,000), p50 %@, p99 %@ (target < 2 ms) %@",
                customerCount, customers.requestsPerSecond, customers.p50, customers.p99,
                customers.errors == "none" ? "" : customers.errors))
        print(
            String(
                format: "offerings reads SQLite, %d customers: %8.0f requests/s median round (ratio to the customer read's median %.2f, target 1), p50 %@, p99 %@ %@",
                customerCount, offerings.requestsPerSecond, offerings.requestsPerSecond / customers.requestsPerSecond, offerings.p50,
                offerings.p99, offerings.errors == "none" ? "" : offerings.errors))
        let nginx = try await nginxReference(answer: answer, folder: folder, wrk: wrk) { wrkArguments($0) }
        if let nginx {
            print(
                String(
                    format: "nginx static, the same wrk settings, a %d-byte JSON file (a customer's answer): %8.0f requests/s, p50 %@, p99 %@ %@",
                    answer.count, nginx.requestsPerSecond, nginx.p50, nginx.p99, nginx.errors == "none" ? "" : nginx.errors))
        }
        return (customers, nginx)
    }

    /// GET a random customer of `user-0` … `user-(N-1)`, or with a path suffix one of their
    /// sub-resources (`/offerings`).
    static let readLua = """
        function init(args)
          count = tonumber(args[1])
          wrk.headers["Authorization"] = "Bearer " .. args[2]
          suffix = args[3] or ""
          math.randomseed(os.time() + id_seed())
        end
        function id_seed() return math.floor(os.clock() * 1000000) end
        function request()
          return wrk.format("GET", "/v1/customers/user-" .. math.random(0, count - 1) .. suffix)
        end
        """
}
