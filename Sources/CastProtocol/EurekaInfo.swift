import Foundation

/// What a Cast device says about itself at `GET /setup/eureka_info` (HTTPS on 8443, HTTP on
/// 8008; `shared/spec/cast-protocol.md` §9.2): its name, model, manufacturer, id, and the speaker
/// groups it is in. `EurekaInfo.parse` is total: any bytes give a value or a typed error, every
/// field is checked for its type and bounded, nothing traps.
public struct EurekaInfo: Sendable, Hashable {
    /// A group this device is a member of (`multizone.groups[]` / `dynamic_groups[]`).
    public struct Group: Sendable, Hashable {
        /// Who hosts the group (`elected_leader`).
        public enum Leader: Sendable, Hashable {
            /// This device (`"self"`): the group's Cast port here is `castPort`.
            case thisDevice
            /// Another member, at `host`. The `port` real devices give with it is not the group's
            /// Cast port; the leader's own `eureka_info` has that (`castPort`).
            case member(host: String, port: Int?)
            /// Missing or unreadable.
            case unknown
        }

        public var name: String?
        /// The group's UUID as 32 lower-case hex digits (dashes removed); nil when missing or not
        /// a UUID.
        public var id: String?
        public var leader: Leader
        /// The group's Cast port on this device when it leads (`cast_port`, 1–65535).
        public var castPort: Int?

        public init(name: String? = nil, id: String? = nil, leader: Leader = .unknown, castPort: Int? = nil) {
            self.name = name
            self.id = id
            self.leader = leader
            self.castPort = castPort
        }
    }

    /// Top-level `name`.
    public var name: String?
    /// `device_info.name`.
    public var deviceName: String?
    /// `device_info.model_name`.
    public var model: String?
    /// `device_info.manufacturer`.
    public var manufacturer: String?
    /// The device's Cast id, 32 lower-case hex digits, from `device_info.ssdp_udn` (or a
    /// top-level `ssdp_udn`, as devices answer without `params`); nil when neither is a UUID.
    public var id: String?
    /// `device_info.capabilities.display_supported` (false: an audio device).
    public var displaySupported: Bool?
    /// `device_info.capabilities.multizone_supported`.
    public var multizoneSupported: Bool?
    /// Top-level `ip_address`.
    public var ipAddress: String?
    /// `multizone.groups`: the static groups the device is in.
    public var groups: [Group]
    /// `multizone.dynamic_groups`: temporary groups.
    public var dynamicGroups: [Group]

    public init(name: String? = nil, deviceName: String? = nil, model: String? = nil, manufacturer: String? = nil,
                id: String? = nil, displaySupported: Bool? = nil, multizoneSupported: Bool? = nil,
                ipAddress: String? = nil, groups: [Group] = [], dynamicGroups: [Group] = []) {
        self.name = name
        self.deviceName = deviceName
        self.model = model
        self.manufacturer = manufacturer
        self.id = id
        self.displaySupported = displaySupported
        self.multizoneSupported = multizoneSupported
        self.ipAddress = ipAddress
        self.groups = groups
        self.dynamicGroups = dynamicGroups
    }

    /// The name to show: `device_info.name`, else the top-level `name`.
    public var friendlyName: String? { deviceName ?? name }

    /// The request path that asks for everything this type reads.
    public static let requestPath = "/setup/eureka_info?params=name,device_info,multizone"
    /// Larger bodies are refused (a real answer is a few KiB).
    public static let maximumSize = 65_536
    /// At most this many groups are kept per list; more are ignored.
    public static let maximumGroups = 64
    /// Text fields longer than this (in characters) are cut.
    public static let maximumTextLength = 256
}

/// Why a body is not an `eureka_info` answer.
public struct EurekaParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Over `EurekaInfo.maximumSize` bytes.
        case tooLarge = "too_large"
        /// Not JSON (or nested deeper than the decoder allows).
        case notJSON = "not_json"
        /// JSON, but not an object.
        case notAnObject = "not_an_object"
    }

    public var code: Code
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

extension EurekaInfo {
    /// Parses an `eureka_info` body. Fields of the wrong type count as absent; ids are
    /// normalised (dashes removed, lower case, 32 hex digits or nil); ports outside 1–65535 are
    /// absent; texts are trimmed, empty ones absent, long ones cut to `maximumTextLength`.
    public static func parse(_ bytes: [UInt8]) -> Result<EurekaInfo, EurekaParseError> {
        guard bytes.count <= maximumSize else {
            return .failure(EurekaParseError(.tooLarge, "eureka_info body of \(bytes.count) bytes (at most \(maximumSize))"))
        }
        guard let value = JSONValue.parse(bytes) else {
            return .failure(EurekaParseError(.notJSON, "eureka_info body is not JSON"))
        }
        guard case .object(let root) = value else {
            return .failure(EurekaParseError(.notAnObject, "eureka_info body is not a JSON object"))
        }
        let deviceInfo = root["device_info"]?.objectValue ?? [:]
        let capabilities = deviceInfo["capabilities"]?.objectValue ?? [:]
        let multizone = root["multizone"]?.objectValue ?? [:]
        return .success(EurekaInfo(
            name: text(root["name"]),
            deviceName: text(deviceInfo["name"]),
            model: text(deviceInfo["model_name"]),
            manufacturer: text(deviceInfo["manufacturer"]),
            id: uuid(deviceInfo["ssdp_udn"]) ?? uuid(root["ssdp_udn"]),
            displaySupported: capabilities["display_supported"]?.boolValue,
            multizoneSupported: capabilities["multizone_supported"]?.boolValue,
            ipAddress: text(root["ip_address"]),
            groups: groups(multizone["groups"]),
            dynamicGroups: groups(multizone["dynamic_groups"])))
    }

    static func groups(_ value: JSONValue?) -> [Group] {
        guard let list = value?.arrayValue else { return [] }
        return list.prefix(maximumGroups).compactMap { entry in
            guard let object = entry.objectValue else { return nil }
            return Group(name: text(object["name"]), id: uuid(object["uuid"]),
                         leader: leader(object["elected_leader"]), castPort: port(object["cast_port"]))
        }
    }

    /// `"self"`, `"host:port"`, `"[v6]:port"`, or a bare host.
    static func leader(_ value: JSONValue?) -> Group.Leader {
        guard let raw = text(value) else { return .unknown }
        if raw == "self" { return .thisDevice }
        var host = raw
        var portText: Substring?
        if raw.hasPrefix("[") {
            guard let close = raw.firstIndex(of: "]") else { return .unknown }
            host = String(raw[raw.index(after: raw.startIndex)..<close])
            let rest = raw[raw.index(after: close)...]
            if rest.hasPrefix(":") { portText = rest.dropFirst() } else if !rest.isEmpty { return .unknown }
        } else if raw.filter({ $0 == ":" }).count == 1, let colon = raw.lastIndex(of: ":") {
            host = String(raw[..<colon])
            portText = raw[raw.index(after: colon)...]
        }
        // An IP literal or a host name: ASCII letters, digits and `.-:%_` only.
        let allowed = host.utf8.allSatisfy {
            (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || Array(".-:%_".utf8).contains($0)
        }
        guard !host.isEmpty, host.utf8.count <= 253, allowed else { return .unknown }
        return .member(host: host, port: portText.flatMap { port(.string(String($0))) })
    }

    /// A trimmed, non-empty string, cut to `maximumTextLength` characters.
    static func text(_ value: JSONValue?) -> String? {
        guard let string = value?.stringValue else { return nil }
        let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return nil }
        return trimmed.count > maximumTextLength ? String(trimmed.prefix(maximumTextLength)) : trimmed
    }

    /// A UUID (dashed or not, any case) as 32 lower-case hex digits.
    static func uuid(_ value: JSONValue?) -> String? {
        guard let string = value?.stringValue, string.utf8.count <= 64 else { return nil }
        let hex = string.trimmingCharacters(in: .whitespaces).lowercased().filter { $0 != "-" }
        guard hex.utf8.count == 32, hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            return nil
        }
        return hex
    }

    /// A port 1–65535 from a whole number or a string of digits.
    static func port(_ value: JSONValue?) -> Int? {
        let number: Int?
        switch value {
        case .number?: number = value?.intValue
        case .string(let text)?: number = text.utf8.count <= 5 && text.utf8.allSatisfy { (48...57).contains($0) } ? Int(text) : nil
        default: number = nil
        }
        guard let number, (1...65_535).contains(number) else { return nil }
        return number
    }
}
