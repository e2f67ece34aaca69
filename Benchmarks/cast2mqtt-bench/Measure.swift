import Foundation

/// Small measuring helpers: monotonic time, percentiles, process CPU and memory, machine facts.
enum Measure {
    /// Monotonic nanoseconds (CLOCK_MONOTONIC).
    static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// User + system CPU seconds of the whole process (getrusage).
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// CPU seconds consumed so far by the thread owning `clock` (from `pthread_getcpuclockid`).
    static func threadCPUSeconds(_ clock: clockid_t) -> Double {
        var ts = timespec()
        guard clock_gettime(clock, &ts) == 0 else { return 0 }
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1_000_000_000
    }

    /// The CPU-time clock of the calling thread.
    static func currentThreadCPUClock() -> clockid_t {
        var clock = clockid_t()
        pthread_getcpuclockid(pthread_self(), &clock)
        return clock
    }

    /// A `Key:  value kB` line of /proc/self/status, in KiB.
    static func procStatusKiB(_ key: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            let digits = line.dropFirst(key.count + 1).filter(\.isNumber)
            return Int(digits)
        }
        return nil
    }

    static func rssMiB() -> Double { Double(procStatusKiB("VmRSS") ?? 0) / 1024 }

    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    static func cpuModel() -> String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "?" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            return line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?"
        }
        return "?"
    }

    /// Raises the soft RLIMIT_NOFILE to the hard limit; returns (before, after).
    @discardableResult
    static func raiseFileLimit() -> (UInt64, UInt64) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (0, 0) }
        let before = UInt64(limit.rlim_cur)
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return (before, UInt64(limit.rlim_cur))
    }

    static func machineLine() -> String {
        "machine: \(ProcessInfo.processInfo.activeProcessorCount) cores (\(cpuModel())), load average \(loadAverage())"
    }
}

/// Latency samples in nanoseconds.
struct Samples {
    private(set) var values: [UInt64] = []
    private var sorted = true

    init(capacity: Int = 0) { values.reserveCapacity(capacity) }

    mutating func add(_ nanos: UInt64) {
        values.append(nanos)
        sorted = false
    }

    var count: Int { values.count }

    mutating func percentile(_ p: Double) -> UInt64 {
        guard !values.isEmpty else { return 0 }
        if !sorted { values.sort(); sorted = true }
        let rank = Int((p / 100 * Double(values.count - 1)).rounded(.up))
        return values[min(max(rank, 0), values.count - 1)]
    }

    var total: UInt64 { values.reduce(0, &+) }
    var mean: Double { values.isEmpty ? 0 : Double(total) / Double(values.count) }
}

enum Format {
    static func micros(_ nanos: UInt64) -> String { String(format: "%.1f", Double(nanos) / 1000) }
    static func fixed(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
    static func count(_ value: Double) -> String {
        if value >= 1_000_000 { return String(format: "%.2fM", value / 1_000_000) }
        if value >= 1_000 { return String(format: "%.1fk", value / 1_000) }
        return String(format: "%.0f", value)
    }
    static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }
}

/// A value the optimizer cannot see through (keeps measured work from being removed).
@_optimize(none)
func blackHole<T>(_ value: T) {}
