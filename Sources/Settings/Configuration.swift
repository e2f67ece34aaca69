/// The daemon's configuration (mqtt-api.md §8): the one configuration model. Every field has a
/// default; parsing lives in Bridge's ConfigurationLoader.swift, where every key is listed once.
/// The lower layers read their sections of it directly — Discovery takes `Discovery` (as
/// `DiscoveryConfiguration`) and `StaticDevice`, MQTT builds its client options on `MQTT` — so
/// no layer keeps a copy of these types.
public struct BridgeConfiguration: Sendable, Hashable {
    public struct MQTT: Sendable, Hashable {
        /// The brokers in order (`mqtt.url`: one URL or a list): the first that answers is used,
        /// the next when it is lost.
        public var urls = ["mqtt://localhost:1883"]
        /// The first broker (usually the only one); setting it makes it the only one.
        public var url: String {
            get { urls.first ?? "" }
            set { urls = [newValue] }
        }
        public var baseTopic = "cast2mqtt"
        public var clientID = "cast2mqtt"
        public var username: String?
        public var password: String?
        public var passwordFile: String?
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        public var insecure = false
        /// `5` or `3.1.1`.
        public var protocolVersion = "5"
        public var qos = 1
        public var keepalive = 30
        /// Seconds the broker waits before publishing the last will of an instance (MQTT 5 Will
        /// Delay Interval; used only in instance mode, where a short blip must not hand devices over).
        public var willDelay = 10
        /// Largest accepted command payload in bytes.
        public var maxPayload = 65_536
        public init() {}
    }

    /// A `discovery.devices` entry: a device reachable without mDNS (Discovery's `StaticDevice`).
    public struct StaticDevice: Sendable, Hashable {
        /// An IP literal or a host name.
        public var host: String
        public var port = 8009
        /// The friendly name to use; wins over the mDNS `fn` when the device is also seen by mDNS.
        public var name: String?
        /// The Cast UUID (any case, dashes allowed). Nil: Discovery's `stableID(host:port:)`.
        public var id: String?
        /// An explicit MQTT topic name.
        public var topic: String?
        /// `off`, `report` or `require` for this device over `cast.device_auth` (nil: that).
        public var deviceAuth: String?
        public init(host: String, port: Int = 8009, name: String? = nil, id: String? = nil, topic: String? = nil,
                    deviceAuth: String? = nil) {
            self.host = host
            self.port = port
            self.name = name
            self.id = id
            self.topic = topic
            self.deviceAuth = deviceAuth
        }
    }

    /// The `discovery` section (Discovery's `DiscoveryConfiguration`).
    public struct Discovery: Sendable, Hashable {
        /// Browse `_googlecast._tcp` with avahi. Off: static devices only.
        public var mdns = true
        /// Interface names to browse on (e.g. `["eth0"]`); empty = all interfaces.
        public var interfaces: [String] = []
        /// Devices from the configuration, merged with mDNS by id.
        public var devices: [StaticDevice] = []
        /// Friendly names (case-insensitive) or ids; empty = every device.
        public var include: [String] = []
        /// Friendly names (case-insensitive) or ids; wins over `include`.
        public var exclude: [String] = []
        /// When a device is seen over both IPv4 and IPv6, connect over IPv6 (no key of the
        /// configuration file: always off for the daemon; tests set it).
        public var preferIPv6 = false
        public init() {}
    }

    public struct Cast: Sendable, Hashable {
        /// Seconds.
        public var heartbeatInterval = 5.0
        public var heartbeatTimeout = 15.0
        public var requestTimeout = 10.0
        public var reconnectInitial = 0.5
        public var reconnectMax = 60.0
        public var transferWindow = 15.0
        /// Glob patterns (`*` any run, `?` one character) of namespaces `send` may use.
        public var allowedNamespaces = ["urn:x-cast:*"]
        /// Device authentication: `off`, `report` or `require` (docs/security.md).
        public var deviceAuth = "report"
        /// PEM files of extra trust anchors for device authentication (tests, private deployments).
        public var deviceAuthRoots: [String] = []
        public init() {}
    }

    public struct Media: Sendable, Hashable {
        /// Seconds between republishing `media` with an estimated position while playing; 0 = off.
        public var positionInterval = 0.0
        public init() {}
    }

    public struct HomeAssistant: Sendable, Hashable {
        /// How discovery configs are published (`homeassistant.discovery`).
        public enum DiscoveryMode: String, Sendable, Hashable, CaseIterable {
            /// One `<prefix>/device/<node>/config` per device with its entities in `cmps` (HA 2024.11+).
            case device
            /// One `<prefix>/<platform>/<node>/<object>/config` per entity (older HA).
            case perEntity = "per_entity"
        }
        public var enabled = true
        public var discoveryPrefix = "homeassistant"
        /// `device` or `per_entity` (validated by the loader).
        public var discovery = DiscoveryMode.device.rawValue
        public init() {}

        public var discoveryMode: DiscoveryMode { DiscoveryMode(rawValue: discovery) ?? .device }
    }

    public struct Log: Sendable, Hashable {
        /// trace, debug, info, notice, warning, error, critical.
        public var level = "info"
        /// A level per component (cast, mqtt, discovery, bridge, homeassistant, web) over `level`.
        public var levels: [String: String] = [:]
        /// Devices (id, friendly name or topic name) whose Cast traffic is logged at trace.
        public var devices: [String] = []
        /// `text` (one line per event) or `json` (one JSON object per line).
        public var format = "text"
        public init() {}
    }

    /// The web page, `/metrics` and `/healthz` (`web` section; docs/web.md).
    public struct Web: Sendable, Hashable {
        public var enabled = true
        /// `host:port` (`[v6]:port` for IPv6). Any address but loopback needs `token` or `passwordFile`.
        public var listen = "127.0.0.1:8199"
        public var token: String?
        /// A file whose first line is the token (read at start).
        public var passwordFile: String?
        /// The Home Assistant ingress proxy's address: its requests need no token (the user
        /// logged in to Home Assistant). Nil: none (the add-on sets 172.30.32.2).
        public var ingressAddress: String?
        /// `/metrics` and `/healthz` answer without the token (for scrapers).
        public var metricsPublic = false
        public init() {}

        /// `listen` split into host and port; nil when it does not parse (the loader refuses that).
        public var address: WebListenAddress? { WebListenAddress(listen) }
    }

    public var mqtt = MQTT()
    public var discovery = Discovery()
    public var cast = Cast()
    public var media = Media()
    public var homeassistant = HomeAssistant()
    public var stateDir = "/var/lib/cast2mqtt"
    public var log = Log()
    public var web = Web()
    /// This instance's name when several bridges share the base topic (mqtt-api.md §10,
    /// docs/scaling.md): `[A-Za-z0-9_-]`, `auto` (the host name) resolved by the loader. Nil:
    /// single mode, nothing of §10 is published or subscribed.
    public var instance: String?
    /// The instance that owns the plain bridge topics while it is live (nil: the lowest name live).
    public var primary: String?
    /// Device (id, friendly name or topic name) → instance names in order of preference.
    public var prefer: [String: [String]] = [:]
    /// `displays.<device>.keep` (mqtt-api.md §13): device (id, friendly name or topic name) → the
    /// keep as JSON text (the same object as `command/keep`; checked when the file is loaded).
    public var displays: [String: String] = [:]

    public init() {}

    /// The bridge's own version string, shown in `bridge/info`.
    public var version = BuildVersion.string
}

/// A configuration problem, with the dotted path of the key (`mqtt.qos`) in the message.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

/// Glob matching for `cast.allowed_namespaces`: `*` matches any run of characters, `?` one.
public func globMatches(_ pattern: String, _ text: String) -> Bool {
    let p = Array(pattern.unicodeScalars), t = Array(text.unicodeScalars)
    var pi = 0, ti = 0, starP = -1, starT = 0
    while ti < t.count {
        if pi < p.count, p[pi] == "?" || p[pi] == t[ti] {
            pi += 1; ti += 1
        } else if pi < p.count, p[pi] == "*" {
            starP = pi; starT = ti; pi += 1
        } else if starP >= 0 {
            pi = starP + 1; starT += 1; ti = starT
        } else {
            return false
        }
    }
    while pi < p.count, p[pi] == "*" { pi += 1 }
    return pi == p.count
}

/// `web.listen` parsed: `127.0.0.1:8199`, `0.0.0.0:80`, `[::1]:8199`, `localhost:8199`. The host is
/// an IP address literal or `localhost` (no name lookups); port 0 lets the kernel choose.
public struct WebListenAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init?(_ text: String) {
        let host: Substring, port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
            guard host.contains(":") else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            guard !host.contains(":"), Self.isIPv4(host) || host == "localhost" else { return nil }
        }
        guard !host.isEmpty, port.count <= 5, port.allSatisfy(\.isASCII), let number = Int(port), (0...65535).contains(number),
              host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." || $0.isLetter }) else { return nil }
        self.host = String(host)
        self.port = number
    }

    /// True for `localhost`, 127.0.0.0/8 and `::1`: only this machine can connect.
    public var isLoopback: Bool {
        if host == "localhost" { return true }
        if Self.isIPv4(Substring(host)) { return host.hasPrefix("127.") }
        let lower = host.lowercased()
        return lower == "::1" || lower == "0:0:0:0:0:0:0:1"
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    static func isIPv4(_ s: Substring) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { p in
            !p.isEmpty && p.count <= 3 && p.allSatisfy(\.isASCII) && p.allSatisfy(\.isNumber) && (Int(p) ?? 256) <= 255
        }
    }
}
