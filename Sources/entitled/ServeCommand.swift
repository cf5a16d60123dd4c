/// `entitled serve`: runs the HTTP server.
enum ServeCommand: Command {
    static let name = "serve"
    static let summary = "run the server"
    static let help = "Usage: entitled serve [--config FILE] [--listen HOST:PORT] [--database URL]"
    static func run(_ arguments: inout Arguments) async throws -> Int32 { 0 }
}
