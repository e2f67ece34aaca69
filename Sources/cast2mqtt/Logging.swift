import Bridge
import CastProtocol
import Foundation
import Logging
import Synchronization
import Web

/// The daemon's logging: one logger per component (`cast2mqtt.<component>`, and
/// `cast2mqtt.cast/<device id>` for a device's Cast connection), each handler asking
/// `LogControl` for its level on every call, so `bridge/request/log_level` changes them at run
/// time without touching the loggers the components hold. Lines go to stderr, as text or one
/// JSON object per line (`log.format`), and to the web page's log tail.
enum LogLabel {
    static let root = "cast2mqtt"

    /// The logger of a component (`LogLevels.components`).
    static func component(_ name: String) -> String { "\(root).\(name)" }

    /// The logger of one device's Cast connection: the `cast` component, traced when
    /// `log.devices` names the device.
    static func device(_ id: String) -> String { "\(root).cast/\(id)" }

    /// The component and device of a label; the root label and unknown ones are `bridge`'s.
    static func parse(_ label: String) -> (component: String, device: String?) {
        guard label.hasPrefix(root + ".") else { return ("bridge", nil) }
        let rest = label.dropFirst(root.count + 1)
        let parts = rest.split(separator: "/", maxSplits: 1).map(String.init)
        let component = parts.first.flatMap { LogLevels.components.contains($0) ? $0 : nil } ?? "bridge"
        return (component, parts.count > 1 ? parts[1] : nil)
    }
}

extension Logger {
    /// The daemon's logger of `component`.
    static func component(_ name: String) -> Logger { Logger(label: LogLabel.component(name)) }
}

/// The levels in force, shared by every handler (a lock held for a dictionary read per log call).
final class LogControl: Sendable {
    static let shared = LogControl()

    private struct State {
        var base: Logger.Level = .info
        var components: [String: Logger.Level] = [:]
        var traced: Set<String> = []
        var json = false
    }

    private let state = Mutex(State())

    /// The level of a component's logger, or of a device's (`trace` when it is traced).
    func level(component: String, device: String?) -> Logger.Level {
        state.withLock { s in
            if let device, s.traced.contains(device) { return .trace }
            return s.components[component] ?? s.base
        }
    }

    var json: Bool { state.withLock { $0.json } }

    /// Takes the levels the core hands out (at start and after each change).
    func apply(_ levels: LogLevels) {
        func level(_ name: String) -> Logger.Level { Logger.Level(rawValue: name) ?? .info }
        state.withLock { s in
            s.base = level(levels.level)
            s.components = levels.components.mapValues(level)
            s.traced = levels.deviceIDs
            s.json = levels.format == "json"
        }
    }
}

/// Writes one log event to stderr (text or JSON) and to the web page's tail.
struct ComponentLogHandler: LogHandler {
    let label: String
    let component: String
    let device: String?
    let control: LogControl
    let tail: LogTail?
    /// A level set on the logger itself (`logger.logLevel = ...`) wins over the control's.
    private var fixedLevel: Logger.Level?
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, control: LogControl, tail: LogTail?) {
        self.label = label
        (component, device) = LogLabel.parse(label)
        self.control = control
        self.tail = tail
    }

    var logLevel: Logger.Level {
        get { fixedLevel ?? control.level(component: component, device: device) }
        set { fixedLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The label a line shows: a device's logger shows as its component.
    var shownLabel: String { device == nil ? label : LogLabel.component(component) }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let time = TailLogHandler.timestamp()
        let text = LogFormat.text(time: time, level: event.level, label: shownLabel, metadata: merged, message: "\(event.message)")
        LogFormat.write(control.json
            ? LogFormat.json(time: time, level: event.level, label: shownLabel, metadata: merged, message: "\(event.message)")
            : text)
        tail?.append(text)
    }
}

enum LogFormat {
    private static let lock = Mutex(())

    /// `2026-11-22T10:15:30.123Z info cast2mqtt.cast: cast.device=TV (0123...) connected`
    static func text(time: String, level: Logger.Level, label: String, metadata: Logger.Metadata, message: String) -> String {
        let fields = metadata.isEmpty ? "" : " " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "\(time) \(level) \(label):\(fields) \(message)"
    }

    /// One JSON object: `time`, `level`, `logger`, `message`, then each metadata key (a key that
    /// would replace one of those four is prefixed with `metadata.`).
    static func json(time: String, level: Logger.Level, label: String, metadata: Logger.Metadata, message: String) -> String {
        var object: [String: JSONValue] = ["time": .string(time), "level": .string(level.rawValue), "logger": .string(label),
                                           "message": .string(message)]
        for (key, value) in metadata {
            object[object[key] == nil ? key : "metadata." + key] = jsonValue(value)
        }
        return String(decoding: JSONValue.object(object).jsonBytes, as: UTF8.self)
    }

    static func jsonValue(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let s): return .string(s)
        case .stringConvertible(let c): return .string(c.description)
        case .array(let list): return .array(list.map(jsonValue))
        case .dictionary(let dict): return .object(dict.mapValues(jsonValue))
        }
    }

    /// One line to stderr; lines of different threads never interleave.
    static func write(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(10)
        lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress else { return }
                var offset = 0
                while offset < buffer.count {
                    let n = Foundation.write(2, base + offset, buffer.count - offset)
                    if n <= 0 { break }
                    offset += n
                }
            }
        }
    }
}
