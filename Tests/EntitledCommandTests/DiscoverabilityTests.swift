@testable import EntitledTestSupport
import Foundation
import Testing

/// What a newcomer reads first names what there is: the README lists every command `entitled --help`
/// lists, and the README, `serve --help` and `dev`'s start-up lines name the console, the webhooks
/// guide and EntitledKit.
@Suite struct DiscoverabilityTests {
    static let readme = FirstStartTests.root.appendingPathComponent("README.md")

    /// The README's `entitled` tool section (up to the next heading).
    static func toolSection() throws -> String {
        let text = try String(contentsOf: readme, encoding: .utf8)
        let start = try #require(text.range(of: "## The `entitled` tool"))
        let rest = text[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)])
    }

    @Test func theReadmeListsEveryCommandOfTheHelp() async throws {
        let help = try await CLI.run(["--help"])
        let listed = help.stdout.components(separatedBy: "Commands:\n").last?.split(separator: "\n")
            .prefix { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first.map(String.init) } ?? []
        #expect(listed.count >= 13)
        let section = try Self.toolSection()
        for command in listed { #expect(section.contains("entitled \(command) "), "README lacks entitled \(command)") }
    }

    @Test func theReadmeNamesTheConsoleWebhooksAndEntitledKitAndKeepsTheTwoCommandsFirst() throws {
        let text = try String(contentsOf: Self.readme, encoding: .utf8)
        let headings = text.split(separator: "\n").filter { $0.hasPrefix("## ") }
        #expect(headings.first == "## Two commands")
        for name in ["/console", "docs/operations.md#webhooks", "EntitledKit.docc"] { #expect(text.contains(name), "\(name)") }
        // The test suite's details are for contributors, after what a user needs.
        let contributing = try #require(text.range(of: "## Contributing"))
        let fuzz = try #require(text.range(of: "libFuzzer"))
        #expect(fuzz.lowerBound > contributing.lowerBound)
    }

    @Test func serveHelpNamesTheConsoleWebhooksAndEntitledKit() async throws {
        let help = try await CLI.run(["serve", "--help"]).stdout
        for name in ["/console", "docs/operations.md#webhooks", "EntitledKit"] { #expect(help.contains(name), "\(name)") }
    }

    @Test func devStartupLinesNameTheConsoleWebhooksAndEntitledKit() async throws {
        let dev = try await ServeProcess.start { DevRestartTests.devArguments($0, ["--no-seed"]) }
        dev.terminate()
        let lines = dev.remainingOutput().split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("Console:   http://127.0.0.1:\(dev.port)/console") })
        #expect(lines.contains { $0.hasPrefix("Webhooks:  ") && $0.contains("docs/operations.md#webhooks") })
        #expect(lines.contains { $0.hasPrefix("Your app:  EntitledKit") })
    }
}
