import Foundation

/// Helpers for tests that need a real avahi-daemon (scripts/test starts one restricted to `lo`
/// with `scripts/lib/avahi.sh`). A missing daemon is a test failure with a clear message, never
/// a skip.
public enum AvahiTestDaemon {
    /// Throws unless an avahi-daemon answers on the system bus (checked with
    /// `avahi-browse --all --terminate --parsable`, bounded to `timeout`).
    public static func requireRunning(timeout: TimeInterval = 10) throws {
        let hint = "start it with `source scripts/lib/avahi.sh && start_avahi` (as root), as scripts/test does"
        guard let path = ManagedProcess.which("avahi-browse") else {
            throw TestSupportError("avahi-browse is not installed (apt-get install avahi-utils); \(hint)")
        }
        let outputPath = NSTemporaryDirectory() + "cast2mqtt-avahi-check-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--all", "--terminate", "--parsable"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        waitUntilBlocking(timeout: .milliseconds(Int(timeout * 1000)), interval: .milliseconds(20)) { !process.isRunning }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestSupportError("avahi-browse did not finish within \(Int(timeout)) s; is avahi-daemon healthy? \(hint)")
        }
        guard process.terminationStatus == 0 else {
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw TestSupportError(
                "avahi-daemon is not reachable (\(output.trimmingCharacters(in: .whitespacesAndNewlines))); \(hint)")
        }
    }
}

/// A DNS-SD service published with `avahi-publish -s`, stopped (and so unpublished, with a
/// goodbye packet) by PID.
public final class AvahiPublishedService: @unchecked Sendable {
    public let name: String
    public let type: String
    public let port: Int
    public let txt: [String]
    public let hostName: String?
    public let process: ManagedProcess

    /// Publishes `name` of `type` on `port` with `txt` strings ("key=value"). `hostName` (e.g.
    /// "cast-a.local") points the SRV record at a host published with `AvahiPublishedAddress`.
    public init(
        name: String,
        type: String = "_googlecast._tcp",
        port: Int,
        txt: [String],
        hostName: String? = nil
    ) throws {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
        self.hostName = hostName
        var arguments = ["--service"]
        if let hostName { arguments += ["--host=\(hostName)"] }
        arguments += [name, type, String(port)] + txt
        process = try ManagedProcess("avahi-publish", arguments, logName: "avahi-publish-service")
    }

    /// Convenience: the TXT strings from a key/value dictionary, sorted by key.
    public convenience init(
        name: String, port: Int, txt: [String: String], hostName: String? = nil
    ) throws {
        try self.init(name: name, port: port, txt: txt.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" },
                      hostName: hostName)
    }

    /// Waits (bounded) until avahi confirmed the registration; throws with the tool's output otherwise.
    public func waitUntilEstablished(timeout: Duration = .seconds(10)) async throws {
        let ok = await waitUntil(timeout: timeout) { [process] in
            process.output.contains("Established under name") || !process.isRunning
        }
        guard ok, process.isRunning, process.output.contains("Established under name") else {
            throw TestSupportError("avahi-publish \(name) was not established: \(process.output)")
        }
    }

    /// Unpublishes: avahi-daemon withdraws the records (with a goodbye packet) as soon as the
    /// publishing client's D-Bus connection goes away. SIGKILL, because a child started from a
    /// Swift concurrency thread inherits a signal mask that blocks SIGTERM/SIGINT, so
    /// avahi-publish would ignore them.
    public func stop() { avahiKill(process) }

    deinit { avahiKill(process) }
}

/// An address record (`avahi-publish -a -R <hostName> <address>`), for moving a service between
/// loopback addresses (127.0.0.2, 127.0.0.3, ... all reach this machine).
public final class AvahiPublishedAddress: @unchecked Sendable {
    public let hostName: String
    public let address: String
    public let process: ManagedProcess

    public init(hostName: String, address: String) throws {
        self.hostName = hostName
        self.address = address
        process = try ManagedProcess("avahi-publish", ["--address", "--no-reverse", hostName, address],
                                     logName: "avahi-publish-address")
    }

    public func waitUntilEstablished(timeout: Duration = .seconds(10)) async throws {
        let ok = await waitUntil(timeout: timeout) { [process] in
            process.output.contains("Established under name") || !process.isRunning
        }
        guard ok, process.isRunning, process.output.contains("Established under name") else {
            throw TestSupportError("avahi-publish -a \(hostName) \(address) was not established: \(process.output)")
        }
    }

    /// Unpublishes (see `AvahiPublishedService.stop()`).
    public func stop() { avahiKill(process) }

    deinit { avahiKill(process) }
}

/// Stops an avahi-publish child by its PID: SIGKILL, then the usual bounded stop (which reaps it).
private func avahiKill(_ process: ManagedProcess) {
    process.signal(SIGKILL)
    process.stop(grace: 2)
}
