import Foundation
import Yams

/// Reads the YAML file and `CAST2MQTT_<SECTION>_<KEY>` environment variables. Every key is
/// listed once in `keys`; unknown keys and wrong types are errors naming the key's path.
public enum ConfigurationLoader {
    /// `word`: any scalar's text (`off` unquoted is a word here, not YAML 1.1's false).
    /// `urls`: one string or a non-empty list of strings (`mqtt.url`).
    enum Kind { case string, optionalString, int, double, bool, list, map, protocolVersion, word, urls }
    enum Value { case string(String), null, int(Int), double(Double), bool(Bool), list([String]), map([String: String]) }

    struct Key {
        var path: String
        var kind: Kind
        var secret = false
        var set: (inout BridgeConfiguration, Value) -> Void
        var get: (BridgeConfiguration) -> String
        var envName: String { "CAST2MQTT_" + path.uppercased().replacingOccurrences(of: ".", with: "_") }
    }

    /// Sections that hold keys (a mapping in YAML).
    static let sections: Set<String> = ["mqtt", "discovery", "cast", "cast.reconnect", "media", "homeassistant", "log", "web"]

    static func s(_ v: Value) -> String? { if case .string(let x) = v { return x }; return nil }
    static func i(_ v: Value) -> Int { if case .int(let x) = v { return x }; return 0 }
    static func d(_ v: Value) -> Double {
        if case .double(let x) = v { return x }
        if case .int(let x) = v { return Double(x) }
        return 0
    }
    static func b(_ v: Value) -> Bool { if case .bool(let x) = v { return x }; return false }
    static func l(_ v: Value) -> [String] { if case .list(let x) = v { return x }; return [] }
    static func m(_ v: Value) -> [String: String] { if case .map(let x) = v { return x }; return [:] }
    static func show(_ m: [String: String]) -> String {
        "{" + m.sorted { $0.key < $1.key }.map { "\($0.key): \"\($0.value)\"" }.joined(separator: ", ") + "}"
    }
    static func show(_ s: String?) -> String { s.map { "\"\($0)\"" } ?? "null" }
    static func show(_ l: [String]) -> String { "[" + l.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }

    static var keys: [Key] {
        [
            Key(path: "mqtt.url", kind: .urls, set: { $0.mqtt.urls = s($1).map { [$0] } ?? l($1) },
                get: { $0.mqtt.urls.count == 1 ? show(maskURL($0.mqtt.url)) : show($0.mqtt.urls.map(maskURL)) }),
            Key(path: "mqtt.base_topic", kind: .string, set: { $0.mqtt.baseTopic = s($1) ?? "" }, get: { show($0.mqtt.baseTopic) }),
            Key(path: "mqtt.client_id", kind: .string, set: { $0.mqtt.clientID = s($1) ?? "" }, get: { show($0.mqtt.clientID) }),
            Key(path: "mqtt.username", kind: .optionalString, set: { $0.mqtt.username = s($1) }, get: { show($0.mqtt.username) }),
            Key(path: "mqtt.password", kind: .optionalString, secret: true, set: { $0.mqtt.password = s($1) },
                get: { $0.mqtt.password == nil ? "null" : "\"***\"" }),
            Key(path: "mqtt.password_file", kind: .optionalString, set: { $0.mqtt.passwordFile = s($1) }, get: { show($0.mqtt.passwordFile) }),
            Key(path: "mqtt.ca_file", kind: .optionalString, set: { $0.mqtt.caFile = s($1) }, get: { show($0.mqtt.caFile) }),
            Key(path: "mqtt.cert_file", kind: .optionalString, set: { $0.mqtt.certFile = s($1) }, get: { show($0.mqtt.certFile) }),
            Key(path: "mqtt.key_file", kind: .optionalString, set: { $0.mqtt.keyFile = s($1) }, get: { show($0.mqtt.keyFile) }),
            Key(path: "mqtt.insecure", kind: .bool, set: { $0.mqtt.insecure = b($1) }, get: { "\($0.mqtt.insecure)" }),
            Key(path: "mqtt.protocol", kind: .protocolVersion, set: { $0.mqtt.protocolVersion = s($1) ?? "5" }, get: { show($0.mqtt.protocolVersion) }),
            Key(path: "mqtt.qos", kind: .int, set: { $0.mqtt.qos = i($1) }, get: { "\($0.mqtt.qos)" }),
            Key(path: "mqtt.keepalive", kind: .int, set: { $0.mqtt.keepalive = i($1) }, get: { "\($0.mqtt.keepalive)" }),
            Key(path: "mqtt.will_delay", kind: .int, set: { $0.mqtt.willDelay = i($1) }, get: { "\($0.mqtt.willDelay)" }),
            Key(path: "mqtt.max_payload", kind: .int, set: { $0.mqtt.maxPayload = i($1) }, get: { "\($0.mqtt.maxPayload)" }),
            Key(path: "discovery.mdns", kind: .bool, set: { $0.discovery.mdns = b($1) }, get: { "\($0.discovery.mdns)" }),
            Key(path: "discovery.interfaces", kind: .list, set: { $0.discovery.interfaces = l($1) }, get: { show($0.discovery.interfaces) }),
            Key(path: "discovery.include", kind: .list, set: { $0.discovery.include = l($1) }, get: { show($0.discovery.include) }),
            Key(path: "discovery.exclude", kind: .list, set: { $0.discovery.exclude = l($1) }, get: { show($0.discovery.exclude) }),
            Key(path: "cast.heartbeat_interval", kind: .double, set: { $0.cast.heartbeatInterval = d($1) }, get: { "\($0.cast.heartbeatInterval)" }),
            Key(path: "cast.heartbeat_timeout", kind: .double, set: { $0.cast.heartbeatTimeout = d($1) }, get: { "\($0.cast.heartbeatTimeout)" }),
            Key(path: "cast.request_timeout", kind: .double, set: { $0.cast.requestTimeout = d($1) }, get: { "\($0.cast.requestTimeout)" }),
            Key(path: "cast.reconnect.initial", kind: .double, set: { $0.cast.reconnectInitial = d($1) }, get: { "\($0.cast.reconnectInitial)" }),
            Key(path: "cast.reconnect.max", kind: .double, set: { $0.cast.reconnectMax = d($1) }, get: { "\($0.cast.reconnectMax)" }),
            Key(path: "cast.transfer_window", kind: .double, set: { $0.cast.transferWindow = d($1) }, get: { "\($0.cast.transferWindow)" }),
            Key(path: "cast.device_auth", kind: .word, set: { $0.cast.deviceAuth = s($1) ?? "" }, get: { show($0.cast.deviceAuth) }),
            Key(path: "cast.device_auth_roots", kind: .list, set: { $0.cast.deviceAuthRoots = l($1) },
                get: { show($0.cast.deviceAuthRoots) }),
            Key(path: "cast.allowed_namespaces", kind: .list, set: { $0.cast.allowedNamespaces = l($1) }, get: { show($0.cast.allowedNamespaces) }),
            Key(path: "media.position_interval", kind: .double, set: { $0.media.positionInterval = d($1) }, get: { "\($0.media.positionInterval)" }),
            Key(path: "homeassistant.enabled", kind: .bool, set: { $0.homeassistant.enabled = b($1) }, get: { "\($0.homeassistant.enabled)" }),
            Key(path: "homeassistant.discovery_prefix", kind: .string, set: { $0.homeassistant.discoveryPrefix = s($1) ?? "" },
                get: { show($0.homeassistant.discoveryPrefix) }),
            Key(path: "homeassistant.discovery", kind: .string, set: { $0.homeassistant.discovery = s($1) ?? "" },
                get: { show($0.homeassistant.discovery) }),
            Key(path: "instance", kind: .optionalString, set: { $0.instance = s($1) }, get: { show($0.instance) }),
            Key(path: "primary", kind: .optionalString, set: { $0.primary = s($1) }, get: { show($0.primary) }),
            Key(path: "state_dir", kind: .string, set: { $0.stateDir = s($1) ?? "" }, get: { show($0.stateDir) }),
            Key(path: "log.level", kind: .string, set: { $0.log.level = s($1) ?? "" }, get: { show($0.log.level) }),
            Key(path: "log.levels", kind: .map, set: { $0.log.levels = m($1) }, get: { show($0.log.levels) }),
            Key(path: "log.devices", kind: .list, set: { $0.log.devices = l($1) }, get: { show($0.log.devices) }),
            Key(path: "log.format", kind: .string, set: { $0.log.format = s($1) ?? "" }, get: { show($0.log.format) }),
            Key(path: "web.enabled", kind: .bool, set: { $0.web.enabled = b($1) }, get: { "\($0.web.enabled)" }),
            Key(path: "web.listen", kind: .string, set: { $0.web.listen = s($1) ?? "" }, get: { show($0.web.listen) }),
            Key(path: "web.token", kind: .optionalString, secret: true, set: { $0.web.token = s($1) },
                get: { $0.web.token == nil ? "null" : "\"***\"" }),
            Key(path: "web.password_file", kind: .optionalString, set: { $0.web.passwordFile = s($1) }, get: { show($0.web.passwordFile) }),
            Key(path: "web.ingress_address", kind: .optionalString, set: { $0.web.ingressAddress = s($1) },
                get: { show($0.web.ingressAddress) }),
            Key(path: "web.metrics_public", kind: .bool, set: { $0.web.metricsPublic = b($1) }, get: { "\($0.web.metricsPublic)" }),
        ]
    }

    /// Every environment variable name that overrides a key (documentation and tests).
    public static var environmentVariables: [String: String] {
        Dictionary(uniqueKeysWithValues: keys.map { ($0.envName, $0.path) })
    }

    /// Parses YAML text (empty text = all defaults), then applies environment overrides, then validates.
    public static func load(yaml: String, environment: [String: String] = [:]) throws -> BridgeConfiguration {
        var config = BridgeConfiguration()
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigurationError(path: "", message: "the file is not valid YAML: \(error)")
        }
        if let root, root.tagName != .null {
            guard let mapping = root.mapping else {
                throw ConfigurationError(path: "", message: "the top level must be a mapping of sections")
            }
            try apply(mapping: mapping, prefix: "", to: &config)
        }
        try applyEnvironment(environment, to: &config)
        resolveInstance(&config, hostName: environment["CAST2MQTT_HOSTNAME"] ?? ProcessInfo.processInfo.hostName)
        try validate(config)
        return config
    }

    /// Reads the file at `path` (nil = defaults only) and calls `load(yaml:environment:)`.
    /// With the page on, `web.password_file` is read here too (`webSecret`).
    public static func load(path: String?, environment: [String: String]) throws -> BridgeConfiguration {
        let config = try loadFile(path: path, environment: environment)
        if config.web.enabled { _ = try webSecret(config) }
        return config
    }

    static func loadFile(path: String?, environment: [String: String]) throws -> BridgeConfiguration {
        guard let path else { return try load(yaml: "", environment: environment) }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(path: "", message: "cannot read \(path): \(error.localizedDescription)")
        }
        return try load(yaml: text, environment: environment)
    }

    /// The effective configuration as YAML-like text with secrets masked (for `check-config`, the
    /// startup log and the web page).
    public static func printable(_ config: BridgeConfiguration) -> String {
        var lines: [String] = []
        var section = ""
        for key in keys {
            let parts = key.path.split(separator: ".").map(String.init)
            let head = parts.count > 1 ? parts[0] : ""
            if head != section {
                section = head
                if !head.isEmpty { lines.append("\(head):") }
            }
            if parts.count == 1 {
                lines.append("\(parts[0]): \(key.get(config))")
            } else {
                lines.append("  " + parts.dropFirst().joined(separator: ".") + ": " + key.get(config))
            }
            if key.path == "primary" {
                lines.append("displays:" + (config.displays.isEmpty ? " {}" : ""))
                for (device, keep) in config.displays.sorted(by: { $0.key < $1.key }) {
                    lines.append("  \(show(device)): {keep: \(printableKeep(keep))}")
                }
                lines.append("prefer:" + (config.prefer.isEmpty ? " {}" : ""))
                for (device, names) in config.prefer.sorted(by: { $0.key < $1.key }) { lines.append("  \(show(device)): \(show(names))") }
            }
            if key.path == "discovery.mdns" {
                lines.append("  devices:" + (config.discovery.devices.isEmpty ? " []" : ""))
                for dev in config.discovery.devices {
                    lines.append("    - {host: \(show(dev.host)), port: \(dev.port), name: \(show(dev.name)), id: \(show(dev.id)), topic: \(show(dev.topic))}")
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func maskURL(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url.range(of: "@", range: scheme.upperBound..<url.endIndex) else { return url }
        let userinfo = url[scheme.upperBound..<at.lowerBound]
        guard let colon = userinfo.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at.lowerBound...])
    }

    // MARK: - YAML

    static func apply(mapping: Node.Mapping, prefix: String, to config: inout BridgeConfiguration) throws {
        let table = Dictionary(uniqueKeysWithValues: keys.map { ($0.path, $0) })
        for (keyNode, valueNode) in mapping {
            guard let name = keyNode.scalar?.string else {
                throw ConfigurationError(path: prefix, message: "keys must be plain names")
            }
            let path = prefix.isEmpty ? name : "\(prefix).\(name)"
            if sections.contains(path) {
                if valueNode.tagName == .null { continue }
                guard let sub = valueNode.mapping else {
                    throw ConfigurationError(path: path, message: "expected a mapping (section), got \(describe(valueNode))")
                }
                try apply(mapping: sub, prefix: path, to: &config)
            } else if path == "discovery.devices" {
                config.discovery.devices = try staticDevices(valueNode, path: path)
            } else if path == "prefer" {
                config.prefer = try preferences(valueNode, path: path)
            } else if path == "displays" {
                config.displays = try displays(valueNode, path: path)
            } else if let key = table[path] {
                key.set(&config, try value(of: valueNode, kind: key.kind, path: path))
            } else {
                throw ConfigurationError(path: path, message: "unknown key")
            }
        }
    }

    static func describe(_ node: Node) -> String {
        describeNode(node)
    }

    static func describeNode(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar:
            switch node.tagName {
            case .int: return "an integer"
            case .float: return "a number"
            case .bool: return "a boolean"
            case .null: return "null"
            default: return "a string"
            }
        }
    }

    static func value(of node: Node, kind: Kind, path: String) throws -> Value {
        let tag = node.tagName
        func fail(_ expected: String) -> ConfigurationError {
            ConfigurationError(path: path, message: "expected \(expected), got \(describe(node))")
        }
        switch kind {
        case .string:
            guard node.scalar != nil, tag == .str, let v = node.string else { throw fail("a string") }
            return .string(v)
        case .optionalString:
            if tag == .null { return .null }
            guard node.scalar != nil, tag == .str, let v = node.string else { throw fail("a string or null") }
            return .string(v)
        case .urls:
            if node.scalar != nil, tag == .str, let v = node.string { return .string(v) }
            guard let seq = node.sequence, !seq.isEmpty else { throw fail("a broker URL or a list of them") }
            var out: [String] = []
            for (n, item) in seq.enumerated() {
                guard item.scalar != nil, item.tagName == .str, let text = item.string else {
                    throw ConfigurationError(path: "\(path)[\(n)]", message: "expected a broker URL, got \(describe(item))")
                }
                out.append(text)
            }
            return .list(out)
        case .protocolVersion:
            guard let text = node.scalar?.string else { throw fail("5 or \"3.1.1\"") }
            return .string(text)
        case .word:
            guard let text = node.scalar?.string, tag != .null else { throw fail("a word") }
            return .string(text)
        case .int:
            guard tag == .int else { throw fail("an integer") }
            guard let v = node.int else {
                throw ConfigurationError(path: path, message: "\(node.string ?? "the value") is out of range for an integer")
            }
            return .int(v)
        case .double:
            guard tag == .int || tag == .float, let v = node.float, v.isFinite else { throw fail("a number") }
            return .double(v)
        case .bool:
            guard tag == .bool, let v = node.bool else { throw fail("true or false") }
            return .bool(v)
        case .map:
            if tag == .null { return .map([:]) }
            guard let mapping = node.mapping else { throw fail("a mapping of names to strings") }
            var out: [String: String] = [:]
            for (k, v) in mapping {
                guard let name = k.scalar?.string, v.scalar != nil, v.tagName == .str, let text = v.string else {
                    throw ConfigurationError(path: path, message: "expected name: string pairs, got \(describe(v))")
                }
                out[name] = text
            }
            return .map(out)
        case .list:
            if tag == .null { return .list([]) }
            guard let seq = node.sequence else { throw fail("a list of strings") }
            var out: [String] = []
            for (n, item) in seq.enumerated() {
                guard item.scalar != nil, item.tagName == .str, let text = item.string else {
                    throw ConfigurationError(path: "\(path)[\(n)]", message: "expected a string, got \(describe(item))")
                }
                out.append(text)
            }
            return .list(out)
        }
    }

    /// The words of `cast.device_auth` (and of a static device's `device_auth`).
    static let deviceAuthWords: Set<String> = ["off", "report", "require"]

    static func staticDevices(_ node: Node, path: String) throws -> [BridgeConfiguration.StaticDevice] {
        if node.tagName == .null { return [] }
        guard let seq = node.sequence else {
            throw ConfigurationError(path: path, message: "expected a list of devices, got \(describe(node))")
        }
        var out: [BridgeConfiguration.StaticDevice] = []
        for (n, item) in seq.enumerated() {
            let itemPath = "\(path)[\(n)]"
            guard let map = item.mapping else {
                throw ConfigurationError(path: itemPath, message: "expected a mapping with host, port, name, id, topic, device_auth")
            }
            var dev = BridgeConfiguration.StaticDevice(host: "")
            for (k, v) in map {
                let name = k.scalar?.string ?? ""
                let p = "\(itemPath).\(name)"
                switch name {
                case "host": if case .string(let x) = try value(of: v, kind: .string, path: p) { dev.host = x }
                case "port": if case .int(let x) = try value(of: v, kind: .int, path: p) { dev.port = x }
                case "name": dev.name = s(try value(of: v, kind: .optionalString, path: p))
                case "id": dev.id = s(try value(of: v, kind: .optionalString, path: p))
                case "topic": dev.topic = s(try value(of: v, kind: .optionalString, path: p))
                case "device_auth":
                    dev.deviceAuth = s(try value(of: v, kind: .word, path: p))
                    if let word = dev.deviceAuth, !Self.deviceAuthWords.contains(word) {
                        throw ConfigurationError(path: p, message: "must be off, report or require")
                    }
                default: throw ConfigurationError(path: p, message: "unknown key")
                }
            }
            if dev.host.isEmpty { throw ConfigurationError(path: "\(itemPath).host", message: "a static device needs a host") }
            if !(1...65535).contains(dev.port) { throw ConfigurationError(path: "\(itemPath).port", message: "must be 1-65535") }
            out.append(dev)
        }
        return out
    }
}

extension Node {
    /// The resolved tag's name (`Tag.name` is internal to Yams).
    var tagName: Tag.Name { Tag.Name(rawValue: tag.rawValue) }
}
