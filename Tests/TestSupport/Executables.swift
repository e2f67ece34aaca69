import Foundation

/// Finds an executable product of this package (e.g. `cast2mqtt`, `cast-sim`) built next to
/// the running test bundle, or in `.build/debug`.
public func builtExecutable(_ name: String) throws -> String {
    var candidates: [String] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        candidates.append((exe as NSString).deletingLastPathComponent + "/" + name)
    }
    candidates.append((CommandLine.arguments[0] as NSString).deletingLastPathComponent + "/" + name)
    candidates.append(FileManager.default.currentDirectoryPath + "/.build/debug/" + name)
    for path in candidates where FileManager.default.isExecutableFile(atPath: path) { return path }
    throw TestSupportError("\(name) not found (looked in \(candidates)); build with `swift build --build-tests`")
}
