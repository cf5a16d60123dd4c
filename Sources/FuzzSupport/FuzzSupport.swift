import Foundation

/// The one entry point of every fuzz target (scripts/fuzz.sh): under `-sanitize=fuzzer` (built
/// with `-DFUZZING`) it hands each input to libFuzzer's driver; otherwise it runs each file or
/// folder named on the command line through the same function (a corpus, or a crash reproducer),
/// so every target builds and runs as a plain executable too.
public enum FuzzMain {
    /// Runs `body` over the inputs and exits.
    public static func run(_ name: String, _ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
        target = body
        #if FUZZING
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzTestOneInput(data, size) })
        #else
            var count = 0
            for path in CommandLine.arguments.dropFirst() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    FileHandle.standardError.write(Data("\(name): no such file \(path)\n".utf8))
                    exit(2)
                }
                let files =
                    isDirectory.boolValue
                    ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                    : [path]
                for file in files {
                    guard let data = FileManager.default.contents(atPath: file) else { continue }
                    data.withUnsafeBytes { body($0) }
                    count += 1
                }
            }
            print("\(name): ran \(count) inputs")
            exit(0)
        #endif
    }
}

/// The target's function; set once by ``FuzzMain/run(_:_:)`` before any input is read.
nonisolated(unsafe) private var target: ((UnsafeRawBufferPointer) -> Void)?

#if FUZZING
    /// libFuzzer's driver, linked in by `-sanitize=fuzzer`. Called from `main` because SwiftPM points
    /// an executable's `main` at the module's own entry point, so libFuzzer's `main` cannot be used.
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// libFuzzer's per-input callback (libFuzzer's own objects reference it by name).
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        target?(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
        return 0
    }
#endif
