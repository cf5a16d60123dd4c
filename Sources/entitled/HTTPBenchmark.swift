/// `entitled bench http`.
enum HTTPBenchmark: Command {
    static let name = "http"
    static let summary = "HTTP server throughput with wrk"
    static let help = "Usage: entitled bench http"
    static func run(_ arguments: inout Arguments) async throws -> Int32 { 0 }
}
