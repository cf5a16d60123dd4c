import Foundation

/// `entitled bench <target>`: measures one part of the system and prints its figures.
enum BenchCommand: Command {
    static let name = "bench"
    static let summary = "measure throughput and latency (http, verify, engine, …)"

    /// Each benchmark is itself a command named after its target.
    static var targets: [any Command.Type] {
        [
        HTTPBenchmarkCommand.self,
        EngineBenchmarkCommand.self,
        VerifyBenchmarkCommand.self,
        StoreBenchmarkCommand.self,
        APIBenchmarkCommand.self,
        RetentionBenchmarkCommand.self,
        ConsoleBenchmarkCommand.self,
        ]
    }

    static var help: String {
        let lines = targets.map { "  \($0.name.padding(toLength: 10, withPad: " ", startingAt: 0))\($0.summary)" }
        return """
            Usage: entitled bench <target> [options]

            Targets:
            \(lines.joined(separator: "\n"))

            'entitled bench <target> --help' describes each target's options.
            """
    }

    static func help(for arguments: Arguments) -> String {
        guard let word = arguments.first, let target = targets.first(where: { $0.name == word }) else { return help }
        return target.help
    }

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let word = arguments.first else { throw UsageError("missing target (see 'entitled bench --help')") }
        guard let target = targets.first(where: { $0.name == word }) else {
            throw UsageError("unknown bench target '\(word)'")
        }
        arguments.dropFirst()
        return try await target.run(&arguments)
    }
}
