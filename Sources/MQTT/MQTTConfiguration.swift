import Settings

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the broker is: parsed from `mqtt://host[:port]` or `mqtts://host[:port]`.
public struct MQTTBrokerAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var tls: Bool

    public init(host: String, port: Int, tls: Bool) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// Parses a broker URL. The port defaults to 1883 (`mqtt`) or 8883 (`mqtts`); IPv6 literals go
    /// in brackets (`mqtt://[::1]:1883`). A trailing `/` is allowed, any other path is not.
    public init(url: String) throws(MQTTError) {
        func fail(_ why: String) -> MQTTError {
            MQTTError(code: .invalidConfiguration, message: "invalid MQTT URL \"\(url)\": \(why)")
        }
        let trimmed = url.trimmingWhitespace
        guard let schemeEnd = trimmed.firstRange(of: "://") else {
            throw fail("expected mqtt://host:port or mqtts://host:port")
        }
        let scheme = trimmed[..<schemeEnd.lowerBound].lowercased()
        switch scheme {
        case "mqtt", "tcp": tls = false
        case "mqtts", "ssl", "tls": tls = true
        default: throw fail("unknown scheme \"\(scheme)\" (use mqtt:// or mqtts://)")
        }
        var rest = trimmed[schemeEnd.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.contains("/") { throw fail("a path is not allowed") }
        if rest.contains("@") {
            throw fail("credentials in the URL are not supported; set username and password instead")
        }
        var hostPart: Substring
        var portPart: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw fail("unterminated IPv6 address") }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("unexpected text after the IPv6 address") }
                portPart = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        } else {
            hostPart = rest
        }
        guard !hostPart.isEmpty else { throw fail("missing host") }
        host = String(hostPart)
        if let portPart {
            guard let value = Int(portPart), (1...65535).contains(value) else {
                throw fail("bad port \"\(portPart)\" (expected 1-65535)")
            }
            port = value
        } else {
            port = tls ? 8883 : 1883
        }
    }

    /// `host:port` (IPv6 in brackets), as used in log metadata.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// `mqtt://host:port` or `mqtts://host:port`: which broker, never credentials (a URL has none).
    public var url: String { (tls ? "mqtts://" : "mqtt://") + description }
}

/// Everything needed to connect to the broker: the configuration file's `mqtt` section as the
/// configuration model has it (`broker`: URL, client id, credentials, TLS files, protocol
/// version, keepalive — read, not copied) and the client's own options, which no file sets
/// (clean start, session expiry, the last will, reconnect delays, in-flight window). Every field
/// has a default.
@dynamicMemberLookup
public struct MQTTConfiguration: Sendable {
    /// The `mqtt` section (its `baseTopic`, `qos` and `maxPayload` are the bridge's, not the
    /// client's).
    public var broker: BridgeConfiguration.MQTT
    /// False (the default) asks the broker to keep our session: subscriptions and QoS 1/2
    /// messages published while we were away survive a disconnect.
    public var cleanStart: Bool
    /// MQTT 5 Session Expiry Interval in seconds: how long the broker keeps our session after a
    /// disconnect (ignored with `cleanStart` and with MQTT 3.1.1, where sessions do not expire).
    public var sessionExpiry: UInt32
    /// The last will, published by the broker when we vanish without a clean disconnect.
    public var will: MQTTMessage?
    /// MQTT 5 Will Delay Interval in seconds: the broker publishes the will only when we have not
    /// come back (same client id) within this time, so a short blip does not count as a death.
    /// Nil (the default): the will carries no delay and the client speaks exactly the configured
    /// protocol. Set: with protocol 5, a broker that refuses MQTT 5 (CONNACK "unsupported
    /// protocol version") is spoken to in 3.1.1 instead, whose will has no delay (logged once).
    public var willDelay: UInt32?
    /// First delay before reconnecting; doubles on every failed attempt up to `reconnectMax`.
    public var reconnectInitial: Duration
    public var reconnectMax: Duration
    /// Maximum number of outgoing QoS 1/2 messages in flight (MQTT 5 Receive Maximum of the
    /// broker permitting). Further messages wait in the library's queue.
    public var maxInflight: Int

    /// The client for the configuration's `mqtt` section.
    public init(
        _ broker: BridgeConfiguration.MQTT,
        cleanStart: Bool = false,
        sessionExpiry: UInt32 = 86_400,
        will: MQTTMessage? = nil,
        willDelay: UInt32? = nil,
        reconnectInitial: Duration = .milliseconds(500),
        reconnectMax: Duration = .seconds(30),
        maxInflight: Int = 20
    ) {
        self.broker = broker
        self.cleanStart = cleanStart
        self.sessionExpiry = sessionExpiry
        self.will = will
        self.willDelay = willDelay
        self.reconnectInitial = reconnectInitial
        self.reconnectMax = reconnectMax
        self.maxInflight = maxInflight
    }

    /// A client configured field by field (tests and tools).
    public init(
        url: String = "mqtt://127.0.0.1:1883",
        clientID: String = "cast2mqtt",
        username: String? = nil,
        password: String? = nil,
        passwordFile: String? = nil,
        caFile: String? = nil,
        certFile: String? = nil,
        keyFile: String? = nil,
        insecure: Bool = false,
        protocolVersion: MQTTProtocolVersion = .v5,
        keepalive: Int = 30,
        cleanStart: Bool = false,
        sessionExpiry: UInt32 = 86_400,
        will: MQTTMessage? = nil,
        willDelay: UInt32? = nil,
        reconnectInitial: Duration = .milliseconds(500),
        reconnectMax: Duration = .seconds(30),
        maxInflight: Int = 20
    ) {
        self.init(BridgeConfiguration.MQTT(), cleanStart: cleanStart, sessionExpiry: sessionExpiry, will: will,
                  willDelay: willDelay,
                  reconnectInitial: reconnectInitial, reconnectMax: reconnectMax, maxInflight: maxInflight)
        self.url = url
        self.clientID = clientID
        self.username = username
        self.password = password
        self.passwordFile = passwordFile
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.insecure = insecure
        self.protocolVersion = protocolVersion
        self.keepalive = keepalive
    }

    // The section's fields (`url`, `clientID`, `username`, `password`, `passwordFile`, `caFile`,
    // `certFile`, `keyFile`, `insecure`, `keepalive`) are read and written through to `broker`.
    public subscript<Value>(dynamicMember field: WritableKeyPath<BridgeConfiguration.MQTT, Value>) -> Value {
        get { broker[keyPath: field] }
        set { broker[keyPath: field] = newValue }
    }

    /// The section's `protocol_version` (`3.1.1`, or anything else for 5).
    public var protocolVersion: MQTTProtocolVersion {
        get { broker.protocolVersion.hasPrefix("3") ? .v311 : .v5 }
        set { broker.protocolVersion = newValue.rawValue }
    }
    /// Checks the configuration and returns the broker address. Throws `MQTTError` with
    /// code `.invalidConfiguration` and a sentence saying what to fix.
    public func validate() throws(MQTTError) -> MQTTBrokerAddress {
        let addresses = try validateBrokers()
        return addresses[0]
    }

    /// Checks the configuration and returns every broker's address, in order (`urls`: at least
    /// one; all plain or all TLS, since the TLS settings are shared).
    public func validateBrokers() throws(MQTTError) -> [MQTTBrokerAddress] {
        func fail(_ why: String) -> MQTTError { MQTTError(code: .invalidConfiguration, message: why) }
        guard !broker.urls.isEmpty else { throw fail("no broker URL") }
        var addresses: [MQTTBrokerAddress] = []
        for url in broker.urls { addresses.append(try MQTTBrokerAddress(url: url)) }
        let address = addresses[0]
        if addresses.contains(where: { $0.tls != address.tls }) {
            throw fail("the broker URLs must be all mqtt:// or all mqtts:// (they share the TLS settings)")
        }
        if broker.clientID.isEmpty && !cleanStart {
            throw fail("a persistent session (clean start off) needs a client id")
        }
        if broker.clientID.utf8.count > 65535 { throw fail("client id is too long") }
        if broker.keepalive < 5 || broker.keepalive > 65535 { throw fail("keepalive must be 5-65535 seconds, not \(broker.keepalive)") }
        if broker.password != nil && broker.passwordFile != nil {
            throw fail("set either password or password_file, not both")
        }
        if (broker.password != nil || broker.passwordFile != nil) && broker.username == nil {
            throw fail("a password needs a username")
        }
        if !address.tls && (broker.caFile != nil || broker.certFile != nil || broker.keyFile != nil || broker.insecure) {
            throw fail("TLS options (ca_file, cert_file, key_file, insecure) need an mqtts:// URL")
        }
        if (broker.certFile == nil) != (broker.keyFile == nil) {
            throw fail("cert_file and key_file must be given together")
        }
        if reconnectInitial <= .zero || reconnectMax < reconnectInitial {
            throw fail("reconnect delays must be positive, with reconnect_max >= reconnect_initial")
        }
        if maxInflight < 1 || maxInflight > 65535 { throw fail("max_inflight must be 1-65535") }
        if let will, will.topic.isEmpty { throw fail("the last will needs a topic") }
        if willDelay != nil && will == nil { throw fail("a will delay needs a last will") }
        return addresses
    }

    /// The password to send: `password`, or the first line of `passwordFile`.
    func resolvedPassword() throws(MQTTError) -> String? {
        guard let passwordFile = broker.passwordFile else { return broker.password }
        guard let file = fopen(passwordFile, "r") else {
            let why = String(cString: strerror(errno))
            throw MQTTError(code: .invalidConfiguration, message: "cannot read password file \(passwordFile): \(why)")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        while bytes.count < 65536 {
            let c = fgetc(file)
            if c == EOF || c == 10 || c == 13 { break }
            bytes.append(UInt8(truncatingIfNeeded: c))
        }
        guard let line = String(validating: bytes, as: UTF8.self), !line.isEmpty else {
            throw MQTTError(
                code: .invalidConfiguration, message: "password file \(passwordFile) has an empty first line")
        }
        return line
    }
}

extension StringProtocol {
    var trimmingWhitespace: Substring {
        let s = self[...]
        guard let first = s.firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = s.lastIndex(where: { !$0.isWhitespace }) ?? first
        return Substring(s[first...last])
    }
}
