import EntitledBenchmarks

// `entitled bench <target>`: each target's options and help; the EntitledBenchmarks target runs it.

enum HTTPBenchmarkCommand: Command {
    static let name = "http"
    static let summary = "HTTP server throughput and latency (GET /healthz, wrk, keep-alive)"
    static let help = """
        Usage: entitled bench http [--connections N] [--duration SECONDS] [--wrk-threads N] [--no-access-log]

        Starts the server in this process on a free loopback port and runs wrk (Debian's 'wrk')
        against GET /healthz over keep-alive connections, plain HTTP then HTTPS (a self-signed
        certificate minted for the run). Prints requests/s and latency percentiles, one line each.
        The access log is on (written to /dev/null) unless --no-access-log, as in production.

        Defaults: 32 connections, 10 seconds, 2 wrk threads. Target on 2 cores: 50,000 requests/s.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        var options = HTTPBenchmark.Options()
        options.connections = try arguments.option("--connections", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? 32
        options.duration = try arguments.option("--duration", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? 10
        options.wrkThreads = try arguments.option("--wrk-threads", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? 2
        options.accessLog = !arguments.flag("--no-access-log")
        try arguments.finish()
        return try await HTTPBenchmark.run(options) ? ExitStatus.ok : ExitStatus.failure
    }
}

enum EngineBenchmarkCommand: Command {
    static let name = "engine"
    static let summary = "entitlement engine: µs per evaluation at 10, 100 and 1,000 facts"
    static let help = """
        Usage: entitled bench engine [--seconds S]

        Times evaluate(facts:policy:now:) for one customer with 10, 100 and 1,000 facts: a monthly
        subscription renewing period after period, each period bringing its transaction, renewal info
        and DID_RENEW notification, in shuffled arrival order with a few duplicates. Prints
        microseconds per evaluation (the fastest batch, and the mean), the per-fact cost, and
        whether the cost grows at most linearly and stays well under a millisecond (< 250 µs) at
        1,000 facts (exit status 1 if not).

        Options:
          --seconds S   measuring time per size (default 1; build with -c release for real figures)
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let seconds = try arguments.option("--seconds", as: "a positive number") { Double($0).flatMap { $0 > 0 ? $0 : nil } } ?? 1
        try arguments.finish()
        return try await EngineBenchmark.run(seconds: seconds) ? ExitStatus.ok : ExitStatus.failure
    }
}

enum VerifyBenchmarkCommand: Command {
    static let name = "verify"
    static let summary = "signed-data verification throughput vs raw ES256"
    static let help = """
        Usage: entitled bench verify [--count N] [--rounds R]

        Signs N V2 notifications (each with a signed transaction and renewal info) with a fresh test CA,
        then measures: (a) raw ES256 verifications/s on one core, (b) notifications verified and decoded/s
        on one core with a warm chain cache, (c) the same on all cores, and (b) ÷ ((a) ÷ 3); then the
        `entitled verify` path (verified and rendered as JSON lines): (d) on one core, (e) on all cores,
        and (d) ÷ (b).

        Options:
          --count N   notifications to generate (default 2000)
          --rounds R  measurement rounds; each figure is the best round (default 3)
          --breakdown also print the cost of each verification step (µs per notification)
        Build with -c release for meaningful figures.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        var options = VerifyBenchmark.Options()
        options.count = try arguments.option("--count", as: "a positive integer") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? 2000
        options.breakdown = arguments.flag("--breakdown")
        options.rounds = try arguments.option("--rounds", as: "a positive integer") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? 3
        try arguments.finish()
        return try await VerifyBenchmark.run(options) ? ExitStatus.ok : ExitStatus.failure
    }
}

enum ConsoleBenchmarkCommand: Command {
    static let name = "console"
    static let summary = "the console's overview and Charts API over bulk-seeded customers and their rollups"
    static let help = """
        Usage: entitled bench console [--customers N] [--requests N] [--chart-requests N]

        Bulk-loads N synthetic customers into a temporary SQLite ledger (printing the seeding rate),
        gives each a contribution to the metric rollups (a subscription started on one of the last
        730 days, renewed every 30 days for 1–13 periods, in USD or EUR) and its chart rollups (the
        same histories over two stores, three products, twelve storefronts and their currencies,
        with trials, pauses and refunds), then times GET /v1/metrics/overview for the last 365 days
        by day over HTTP (one keep-alive connection, sequential requests) and prints p50 and p99,
        then every GET /v1/charts/{chart} over the same 365 days, unsegmented and by each
        segmentation (store, product, storefront, environment, periodType), by day, week and
        month: a table per interval of p99 over HTTP and p99 of the process's CPU time per
        request (which other processes sharing the cores inflate less), then the misses.
        Targets at 1,000,000 customers: the overview under 200 ms, each chart's p99 under 100 ms.

        Defaults: 1,000,000 customers, 200 overview requests, 20 per chart, segmentation and
        interval (288 combinations).
        Build with 'swift build -c release' first.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        var options = ConsoleBenchmark.Options()
        options.customers = try arguments.option("--customers", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? options.customers
        options.requests = try arguments.option("--requests", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? options.requests
        options.chartRequests =
            try arguments.option("--chart-requests", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? options.chartRequests
        try arguments.finish()
        return try await ConsoleBenchmark.run(options) ? ExitStatus.ok : ExitStatus.failure
    }
}

enum APIBenchmarkCommand: Command {
    static let name = "api"
    static let summary = "HTTP API: durable signed-notification ingest and customer reads, with wrk"
    static let help = """
        Usage: entitled bench api [--notifications N] [--customers N] [--duration SECONDS]
                                  [--connections N] [--postgres URL] [--only sqlite|postgres]
                                  [--webhook-rounds N]

        0. Verification: bench verify's (b) on one dedicated thread, V2 notifications fully
           verified per CPU-second, and its ratio to the raw ES256 limit on that thread (target 0.8).
        1. Ingest: N really signed V2 notifications (each with a signed transaction and renewal
           info, so 3 ES256 checks; each a new subscription of one of N existing customers, so it
           links the subscription and recomputes that customer's answer) POSTed once each by wrk
           over --connections keep-alive connections to the server in this process, every 200 a
           durable commit; on SQLite
           (a temporary file, WAL fsynced before each answer) and on PostgreSQL (--postgres URL or
           ENTITLED_TEST_POSTGRES). Prints notifications/s and the ratio to the raw ES256 limit,
           (ES256 verifications/s on all cores, measured in the same run) / 3. Target on SQLite: 0.5.
           Each ingest line also gives this process's CPU time per notification (the server
           runs in it, wrk does not), so a change's cost in work shows beside its rate.
           Before SQLite, the same bodies once more with the ledger's commit skipped: what HTTP,
           verification and mapping alone reach, so the ledger's share is visible; after the
           durable SQLite line, the ledger's process CPU per notification over that path (target at
           most 250 µs) and the durable rate over its rate (target 0.5). On PostgreSQL the line
           adds PostgreSQL's CPU per notification when it runs on this machine.
        Then --webhook-rounds (default 3; 0 skips) alternated rounds of the same ingest on SQLite
           without webhooks and with one endpoint delivering to a receiver on loopback (a fresh
           database each run): notifications/s of each, their means and the difference (target:
           the outbox and delivery cost at most 10 %), and deliveries/s of each run.
        2. Reads: GET /v1/customers/{id} for random ids over --customers customers (SQLite) with
           wrk for --duration seconds. Prints requests/s and latency percentiles.
           Target on 2 cores: 30,000 requests/s, p99 under 2 ms.
           Then nginx (when installed: PATH or /usr/sbin) serving one customer's answer as a static
           file under the same wrk settings, started by the benchmark on a loopback port with a
           configuration of its own; the reads over nginx's rate (target 0.5) and their p99
           against nginx's (target under 2 ms). Without nginx: "nginx not installed".
           The seeded customers are current ones (each with its stored contribution to the metric
           rollups), so the server's metric backfill finds nothing to do beside the timed requests.
        3. PostgreSQL scale-out: the same ingest, then --duration seconds of reads of the N
           customers, through 1 and then 2 'entitled serve' child processes (this executable) on
           one database (a fresh schema each; the connections and wrk threads split between the
           processes). Prints the rates, the ratio 2/1, and the CPU each server process,
           PostgreSQL (when on this machine) and the whole machine used, per second and per
           notification or read (docs/scaling.md).
        4. Stored bytes per notification on each database, bench store's measurement (2,200
           notifications, one customer each, its ingest with 32 writers; target at most 1,500).
        Last, a summary: each target, the figure this run measured, pass or FAIL (or not measured).

        Defaults: 10,000 notifications, 100,000 customers, 10 seconds, 32 connections.
        ENTITLED_FAST_PATHS=off measures the same without the fast paths (JSON codec, projection cache).
        Build with 'swift build -c release' first.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        func positive(_ name: String) throws -> Int? {
            try arguments.option(name, as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } }
        }
        var options = APIBenchmark.Options()
        options.notifications = try positive("--notifications") ?? 10_000
        options.customers = try positive("--customers") ?? 100_000
        options.duration = try positive("--duration") ?? 10
        options.connections = try positive("--connections") ?? 32
        options.postgres = try arguments.option("--postgres")
        options.only = try arguments.option("--only")
        options.webhookRounds = try arguments.option("--webhook-rounds", as: "a number") { Int($0).flatMap { $0 >= 0 ? $0 : nil } } ?? 3
        options.fastPaths = fastPaths
        try arguments.finish()
        if let only = options.only, only != "sqlite" && only != "postgres" { throw UsageError("--only must be sqlite or postgres") }
        return try await APIBenchmark.run(options) ? ExitStatus.ok : ExitStatus.failure
    }
}

enum StoreBenchmarkCommand: Command {
    static let name = "store"
    static let summary = "ledger ingest rate and customer-read latency (SQLite, PostgreSQL)"
    static let help = """
        Usage: entitled bench store [--postgres URL] [--customers LIST] [--postgres-customers LIST]
                                    [--notifications N] [--reads N] [--only sqlite|postgres]

        Durable ingest rate (notifications/s, each an Apple-sized V2 notification — x5c chains of
        Apple's certificate sizes, a nested transaction and renewal — stored as a notification row
        and three facts, with a customer link and a projection recomputation, committed durably:
        the WAL fsynced before the answer) with 1 and 32 concurrent writers, and after the second
        the ledger's bytes on disk per notification (its tables and indexes, after a checkpoint or
        VACUUM) and the growth of every other table and index per notification;
        then customer-read p50/p99 of the projection read at growing customer counts (after one scan
        of the stored answers, so the reader has the file mapped as a running server has), the p50
        ratio between the largest and the smallest count (target: at most 1.5), and bytes per customer.

        SQLite uses a temporary file. PostgreSQL runs when --postgres or ENTITLED_TEST_POSTGRES gives
        a URL (each run uses a schema of its own, dropped afterwards).

        Options:
          --postgres URL             a libpq URL
          --customers LIST           SQLite read sizes (default 10000,100000,1000000)
          --postgres-customers LIST  PostgreSQL read sizes (default 10000,100000)
          --notifications N          notifications per writer configuration (default 4000)
          --reads N                  timed reads per size (default 20000)
          --only sqlite|postgres     run one backend only
        Build with 'swift build -c release' for meaningful figures.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        var options = StoreBenchmark.Options()
        options.postgres = try arguments.option("--postgres")
        options.sizes = try arguments.option("--customers", as: "a list of counts", parseList) ?? options.sizes
        options.postgresSizes = try arguments.option("--postgres-customers", as: "a list of counts", parseList) ?? options.postgresSizes
        options.notifications = try arguments.option("--notifications", as: "a count", { Int($0) }) ?? options.notifications
        options.reads = try arguments.option("--reads", as: "a count", { Int($0) }) ?? options.reads
        options.only = try arguments.option("--only")
        guard options.only == nil || options.only == "sqlite" || options.only == "postgres" else {
            throw UsageError("--only must be sqlite or postgres")
        }
        try arguments.finish()
        return try await StoreBenchmark.run(options) ? ExitStatus.ok : ExitStatus.failure
    }

    static func parseList(_ text: String) -> [Int]? {
        let values = text.split(separator: ",").compactMap { Int($0) }
        return values.isEmpty ? nil : values
    }
}

enum RetentionBenchmarkCommand: Command {
    static let name = "retention"
    static let summary = "Apple's Get Retention Message requests at a fixed rate: p50/p99 latency"
    static let help = """
        Usage: entitled bench retention [--rate N] [--duration SECONDS] [--subscriptions N]

        Starts the server in this process on a temporary SQLite database trusting a test CA, posts
        --subscriptions signed notifications (one subscription each), then sends signed retention
        requests (POST /v1/apple/retention; a tenth name unknown subscriptions) over loopback HTTP at
        --rate requests/s for --duration seconds, open loop: each request leaves at its scheduled
        time and its latency counts from then, so a stall is not hidden. Each answer includes the
        verification, the ledger read, the rules, a promotional-offer signature for most, and the
        record. Prints the achieved rate and latency p50, p99, p99.9 and max.

        Defaults: 1,000 requests/s, 10 seconds, 2,000 subscriptions. Target on 2 cores: p99 under
        10 ms at 1,000 requests/s (exit status 1 if missed). Build with -c release for real figures.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        var options = RetentionBenchmark.Options()
        options.rate = try arguments.option("--rate", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? 1_000
        options.duration = try arguments.option("--duration", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? 10
        options.subscriptions =
            try arguments.option("--subscriptions", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } } ?? 2_000
        try arguments.finish()
        return try await RetentionBenchmark.run(options) ? ExitStatus.ok : ExitStatus.failure
    }
}
