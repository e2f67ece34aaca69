#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Errors raised by the test helpers. They carry a plain sentence so a failing test says what
/// was missing (a binary, a port, a service) instead of a bare errno.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// True when running under CI (`CI=true`): services the tests need must then be present, and a
/// missing one is a failure rather than a skip.
public var isCI: Bool {
    guard let value = getenv("CI") else { return false }
    let text = String(cString: value).lowercased()
    return text == "true" || text == "1" || text == "yes"
}

/// Reads an environment variable, nil when unset or empty.
public func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
}

public enum FreePort {
    /// A TCP port on 127.0.0.1 that was free a moment ago: bind to port 0, read the port the
    /// kernel chose, close. Good enough for test services that bind right after.
    public static func tcp() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw TestSupportError("bind(127.0.0.1:0) failed: errno \(errno)") }
        var out = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &out) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard named == 0 else { throw TestSupportError("getsockname failed: errno \(errno)") }
        return Int(UInt16(bigEndian: out.sin_port))
    }

    /// True when something accepts TCP connections on 127.0.0.1:`port`.
    public static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return rc == 0
    }
}

/// Polls `condition` every `interval` until it holds or `timeout` passes: the one polling loop
/// of the tests, which wait for a fact (a message, a counter, a state) and not for time. The
/// bound is generous (30 s): it only matters when the fact never comes, and then the caller's
/// `#expect` on the result fails.
public func waitUntil(
    timeout: Duration = .seconds(30),
    interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}

/// The blocking twin of `waitUntil`, for the synchronous helpers (a process that stops, a
/// service that starts listening): polls `condition` every `interval` until it holds or
/// `timeout` passes, and says whether it held.
@discardableResult
public func waitUntilBlocking(
    timeout: Duration, interval: Duration = .milliseconds(10), _ condition: () -> Bool
) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    let pause = useconds_t(interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
    while clock.now < deadline {
        if condition() { return true }
        usleep(pause)
    }
    return condition()
}

/// Runs `body` with a resource and always closes it, awaited, also when the body fails: the
/// structured set-up and tear-down of the test harnesses (nothing outlives the test).
public func withClosing<Resource>(_ resource: Resource, close: (Resource) async -> Void,
                                  _ body: (Resource) async throws -> Void) async throws {
    do {
        try await body(resource)
    } catch {
        await close(resource)
        throw error
    }
    await close(resource)
}
