import CastProtocol
import Foundation
import Yams

/// `displays`: a keep per display (mqtt-api.md §13), the same object as `command/keep`.
///
/// ```yaml
/// displays:
///   kitchen_display:
///     keep: {app: dashcast, url: "https://dash.example/kitchen", when: {from: "07:00", to: "22:00"}}
/// ```
extension ConfigurationLoader {
    static func displays(_ node: Node, path: String) throws -> [String: String] {
        if node.tagName == .null { return [:] }
        guard let mapping = node.mapping else {
            throw ConfigurationError(path: path, message: "expected a mapping of devices to {keep: {...}}, got \(describe(node))")
        }
        var out: [String: String] = [:]
        let parser = CommandParser()
        for (k, v) in mapping {
            guard let device = k.scalar?.string, !device.isEmpty else {
                throw ConfigurationError(path: path, message: "keys must name devices (id, friendly name or topic name)")
            }
            let devicePath = "\(path).\(device)"
            guard let entry = v.mapping else {
                throw ConfigurationError(path: devicePath, message: "expected a mapping with keep, got \(describe(v))")
            }
            for (key, value) in entry {
                guard key.scalar?.string == "keep" else {
                    throw ConfigurationError(path: "\(devicePath).\(key.scalar?.string ?? "?")", message: "unknown key (a display has keep)")
                }
                let json = try jsonValue(value, path: "\(devicePath).keep")
                guard case .object(let dict) = json else {
                    throw ConfigurationError(path: "\(devicePath).keep", message: "expected a mapping like {app: dashcast, url: ...}")
                }
                do {
                    _ = try parser.parseKeepSpec(dict)
                } catch let e as BridgeError {
                    throw ConfigurationError(path: "\(devicePath).keep", message: e.message)
                }
                out[device] = JSONOutput.text(json)
            }
        }
        return out
    }

    /// A YAML node as JSON (mappings, sequences, scalars; a scalar is a number or a boolean only
    /// where YAML resolves it so, and a quoted one is text).
    static func jsonValue(_ node: Node, path: String) throws -> JSONValue {
        switch node {
        case .mapping(let m):
            var o: [String: JSONValue] = [:]
            for (k, v) in m {
                guard let key = k.scalar?.string else { throw ConfigurationError(path: path, message: "keys must be plain names") }
                o[key] = try jsonValue(v, path: "\(path).\(key)")
            }
            return .object(o)
        case .sequence(let s):
            return .array(try s.map { try jsonValue($0, path: path) })
        case .scalar(let scalar):
            if node.tagName == .null { return .null }
            if scalar.style == .plain {
                if let b = node.bool { return .bool(b) }
                if let i = node.int { return .number(Double(i)) }
                if let d = node.float { return .number(d) }
            }
            return .string(scalar.string)
        case .alias:
            throw ConfigurationError(path: path, message: "aliases are not supported here")
        }
    }

    /// A configured keep for `--print-config`: what it shows, never its token.
    static func printableKeep(_ json: String) -> String {
        guard case .object(var o)? = JSONOutput.parse(Array(json.utf8)) else { return "{}" }
        if o["refresh_token"] != nil { o["refresh_token"] = .string("***") }
        return JSONOutput.text(.object(o))
    }
}

extension BridgeCore {
    /// The configured keeps, parsed (the loader checked them).
    static func configuredKeeps(_ c: BridgeConfiguration, parser: CommandParser) -> [String: KeepSpec] {
        var out: [String: KeepSpec] = [:]
        for (device, text) in c.displays {
            guard case .object(let dict)? = JSONOutput.parse(Array(text.utf8)), let spec = try? parser.parseKeepSpec(dict) else { continue }
            out[device] = spec
        }
        return out
    }
}
