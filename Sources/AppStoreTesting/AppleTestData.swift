import Foundation

/// Apple's published test data (the JWS payloads, models and certificates of Apple's App Store
/// Server libraries), kept outside the repository: `../shared/apple-fixtures` beside the package,
/// or the folder `ENTITLED_APPLE_FIXTURES` names.
///
/// The suites that read it run when it is there. Without it they are left out, with one notice
/// saying so and how to provide it — except in CI (`CI` set), where they run and fail: a CI run
/// without the data must not pass by skipping, as with PostgreSQL.
public enum AppleTestData {
    /// The fixtures folder (whether or not it exists).
    public static let root: URL = {
        if let configured = ProcessInfo.processInfo.environment["ENTITLED_APPLE_FIXTURES"], !configured.isEmpty {
            return URL(fileURLWithPath: configured, isDirectory: true).standardizedFileURL
        }
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                return directory.deletingLastPathComponent().appendingPathComponent("shared/apple-fixtures").standardizedFileURL
            }
            directory.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: "/nonexistent-apple-fixtures")
    }()

    /// The Python library's resources (`models/`, `mock_signed_data/`, `xcode/`, …).
    public static let pythonResources = root.appendingPathComponent("app-store-server-library-python/tests/resources")

    /// Whether the data is there.
    public static let isPresent = FileManager.default.fileExists(atPath: pythonResources.path)

    /// Whether the suites that read the data run: when it is there, and always in CI. The first
    /// call without it outside CI prints why they do not, once per test process.
    public static let suitesRun: Bool = {
        if isPresent || !(ProcessInfo.processInfo.environment["CI"] ?? "").isEmpty { return true }
        FileHandle.standardError.write(Data("""
            NOTE: the tests that read Apple's published test data were NOT run: no data at \(root.path).
              Provide it as ../shared/apple-fixtures beside the package (Apple's app-store-server-library-python
              and -swift repositories, see its INDEX.md), or point ENTITLED_APPLE_FIXTURES at such a folder.
              With CI set they run and fail without it.

            """.utf8))
        return false
    }()
}
