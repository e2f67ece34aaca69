import Foundation
import Yams

/// The Home Assistant add-on's side of the configuration (docs/configuration.md, "Under the
/// Home Assistant Supervisor"): the add-on's options file and the Supervisor's answer about the
/// MQTT service, read into configuration values. Pure: the daemon does the reading and the HTTP
/// request; this file decides what the bytes mean. Every input is bounded in size and every
/// failure is a `SupervisorError` naming what was wrong (never a secret's value).
public enum Supervisor {
    /// `mqtt.url: supervisor`: the broker comes from the Supervisor's services API.
    public static let brokerFromSupervisor = "supervisor"
    /// Where the Supervisor answers add-ons (`CAST2MQTT_SUPERVISOR_URL` moves it, for tests).
    public static let defaultURL = "http://supervisor"
    /// The address of the Supervisor's ingress proxy on the hassio network.
    public static let defaultIngressAddress = "172.30.32.2"
    /// The add-on's options (`CAST2MQTT_ADDON_OPTIONS` moves it, for tests).
    public static let defaultOptionsPath = "/data/options.json"

    public static let tokenVariable = "SUPERVISOR_TOKEN"
    public static let urlVariable = "CAST2MQTT_SUPERVISOR_URL"
    public static let optionsVariable = "CAST2MQTT_ADDON_OPTIONS"

    /// The Supervisor's token, when the process runs as an add-on.
    public static func token(_ environment: [String: String]) -> String? {
        guard let raw = environment[tokenVariable] else { return nil }
        let token = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : token
    }

    /// Does `mqtt.url` say where the broker is? Only an explicit URL (in the environment or the
    /// file) does; unset or `supervisor` leaves it to the Supervisor.
    public static func mqttURLChosen(yaml: String?, environment: [String: String]) -> Bool {
        if let value = environment["CAST2MQTT_MQTT_URL"] {
            return value.trimmingCharacters(in: .whitespaces) != brokerFromSupervisor
        }
        guard let yaml, let root = try? Yams.compose(yaml: yaml), let sections = root.mapping,
              let mqtt = sections["mqtt"]?.mapping, let url = mqtt["url"] else { return false }
        return url.string != brokerFromSupervisor
    }

    /// The environment the configuration is loaded with under the Supervisor: the add-on's
    /// options as `CAST2MQTT_*` variables over the process's own, `mqtt.url` set to
    /// `supervisor` unless a URL was chosen, the ingress proxy's address unless one is set, and
    /// `generatedToken` as the web token when the page listens beyond loopback with none (then
    /// only the ingress proxy reaches the page without a token).
    public static func environment(_ environment: [String: String], options: AddonOptions, yaml: String?,
                                   generatedToken: @autoclosure () -> String) -> [String: String] {
        var env = environment
        if let level = options.logLevel { env["CAST2MQTT_LOG_LEVEL"] = level }
        if let topic = options.baseTopic { env["CAST2MQTT_MQTT_BASE_TOPIC"] = topic }
        if let token = options.webToken {
            env["CAST2MQTT_WEB_TOKEN"] = token
            env["CAST2MQTT_WEB_PASSWORD_FILE"] = nil
        }
        if !mqttURLChosen(yaml: yaml, environment: environment) { env["CAST2MQTT_MQTT_URL"] = brokerFromSupervisor }
        if env["CAST2MQTT_WEB_INGRESS_ADDRESS"] == nil { env["CAST2MQTT_WEB_INGRESS_ADDRESS"] = defaultIngressAddress }
        let listen = env["CAST2MQTT_WEB_LISTEN"].flatMap(WebListenAddress.init)
        let hasSecret = [env["CAST2MQTT_WEB_TOKEN"], env["CAST2MQTT_WEB_PASSWORD_FILE"]]
            .contains { ($0?.trimmingCharacters(in: .whitespaces).isEmpty ?? true) == false }
        if let listen, !listen.isLoopback, !hasSecret { env["CAST2MQTT_WEB_TOKEN"] = generatedToken() }
        return env
    }

    /// The base URL split into host, port and path prefix: `http://host[:port][/prefix]`.
    public struct Endpoint: Sendable, Hashable {
        public var host: String
        public var port: Int
        public var prefix: String

        public init(host: String, port: Int, prefix: String) {
            self.host = host
            self.port = port
            self.prefix = prefix
        }

        public init(_ text: String) throws(SupervisorError) {
            guard text.utf8.count <= 2048, text.hasPrefix("http://") else {
                throw .invalid(field: urlVariable, reason: "must be http://HOST[:PORT][/PATH]")
            }
            let rest = text.dropFirst("http://".count)
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let authority = rest[..<slash]
            var prefix = String(rest[slash...])
            while prefix.hasSuffix("/") { prefix.removeLast() }
            var host = Substring(authority), port = 80
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { throw .invalid(field: urlVariable, reason: "unclosed [") }
                host = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":"), let p = Int(after.dropFirst()), (1...65535).contains(p) else {
                        throw .invalid(field: urlVariable, reason: "bad port")
                    }
                    port = p
                }
            } else if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                guard let p = Int(authority[authority.index(after: colon)...]), (1...65535).contains(p) else {
                    throw .invalid(field: urlVariable, reason: "bad port")
                }
                port = p
            }
            guard Supervisor.isHostName(host) else { throw .invalid(field: urlVariable, reason: "bad host") }
            self.host = String(host)
            self.port = port
            self.prefix = prefix
        }
    }

    /// A host name or an IP literal: letters, digits, `.-:_`, at most 253 bytes.
    static func isHostName(_ s: Substring) -> Bool {
        !s.isEmpty && s.utf8.count <= 253
            && s.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-:_".unicodeScalars.contains($0)) }
    }
}

/// What went wrong with the Supervisor's answer or the add-on's options.
public enum SupervisorError: Error, Sendable, Hashable, CustomStringConvertible {
    case tooLarge(what: String, limit: Int)
    case notJSON(what: String)
    /// The Supervisor answered `result` other than `ok` (its message, shortened).
    case refused(String)
    case missing(field: String)
    case invalid(field: String, reason: String)
    /// No usable answer (HTTP status, connection, time-out).
    case unavailable(String)

    public var description: String {
        switch self {
        case .tooLarge(let what, let limit): return "\(what) is larger than \(limit) bytes"
        case .notJSON(let what): return "\(what) is not a JSON object"
        case .refused(let message): return "the Supervisor refused: \(message)"
        case .missing(let field): return "\(field) is missing"
        case .invalid(let field, let reason): return "\(field): \(reason)"
        case .unavailable(let why): return "the Supervisor cannot be asked: \(why)"
        }
    }
}

/// JSON read with `JSONDecoder` (booleans, numbers and strings stay distinct), failures turned
/// into `SupervisorError`s naming the field.
enum SupervisorJSON {
    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], what: String, limit: Int) throws(SupervisorError) -> T {
        guard bytes.count <= limit else { throw .tooLarge(what: what, limit: limit) }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as SupervisorError {
            throw error
        } catch let DecodingError.typeMismatch(_, context) where context.codingPath.isEmpty {
            throw .notJSON(what: what)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw .invalid(field: path(context.codingPath), reason: "wrong type")
        } catch let DecodingError.keyNotFound(key, context) {
            throw .missing(field: path(context.codingPath + [key]))
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw .invalid(field: path(context.codingPath), reason: "not valid")
        } catch {
            throw .notJSON(what: what)
        }
    }

    static func path(_ keys: [any CodingKey]) -> String {
        var out = ""
        for key in keys {
            if let index = key.intValue { out += "[\(index)]" } else { out += (out.isEmpty ? "" : ".") + key.stringValue }
        }
        return out.isEmpty ? "the answer" : out
    }

    /// A string of at most `limit` bytes without control characters; nil for nil.
    static func text(_ value: String?, field: String, limit: Int = 1024) throws(SupervisorError) -> String? {
        guard let value else { return nil }
        guard value.utf8.count <= limit else { throw .invalid(field: field, reason: "longer than \(limit) bytes") }
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalid(field: field, reason: "contains control characters")
        }
        return value
    }
}

/// A port as a JSON number or a string of digits (the Supervisor has sent both).
struct FlexibleInt: Decodable, Sendable {
    var value: Int
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let n = try? container.decode(Int.self) {
            value = n
        } else if let s = try? container.decode(String.self), s.utf8.count <= 6, let n = Int(s) {
            value = n
        } else {
            throw DecodingError.typeMismatch(Int.self, .init(codingPath: decoder.codingPath, debugDescription: "a port"))
        }
    }
}

/// The MQTT broker as the Supervisor names it (`GET /services/mqtt`).
public struct SupervisorMQTTService: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    public var ssl: Bool

    public static let maximumBytes = 64 * 1024

    public init(host: String, port: Int, username: String?, password: String?, ssl: Bool) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.ssl = ssl
    }

    struct Answer: Decodable {
        struct Service: Decodable {
            var host: String?
            var port: FlexibleInt?
            var ssl: Bool?
            var username: String?
            var password: String?
        }
        var result: String?
        var message: String?
        var data: Service?
    }

    /// `{"result": "ok", "data": {"host", "port", "ssl", "username", "password", ...}}`.
    public static func parse(_ bytes: [UInt8]) throws(SupervisorError) -> SupervisorMQTTService {
        let answer = try SupervisorJSON.decode(Answer.self, bytes, what: "the services answer", limit: maximumBytes)
        guard answer.result == "ok" else {
            let message = (try? SupervisorJSON.text(answer.message, field: "message", limit: 4096)) ?? nil
            throw .refused(String((message ?? "result \(answer.result ?? "missing")").prefix(200)))
        }
        guard let data = answer.data else { throw .missing(field: "data") }
        guard let host = try SupervisorJSON.text(data.host, field: "data.host", limit: 253) else { throw .missing(field: "data.host") }
        guard Supervisor.isHostName(Substring(host)) else {
            throw .invalid(field: "data.host", reason: "must be a host name or an IP address")
        }
        let ssl = data.ssl ?? false
        let port = data.port?.value ?? (ssl ? 8883 : 1883)
        guard (1...65535).contains(port) else { throw .invalid(field: "data.port", reason: "must be 1-65535") }
        let username = try SupervisorJSON.text(data.username, field: "data.username")
        let password = try SupervisorJSON.text(data.password, field: "data.password")
        return SupervisorMQTTService(host: host, port: port, username: username.flatMap { $0.isEmpty ? nil : $0 },
                                     password: password.flatMap { $0.isEmpty ? nil : $0 }, ssl: ssl)
    }

    /// `mqtt://host:port` or `mqtts://host:port` (an IPv6 address in brackets).
    public var url: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(ssl ? "mqtts" : "mqtt")://\(h):\(port)"
    }

    /// The broker, its user and its password in `config.mqtt` (the password file is dropped:
    /// the Supervisor's credentials are the ones that work).
    public func apply(to config: inout BridgeConfiguration) {
        config.mqtt.url = url
        config.mqtt.username = username
        config.mqtt.password = password
        config.mqtt.passwordFile = nil
    }

    /// For logs: everything but the password.
    public var description: String {
        "\(url) user \(username ?? "(none)") password \(password == nil ? "(none)" : "***")"
    }
}

/// The add-on's options (`/data/options.json`, written by the Supervisor from the schema in
/// deploy/home-assistant-addon/cast2mqtt/config.yaml). Unknown keys are ignored (a newer
/// add-on version may add some); an empty string is the same as absent.
public struct AddonOptions: Sendable, Hashable {
    public var logLevel: String?
    public var baseTopic: String?
    public var devices: [BridgeConfiguration.StaticDevice] = []
    public var webToken: String?

    public static let maximumBytes = 256 * 1024
    public static let maximumDevices = 256

    public init(logLevel: String? = nil, baseTopic: String? = nil, devices: [BridgeConfiguration.StaticDevice] = [],
                webToken: String? = nil) {
        self.logLevel = logLevel
        self.baseTopic = baseTopic
        self.devices = devices
        self.webToken = webToken
    }

    struct File: Decodable {
        struct Device: Decodable {
            var host: String?
            var port: FlexibleInt?
            var name: String?
            var id: String?
        }
        var log_level: String?
        var base_topic: String?
        var web_token: String?
        var devices: [Device]?
    }

    public static func parse(_ bytes: [UInt8]) throws(SupervisorError) -> AddonOptions {
        let file = try SupervisorJSON.decode(File.self, bytes, what: "the options file", limit: maximumBytes)
        func nonEmpty(_ s: String?) -> String? {
            guard let s, !s.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
            return s
        }
        var options = AddonOptions()
        options.logLevel = nonEmpty(try SupervisorJSON.text(file.log_level, field: "log_level", limit: 16))
        if let level = options.logLevel, !["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(level) {
            throw .invalid(field: "log_level", reason: "must be trace, debug, info, notice, warning, error or critical")
        }
        options.baseTopic = nonEmpty(try SupervisorJSON.text(file.base_topic, field: "base_topic", limit: 256))
        if let topic = options.baseTopic, !ConfigurationLoader.isTopicPrefix(topic) {
            throw .invalid(field: "base_topic", reason: ConfigurationLoader.topicPrefixRule)
        }
        options.webToken = nonEmpty(try SupervisorJSON.text(file.web_token, field: "web_token", limit: 1024))
        let devices = file.devices ?? []
        guard devices.count <= maximumDevices else { throw .invalid(field: "devices", reason: "more than \(maximumDevices) devices") }
        for (n, entry) in devices.enumerated() {
            let field = "devices[\(n)]"
            guard let host = nonEmpty(try SupervisorJSON.text(entry.host, field: "\(field).host", limit: 253)) else {
                throw .missing(field: "\(field).host")
            }
            guard Supervisor.isHostName(Substring(host)) else {
                throw .invalid(field: "\(field).host", reason: "must be a host name or an IP address")
            }
            let port = entry.port?.value ?? 8009
            guard (1...65535).contains(port) else { throw .invalid(field: "\(field).port", reason: "must be 1-65535") }
            let name = nonEmpty(try SupervisorJSON.text(entry.name, field: "\(field).name", limit: 256))
            let id = nonEmpty(try SupervisorJSON.text(entry.id, field: "\(field).id", limit: 64))
            options.devices.append(.init(host: host, port: port, name: name, id: id))
        }
        return options
    }
}
