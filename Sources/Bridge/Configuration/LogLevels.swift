import CastProtocol
import Foundation

/// The log levels in force: `log.level` for everything, `log.levels` per component over it, and
/// the devices whose Cast traffic is logged at `trace` (`log.devices`). The core owns the value
/// (it changes with `bridge/request/log_level`, and the devices it names are resolved to ids as
/// they become known); the daemon's log handlers read the copy the core hands out
/// (`BridgeOutput.logLevels`).
public struct LogLevels: Sendable, Hashable {
    /// The components that have a level of their own.
    public static let components = ["cast", "mqtt", "discovery", "bridge", "homeassistant", "web"]
    public static let levelNames = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// `log.level`: every component without a level of its own.
    public var level: String
    /// `log.levels`: component → level.
    public var components: [String: String]
    /// `log.devices` and the devices added at run time, as given (id, friendly name or topic name).
    public var devices: [String]
    /// The ids of the known devices `devices` names (their Cast traffic is logged at trace).
    public var deviceIDs: Set<DeviceID> = []
    /// `text` or `json` (fixed for the run).
    public var format: String

    public init(_ log: BridgeConfiguration.Log) {
        level = log.level
        components = log.levels
        devices = log.devices
        format = log.format
    }

    /// The level of `component`.
    public func level(of component: String) -> String { components[component] ?? level }

    /// The answer of `bridge/request/log_level`: every component's level, the traced devices.
    func document(topicName: (DeviceID) -> String) -> JSONValue {
        .object([
            "level": .string(level),
            "levels": .object(Dictionary(uniqueKeysWithValues: Self.components.map { ($0, JSONValue.string(level(of: $0))) })),
            "devices": .array(deviceIDs.map(topicName).sorted().map(JSONValue.string)),
            "format": .string(format),
        ])
    }
}

/// `bridge/request/log_level`: `{"component", "level", "device"}`, each optional.
public struct LogLevelRequest: Sendable, Hashable {
    public var component: String?
    public var level: String?
    public var device: String?
}

extension CommandParser {
    func parseLogLevel(_ body: Body) throws -> LogLevelRequest {
        let f = Fields(body: body, command: "log_level")
        var request = LogLevelRequest()
        switch body {
        case .short(let text):
            if !text.isEmpty { request.level = text.lowercased() }
        case .json:
            try f.allow(["component", "level", "device"])
            request.component = try f.string("component")?.lowercased()
            request.level = try f.string("level")?.lowercased()
            request.device = try f.string("device")
        }
        if let component = request.component, !LogLevels.components.contains(component) {
            throw BridgeError.invalid("\"component\" is one of " + LogLevels.components.joined(separator: ", "))
        }
        if let level = request.level {
            let allowed = LogLevels.levelNames + (request.component != nil || request.device != nil ? ["default"] : [])
            guard allowed.contains(level) else {
                throw BridgeError.invalid("\"level\" is one of " + allowed.joined(separator: ", "))
            }
        }
        if let device = request.device {
            guard !device.isEmpty, device.utf8.count <= 256 else { throw BridgeError.invalid("\"device\" names a device (topic name, friendly name or id)") }
            guard request.component == nil else { throw BridgeError.invalid("\"device\" goes without \"component\" (it is the device's Cast traffic)") }
            guard request.level == nil || request.level == "trace" || request.level == "default" else {
                throw BridgeError.invalid("a device's Cast traffic is logged at \"trace\", or back at its component's level with \"default\"")
            }
        }
        if request.component != nil, request.level == nil {
            throw BridgeError.invalid("\"component\" needs a \"level\"")
        }
        return request
    }
}

/// `bridge/request/log_level` and `log.devices` as a part of the levels: pure, over a read-only
/// view of the devices (names resolve to ids as devices become known).
extension LogLevels {
    /// The levels a request asks for (not yet resolved), or the error to answer.
    func applying(_ request: LogLevelRequest, in registry: DeviceRegistry) -> Result<LogLevels, BridgeError> {
        var levels = self
        if let key = request.device {
            guard let id = registry.resolve(key) else {
                return .failure(BridgeError(.unknownDevice, "no device is called \"\(key.prefix(200))\""))
            }
            if request.level == "default" {
                levels.devices.removeAll { registry.resolve($0) == id }
            } else if !levels.devices.contains(where: { registry.resolve($0) == id }) {
                levels.devices.append(registry.topicName(id))
            }
        } else if let component = request.component, let level = request.level {
            levels.components[component] = level == "default" ? nil : level
        } else if let level = request.level {
            levels.level = level
        }
        return .success(levels)
    }

    /// `next` with its devices resolved against the devices known now, and the log line that
    /// says what changed; nil when nothing changed.
    func change(to next: LogLevels, in registry: DeviceRegistry) -> (levels: LogLevels, log: String?)? {
        var levels = next
        levels.deviceIDs = Set(levels.devices.compactMap { registry.resolve($0) })
        guard levels != self else { return nil }
        guard levels.level != level || levels.components != components || levels.devices != devices else { return (levels, nil) }
        let traced = levels.deviceIDs.map { registry.topicName($0) }.sorted()
        return (levels, "log levels: \(levels.level), " + Self.components.map { "\($0) \(levels.level(of: $0))" }.joined(separator: ", ")
                    + (traced.isEmpty ? "" : "; Cast traffic at trace: " + traced.joined(separator: ", ")))
    }

    /// The answer of `bridge/request/log_level`, with the names of `log.devices` that match no
    /// known device (yet).
    func answer(in registry: DeviceRegistry) -> JSONValue {
        document { registry.topicName($0) }
            .adding("unresolved_devices", .array(devices.filter { registry.resolve($0) == nil }.map(JSONValue.string)))
    }
}
