import EntitledServer
import Foundation

/// The `entitled` command-line tool.
@main
enum Entitled {
    static let version = ServerMetrics.version

    /// Every subcommand, in the order `--help` lists them.
    static var commands: [any Command.Type] {
        [
        ServeCommand.self,
        ConfigCommand.self,
        DevCommand.self,
        VerifyCommand.self,
        MigrateCommand.self,
        RebuildCommand.self,
        CheckCommand.self,
        BackupCommand.self,
        ExportCustomerCommand.self,
        ReconcileCommand.self,
        RetentionCommand.self,
        ImportCommand.self,
        BenchCommand.self,
        StorageCrashChildCommand.self,
        SimulateCommand.self,
        WebhookSecretCommand.self,
        WebhookSignCommand.self,
        ]
    }

    static var help: String {
        // Names starting with "_" are test helpers, left out of the help.
        let listed = commands.filter { !$0.name.hasPrefix("_") }
        let width = listed.map { $0.name.count }.max() ?? 0
        let lines = listed.map { "  " + $0.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.summary }
        return """
            entitled \(version) — a self-hosted App Store subscription and entitlement server

            Usage: entitled <command> [options]
                   entitled --help | --version
                   entitled <command> --help

            Commands:
            \(lines.joined(separator: "\n"))

            Exit status: 0 success, 1 runtime failure, 2 bad input or usage.
            """
    }

    static func main() async {
        var tokens = Array(CommandLine.arguments.dropFirst())
        let status = await run(&tokens)
        exit(status)
    }

    static func run(_ tokens: inout [String]) async -> Int32 {
        guard let first = tokens.first else {
            printError(help)
            return ExitStatus.usage
        }
        switch first {
        case "--help", "-h", "help":
            print(help)
            return ExitStatus.ok
        case "--version", "-V", "version":
            print("entitled \(version)")
            return ExitStatus.ok
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            printError("entitled: unknown command '\(first)' (see 'entitled --help')")
            return ExitStatus.usage
        }
        var arguments = Arguments(Array(tokens.dropFirst()))
        if arguments.wantsHelp {
            print(command.help(for: arguments))
            return ExitStatus.ok
        }
        do {
            return try await command.run(&arguments)
        } catch let error as UsageError {
            printError("entitled \(command.name): \(error.description)")
            return ExitStatus.usage
        } catch StartupError.configuration(let message) {
            printError("entitled \(command.name): \(message)")
            return ExitStatus.usage
        } catch {
            printError("entitled \(command.name): \(error)")
            return ExitStatus.failure
        }
    }
}
