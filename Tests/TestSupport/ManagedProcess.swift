import Foundation

/// A child process started by a test and stopped by its PID: SIGTERM, then SIGKILL after a
/// grace period. Output goes to a log file so a failing test can show it.
public final class ManagedProcess: @unchecked Sendable {
    public let executable: String
    public let arguments: [String]
    public let logPath: String
    private let process: Process
    private let lock = NSLock()
    private var stopped = false

    /// Starts `executable` (a path, or a name looked up on PATH) with `arguments`.
    public init(
        _ executable: String,
        _ arguments: [String],
        environment extra: [String: String] = [:],
        logName: String? = nil
    ) throws {
        guard let path = ManagedProcess.which(executable) else {
            throw TestSupportError("\(executable) is not installed (scripts/test installs it)")
        }
        self.executable = path
        self.arguments = arguments
        let logDir = NSTemporaryDirectory() + "cast2mqtt-test-logs"
        try FileManager.default.createDirectory(atPath: logDir, withIntermediateDirectories: true)
        let base = logName ?? URL(fileURLWithPath: path).lastPathComponent
        self.logPath = "\(logDir)/\(base)-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in extra { env[key] = value }
        process.environment = env
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        // The child inherits this thread's signal mask; the test runner's threads block SIGTERM
        // and friends, which would make `stop()`'s SIGTERM ineffective. Spawn with none blocked.
        try ManagedProcess.withSignalsUnblocked { try process.run() }
        self.process = process
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// The process's output so far (for failure messages).
    public var output: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// Sends `signal` to the process (e.g. SIGKILL to simulate a crash).
    public func signal(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Stops the process: SIGTERM, wait up to `grace`, then SIGKILL. Idempotent.
    public func stop(grace: TimeInterval = 3) {
        lock.lock()
        let already = stopped
        stopped = true
        lock.unlock()
        guard !already else { return }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        waitUntilBlocking(timeout: .milliseconds(Int(grace * 1000))) { !process.isRunning }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            // Bounded: a process killed in an odd state (e.g. during a Swift backtrace) must not
            // hold the test forever; after 10 s it is left to the reaper.
            waitUntilBlocking(timeout: .seconds(10)) { !process.isRunning }
        }
    }

    deinit { stop(grace: 1) }

    /// Runs `body` with this thread's signal mask emptied (children spawned inside inherit it).
    public static func withSignalsUnblocked<T>(_ body: () throws -> T) rethrows -> T {
        var empty = sigset_t()
        var previous = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return try body()
    }

    /// Looks a command up on PATH (plus the sbin directories, where daemons live).
    public static func which(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/local/sbin"]
        for dir in dirs where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        return nil
    }
}
