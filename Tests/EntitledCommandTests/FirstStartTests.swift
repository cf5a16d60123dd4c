import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import Testing

/// "The first five minutes": the shipped example configuration, every configuration
/// problem reported at once with its path, the absolute path tried for an unreadable relative one,
/// and the line a server that can answer nothing prints at start.
@Suite struct FirstStartTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let example = root.appendingPathComponent("examples/entitled.json").path
    static let variables = [
        "ENTITLED_API_KEY": "an-api-key-of-enough-length", "ENTITLED_V1_SHARED_SECRET": "a-shared-secret",
        "ENTITLED_CUSTOMER_TOKEN_SECRET": String(repeating: "k", count: 32),
    ]

    @Test func theExampleLoadsWithItsVariables() throws {
        let configuration = try ConfigurationLoader(environment: Self.variables).load(path: Self.example)
        #expect(configuration.apiKeys.map(\.name) == ["backend"])
        #expect(configuration.apps.map(\.bundleId) == ["com.example.app"])
        #expect(configuration.apps[0].products.count == 3)
        #expect(configuration.customerTokens?.secret == Self.variables["ENTITLED_CUSTOMER_TOKEN_SECRET"])
    }

    @Test func withoutThemEachMissingVariableIsNamedWithWhatItIsFor() throws {
        #expect {
            try ConfigurationLoader(environment: [:]).load(path: Self.example)
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            let all = error.all
            return all.map(\.path) == ["apiKeys[0].secret", "apps[0].sharedSecret", "customerTokens.secret"]
                && zip(all, ["ENTITLED_API_KEY", "ENTITLED_V1_SHARED_SECRET", "ENTITLED_CUSTOMER_TOKEN_SECRET"]).allSatisfy {
                    $0.message.hasPrefix("environment variable \($1) is not set (it holds ")
                }
        }
    }

    /// Every key the reference documents is in the example, and the example has no other.
    @Test func theExampleHasEveryDocumentedKey() throws {
        let reference = try String(contentsOf: Self.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var documented = Set<String>()
        for line in reference.split(separator: "\n") where line.hasPrefix("| `") {
            documented.insert(String(line.dropFirst(3).prefix { $0 != "`" }))
        }
        // A key is in the example when it is set, or, for a section left out (`null`), explained in a
        // "//" entry as `key:`.
        var used = Set<String>()
        var explained = Set<String>()
        // A nested key counts by its name and by its dotted path (`consumption.autoRespond`).
        func collect(_ value: Any, path: String = "") {
            if let object = value as? [String: Any] {
                for (key, child) in object {
                    if key == "//" {
                        let lines = (child as? [String]) ?? [child as? String ?? ""]
                        for line in lines {
                            for word in line.split(separator: " ") where word.hasSuffix(":") && word.dropLast().allSatisfy(\.isLetter) {
                                explained.insert(String(word.dropLast()))
                            }
                        }
                        continue
                    }
                    used.insert(key)
                    if !path.isEmpty { used.insert(path + "." + key) }
                    collect(child, path: child is [String: Any] ? (path.isEmpty ? key : path + "." + key) : "")
                }
            } else if let array = value as? [Any] {
                for element in array { collect(element) }
            }
        }
        collect(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.example))))
        #expect(documented.subtracting(used.union(explained)).sorted() == [], "documented but not in the example")
        // `consumption` and `autoRespond` are documented as `consumption.autoRespond`.
        let parts = Set(documented.filter { $0.contains(".") }.flatMap { $0.split(separator: ".").map(String.init) })
        #expect(
            used.subtracting(documented).subtracting(parts).filter { !$0.contains(".") }.sorted() == [],
            "in the example but not in docs/configuration.md")
    }

    @Test func everyBadKeyIsReportedAtOnceWithItsPath() throws {
        let file = """
            {"listen": "nowhere", "cacheTTLSeconds": -1, "bogus": 1,
             "http": {"maxBodyBytes": 0, "trustedProxies": ["10.0.0.0/8", "not-a-network"], "extra": true},
             "apiKeys": [{"name": "k", "secret": "short", "scopes": ["read", "fly"]}],
             "apps": [{"bundleId": "b", "environments": ["Sandbox", "Mars"], "gracePeriodDays": 99,
                       "products": [{"productId": "p", "type": "weird"},
                                    {"productId": "q", "type": "autoRenewable", "storefronts": ["US"]}]}]}
            """
        #expect {
            try ConfigurationLoader(environment: [:]).parse(Data(file.utf8))
        } throws: { error in
            let paths = (error as? ConfigurationError)?.all.map(\.path) ?? []
            return Set(paths) == [
                "listen", "cacheTTLSeconds", "bogus", "http.maxBodyBytes", "http.trustedProxies[1]", "http.extra",
                "apiKeys[0].secret", "apiKeys[0].scopes[1]", "apps[0].environments[1]", "apps[0].gracePeriodDays",
                "apps[0].products[0].type", "apps[0].products[1].storefronts[0]", "apps[0].products[1].subscriptionGroup",
            ] && paths.count == 13
        }
    }

    @Test func aRelativeConfigurationPathNamesTheAbsolutePathTried() throws {
        let relative = "no-such-folder-\(UUID())/entitled.json"
        let absolute = FileManager.default.currentDirectoryPath + "/" + relative
        #expect {
            try ConfigurationLoader(environment: [:]).load(path: relative)
        } throws: { error in
            (error as? ConfigurationError)?.message.contains("tried \(absolute): No such file or directory") == true
        }
    }

    @Test func aRelativeCertificatePathNamesTheAbsolutePathTried() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-config-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("entitled.json")
        try Data(#"{"apps": [{"bundleId": "b", "environments": ["Sandbox"], "appleRootCertificates": ["../certs/root.cer"]}]}"#.utf8)
            .write(to: file)
        #expect {
            try ConfigurationLoader(environment: [:]).load(path: file.path)
        } throws: { error in
            let expected = folder.deletingLastPathComponent().appendingPathComponent("certs/root.cer").standardizedFileURL.path
            let error = error as? ConfigurationError
            return error?.path == "apps[0].appleRootCertificates[0]" && error?.message.contains("tried \(expected):") == true
        }
    }

    @Test(arguments: [
        (json: #"{"//": "top", "http": {"//": ["a", "b"]}, "apps": [{"//": "x", "bundleId": "b", "environments": ["Sandbox"]}]}"#, problem: String?.none),
        (json: #"{"//": 3}"#, problem: "//"),
        (json: #"{"http": {"//": [1]}}"#, problem: "http.//"),
    ])
    func documentationKeysAreIgnoredWhenTheyAreText(json: String, problem: String?) throws {
        do {
            _ = try ConfigurationLoader(environment: [:]).parse(Data(json.utf8))
            #expect(problem == nil)
        } catch {
            #expect(error.all.map(\.path) == [problem].compactMap { $0 })
        }
    }

    @Test func aServerThatCanAnswerNothingSaysWhatToDoNext() throws {
        let hint = try #require(StartupHint.line(for: Configuration(), address: "127.0.0.1:8080"))
        #expect(!hint.contains("\n"))
        #expect(hint.contains("examples/entitled.json") && hint.contains("scripts/run dev"))
        let configured = try ConfigurationLoader(environment: Self.variables).load(path: Self.example)
        #expect(StartupHint.line(for: configured, address: "127.0.0.1:8080") == nil)
    }

    @Test func serveWithoutAConfigurationPrintsTheHintOnStandardError() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("entitled-hint-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--database", "sqlite:\(folder.path)/entitled.sqlite"]
        var environment = ProcessInfo.processInfo.environment
        for key in ["ENTITLED_CONFIG", "ENTITLED_LISTEN", "ENTITLED_DATABASE"] { environment.removeValue(forKey: key) }
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.runSerialized()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let line = try await blocking { () -> String in
            var collected = Data()
            while !collected.contains(UInt8(ascii: "\n")) {
                let chunk = errors.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                collected += chunk
            }
            return String(decoding: collected, as: UTF8.self)
        }
        #expect(line.hasPrefix("entitled: listening on http://127.0.0.1:"), "\(line)")
        #expect(line.contains("examples/entitled.json"), "\(line)")
    }
}
