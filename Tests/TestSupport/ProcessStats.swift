import Foundation

/// Memory and CPU of a process from /proc (Linux), for tests that bound resource use.
public enum ProcessStats {
    /// Resident set size in KiB (`VmRSS` of /proc/<pid>/status); nil when the process is gone.
    public static func residentKiB(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }

    /// Resident set size in MiB.
    public static func residentMiB(_ pid: Int32) -> Double? { residentKiB(pid).map { Double($0) / 1024 } }

    /// User + system CPU time in seconds (fields 14 and 15 of /proc/<pid>/stat).
    public static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, so utime (14) and stime (15) are at 11 and 12.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (user + system) / (ticks > 0 ? ticks : 100)
    }

    /// The share of one core the process used over `window` (sampled before and after a sleep).
    public static func cpuShare(_ pid: Int32, over window: Duration) async throws -> Double? {
        let clock = ContinuousClock()
        guard let before = cpuSeconds(pid) else { return nil }
        let start = clock.now
        try await Task.sleep(for: window)
        guard let after = cpuSeconds(pid) else { return nil }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return (after - before) / max(seconds, 0.001)
    }
}
