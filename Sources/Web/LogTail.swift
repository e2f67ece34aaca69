import Foundation
import Logging
import Synchronization

/// The last lines the daemon logged, for the bridge page (live). A `LogHandler` writes into it
/// next to the usual stderr handler (`TailLogHandler`); the page reads what is newer than what it
/// has. Bounded: the oldest lines fall off.
public final class LogTail: Sendable {
    struct Line: Sendable {
        var sequence: UInt64
        var text: String
    }

    private struct State: Sendable {
        var lines: Ring<Line>
        var sequence: UInt64 = 0
        var onAppend: (@Sendable () -> Void)?
    }

    private let state: Mutex<State>

    public init(capacity: Int = 500) {
        state = Mutex(State(lines: Ring(capacity: capacity)))
    }

    /// Adds a line (any thread).
    public func append(_ text: String) {
        let notify = state.withLock { s -> (@Sendable () -> Void)? in
            s.sequence += 1
            s.lines.append(Line(sequence: s.sequence, text: String(text.prefix(4096))))
            return s.onAppend
        }
        notify?()
    }

    /// Called after every append (the hub wakes the open pages with it).
    func setOnAppend(_ callback: (@Sendable () -> Void)?) {
        state.withLock { $0.onAppend = callback }
    }

    /// The lines after `sequence` (all kept lines for 0) and the newest sequence number.
    func lines(after sequence: UInt64) -> (lines: [Line], latest: UInt64) {
        state.withLock { s in
            (s.lines.suffix { $0.sequence > sequence }, s.sequence)
        }
    }

    var latest: UInt64 { state.withLock { $0.sequence } }
}

/// A swift-log handler that formats like the stderr one and appends to a `LogTail`.
public struct TailLogHandler: LogHandler {
    let tail: LogTail
    let label: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String, tail: LogTail) {
        self.label = label
        self.tail = tail
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let fields = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: " ")
        tail.append("\(Self.timestamp()) \(event.level) \(label):\(fields) \(event.message)")
    }

    public static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = time_t(now.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let ms = Int(now.tv_nsec / 1_000_000)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(msText)Z"
    }
}
