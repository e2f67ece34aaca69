import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The systemd notify protocol (sd_notify(3)), spoken directly: one datagram per state change on
/// the Unix socket named by `NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
/// Without `NOTIFY_SOCKET` every call does nothing, so the daemon runs the same under systemd
/// (`Type=notify`) and anywhere else.
///
/// The watchdog interval is half of `WATCHDOG_USEC` (when `WATCHDOG_PID` is absent or names this
/// process). The daemon's consumer loop calls `watchdogIfDue(now:)` after every input it
/// handles — the one-second tick included — so the pings stop when that loop is stuck, and
/// systemd restarts a wedged bridge.
final class SystemdNotifier: Sendable {
    private let fd: Int32
    private let address: sockaddr_un?
    private let addressLength: socklen_t
    /// How often to send `WATCHDOG=1`; nil when systemd asked for no watchdog.
    let watchdogInterval: Duration?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let usec = environment["WATCHDOG_USEC"].flatMap { UInt64($0) }
        let pidMatches = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
        if let usec, usec > 0, pidMatches {
            watchdogInterval = .microseconds(Int64(clamping: usec / 2))
        } else {
            watchdogInterval = nil
        }
        guard let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@"),
              path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            fd = -1
            address = nil
            addressLength = 0
            return
        }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        address = addr
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// True when a notify socket was given.
    var isActive: Bool { fd >= 0 }

    /// Sends one state string (`READY=1`, `WATCHDOG=1`, `STOPPING=1`, `STATUS=...`).
    func notify(_ state: String) {
        guard fd >= 0, var addr = address else { return }
        let bytes = Array(state.utf8)
        _ = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &addr) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, addressLength)
                }
            }
        }
    }
}

/// When the consumer loop last pinged the watchdog; owned by that loop.
struct WatchdogPacer {
    let notifier: SystemdNotifier
    private var last: ContinuousClock.Instant?

    init(notifier: SystemdNotifier) { self.notifier = notifier }

    /// The consumer loop wakes at least this often (the tick).
    static let wakePeriod: Duration = .seconds(1)

    /// Sends `WATCHDOG=1` unless the next wake-up would still be within half of `WATCHDOG_USEC`
    /// of the last ping: the gap between two pings never exceeds it while the loop runs.
    mutating func pingIfDue(now: ContinuousClock.Instant = .now) {
        guard let interval = notifier.watchdogInterval else { return }
        if let last, now - last + Self.wakePeriod <= interval { return }
        last = now
        notifier.notify("WATCHDOG=1")
    }
}
