import Foundation
import Yams

/// The keys of several instances on one base topic (mqtt-api.md §10): `instance`, `primary`,
/// `prefer`.
extension ConfigurationLoader {
    /// `instance: auto` becomes the host name (its first label, characters outside
    /// `[A-Za-z0-9_-]` as `-`); with an instance, `mqtt.client_id` left at its default becomes
    /// `cast2mqtt-<instance>` (two instances must not share a client id: the broker would
    /// disconnect one for the other).
    static func resolveInstance(_ config: inout BridgeConfiguration, hostName: String) {
        if config.instance == "auto" {
            let label = hostName.split(separator: ".").first.map(String.init) ?? hostName
            let name = String(label.unicodeScalars.map { scalar -> Character in
                scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "-" || scalar == "_") ? Character(scalar) : "-"
            }.prefix(64))
            config.instance = name.isEmpty ? "cast2mqtt" : name
        }
        if let instance = config.instance, config.mqtt.clientID == BridgeConfiguration.MQTT().clientID {
            config.mqtt.clientID = "cast2mqtt-\(instance)"
        }
    }

    /// `prefer`: a mapping of device (id, friendly name or topic name) to a list of instance names.
    static func preferences(_ node: Node, path: String) throws -> [String: [String]] {
        if node.tagName == .null { return [:] }
        guard let mapping = node.mapping else {
            throw ConfigurationError(path: path, message: "expected a mapping of devices to lists of instance names, got \(describe(node))")
        }
        var out: [String: [String]] = [:]
        for (k, v) in mapping {
            guard let device = k.scalar?.string, !device.isEmpty else {
                throw ConfigurationError(path: path, message: "keys must name devices")
            }
            let names: [String]
            if let seq = v.sequence {
                names = try seq.map { item in
                    guard item.scalar != nil, let text = item.string else {
                        throw ConfigurationError(path: "\(path).\(device)", message: "expected a list of instance names")
                    }
                    return text
                }
            } else if v.scalar != nil, let text = v.string {
                names = [text]
            } else {
                throw ConfigurationError(path: "\(path).\(device)", message: "expected a list of instance names, got \(describe(v))")
            }
            out[device] = names
        }
        return out
    }

    static func validateInstances(_ c: BridgeConfiguration) throws {
        if let instance = c.instance {
            guard InstanceRule.isValidName(instance) else {
                throw ConfigurationError(path: "instance", message: "must be 1-64 characters of A-Z, a-z, 0-9, _ and - (or auto)")
            }
        }
        if let primary = c.primary {
            guard InstanceRule.isValidName(primary) else {
                throw ConfigurationError(path: "primary", message: "must be an instance name (1-64 characters of A-Z, a-z, 0-9, _ and -)")
            }
        }
        for (device, names) in c.prefer.sorted(by: { $0.key < $1.key }) {
            for name in names where !InstanceRule.isValidName(name) {
                throw ConfigurationError(path: "prefer.\(device)", message: "\"\(name.prefix(80))\" is not an instance name")
            }
        }
        if c.instance == nil, c.primary != nil || !c.prefer.isEmpty {
            throw ConfigurationError(path: c.primary != nil ? "primary" : "prefer", message: "needs instance (several instances on one base topic)")
        }
    }
}
