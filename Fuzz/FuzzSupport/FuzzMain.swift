#if FUZZING
import CFuzzer
#endif
import Foundation

/// The one entry of every fuzz target: called with one input, returns 0 (libFuzzer's contract).
public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// The `main` of a fuzz target.
///
/// - In a fuzz build (`-DFUZZING -sanitize=fuzzer,address`, see scripts/fuzz) it hands the
///   command line to libFuzzer's `LLVMFuzzerRunDriver`, so every libFuzzer flag works.
/// - In a normal build it replays the files (and the files of the directories) named on the
///   command line through the same callback, so a committed corpus or a crash file can be run
///   without the fuzzer, under the debugger, or from a test.
public enum FuzzMain {
    /// Largest input replayed from a file (libFuzzer's default `-max_len` is far below this).
    public static let maxReplayBytes = 1 << 20

    public static func run(_ callback: FuzzCallback) -> Never {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = LLVMFuzzerRunDriver(&argc, &argv, callback)
        exit(status)
        #else
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard !arguments.isEmpty, !arguments.contains(where: { $0 == "-h" || $0 == "--help" }) else {
            let name = (CommandLine.arguments.first ?? "fuzz-target").split(separator: "/").last.map(String.init) ?? ""
            print("usage: \(name) FILE_OR_DIR...   (replays inputs; scripts/fuzz builds the fuzzing variant)")
            exit(2)
        }
        var count = 0
        for file in inputFiles(arguments) {
            guard let data = FileManager.default.contents(atPath: file) else {
                print("cannot read \(file)")
                exit(2)
            }
            replay(Array(data.prefix(maxReplayBytes)), through: callback)
            count += 1
        }
        print("replayed \(count) input(s) without a crash")
        exit(0)
        #endif
    }

    /// Runs one input through a callback (also used by the replay mode).
    public static func replay(_ bytes: [UInt8], through callback: FuzzCallback) {
        _ = bytes.withUnsafeBufferPointer { callback($0.baseAddress, $0.count) }
    }

    /// The files named, with directories expanded one level (sorted, hidden files skipped).
    static func inputFiles(_ arguments: [String]) -> [String] {
        var files: [String] = []
        for path in arguments {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                print("no such file or directory: \(path)")
                exit(2)
            }
            guard isDirectory.boolValue else {
                files.append(path)
                continue
            }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") {
                let full = path + "/" + name
                var nested: ObjCBool = false
                if FileManager.default.fileExists(atPath: full, isDirectory: &nested), !nested.boolValue {
                    files.append(full)
                }
            }
        }
        return files
    }
}

/// The input split at its first NUL byte (the second part is empty when there is none).
public func splitAtFirstNUL(_ bytes: UnsafeRawBufferPointer) -> (head: [UInt8], tail: [UInt8]) {
    guard let index = bytes.firstIndex(of: 0) else { return (Array(bytes), []) }
    return (Array(bytes[..<index]), Array(bytes[(index + 1)...]))
}

/// The callback's arguments as a buffer (empty for a null pointer).
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> UnsafeRawBufferPointer {
    guard let data, size > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    return UnsafeRawBufferPointer(start: data, count: size)
}
