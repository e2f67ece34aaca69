import Foundation

/// The checks of a loaded configuration (ranges, combinations, topics, the web page's secret),
/// each failing with the key's path and what to fix.
extension ConfigurationLoader {
    static func validate(_ c: BridgeConfiguration) throws {
        func check(_ ok: Bool, _ path: String, _ message: String) throws {
            if !ok { throw ConfigurationError(path: path, message: message) }
        }
        try validateBrokerURLs(c.mqtt.urls)
        try check(isTopicPrefix(c.mqtt.baseTopic), "mqtt.base_topic", Self.topicPrefixRule)
        try check(!c.mqtt.clientID.isEmpty, "mqtt.client_id", "must not be empty")
        try check(["5", "3.1.1", "5.0"].contains(c.mqtt.protocolVersion), "mqtt.protocol", "must be 5 or \"3.1.1\"")
        try check((0...2).contains(c.mqtt.qos), "mqtt.qos", "must be 0, 1 or 2")
        try check((5...65535).contains(c.mqtt.keepalive), "mqtt.keepalive", "must be 5-65535 seconds")
        try check((0...3600).contains(c.mqtt.willDelay), "mqtt.will_delay", "must be 0-3600 seconds")
        try check((256...268_435_455).contains(c.mqtt.maxPayload), "mqtt.max_payload", "must be 256-268435455 bytes")
        // Times in seconds: every timer has a range that makes sense for a LAN device, and
        // none can be so large that converting it to a timer would overflow.
        func seconds(_ v: Double, _ path: String, _ range: ClosedRange<Double>) throws {
            try check(v.isFinite && range.contains(v), path,
                      "must be \(formatSeconds(range.lowerBound))-\(formatSeconds(range.upperBound)) seconds")
        }
        try seconds(c.cast.heartbeatInterval, "cast.heartbeat_interval", 0.1...3600)
        try seconds(c.cast.heartbeatTimeout, "cast.heartbeat_timeout", 0.2...86_400)
        try check(c.cast.heartbeatTimeout > c.cast.heartbeatInterval, "cast.heartbeat_timeout", "must be greater than cast.heartbeat_interval")
        try seconds(c.cast.requestTimeout, "cast.request_timeout", 0.1...3600)
        try seconds(c.cast.reconnectInitial, "cast.reconnect.initial", 0.01...3600)
        try seconds(c.cast.reconnectMax, "cast.reconnect.max", 0.01...86_400)
        try check(c.cast.reconnectMax >= c.cast.reconnectInitial, "cast.reconnect.max", "must be >= cast.reconnect.initial")
        try seconds(c.cast.transferWindow, "cast.transfer_window", 0...3600)
        for (n, p) in c.cast.allowedNamespaces.enumerated() {
            try check(p.hasPrefix("urn:x-cast:"), "cast.allowed_namespaces[\(n)]", "patterns must start with urn:x-cast:")
        }
        try check(deviceAuthWords.contains(c.cast.deviceAuth), "cast.device_auth", "must be off, report or require")
        try seconds(c.media.positionInterval, "media.position_interval", 0...3600)
        try check(isTopicPrefix(c.homeassistant.discoveryPrefix), "homeassistant.discovery_prefix", Self.topicPrefixRule)
        try check(BridgeConfiguration.HomeAssistant.DiscoveryMode(rawValue: c.homeassistant.discovery) != nil,
                  "homeassistant.discovery", "must be device (Home Assistant 2024.11 and later) or per_entity")
        try check(!c.stateDir.isEmpty, "state_dir", "must not be empty")
        try check(["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(c.log.level), "log.level",
                  "must be one of trace, debug, info, notice, warning, error, critical")
        for (component, level) in c.log.levels.sorted(by: { $0.key < $1.key }) {
            try check(LogLevels.components.contains(component), "log.levels.\(component)",
                      "is not a component; components are " + LogLevels.components.joined(separator: ", "))
            try check(LogLevels.levelNames.contains(level), "log.levels.\(component)",
                      "must be one of " + LogLevels.levelNames.joined(separator: ", "))
        }
        for (n, device) in c.log.devices.enumerated() {
            try check(!device.isEmpty && device.utf8.count <= 256, "log.devices[\(n)]", "must name a device (id, friendly name or topic name)")
        }
        try check(["text", "json"].contains(c.log.format), "log.format", "must be text or json")
        try validateWeb(c.web)
        try validateInstances(c)
    }

    /// `mqtt.url`: one URL or a list of up to 16, each `mqtt://` or `mqtts://` without credentials,
    /// all of one kind (they share the TLS settings); `supervisor` only alone.
    static func validateBrokerURLs(_ urls: [String]) throws {
        func check(_ ok: Bool, _ path: String, _ message: String) throws {
            if !ok { throw ConfigurationError(path: path, message: message) }
        }
        try check((1...16).contains(urls.count), "mqtt.url", "must name 1-16 brokers")
        for (n, url) in urls.enumerated() {
            let path = urls.count == 1 ? "mqtt.url" : "mqtt.url[\(n)]"
            if url == Supervisor.brokerFromSupervisor {
                try check(urls.count == 1, path, "supervisor cannot be part of a list of brokers")
                continue
            }
            try check(url.hasPrefix("mqtt://") || url.hasPrefix("mqtts://"), path,
                      "must start with mqtt:// or mqtts:// (or be supervisor, in the Home Assistant add-on)")
            // The MQTT layer refuses user info in the URL; saying so here makes `check-config` fail too.
            try check(!url.dropFirst(url.hasPrefix("mqtts://") ? 8 : 7).contains("@"), path,
                      "must not carry credentials (set mqtt.username and mqtt.password)")
            try check(url.hasPrefix("mqtts://") == urls[0].hasPrefix("mqtts://"), path,
                      "the brokers must be all mqtt:// or all mqtts:// (they share the TLS settings)")
        }
    }

    /// The `web` section: an address that parses, and a token for anything but loopback (checked
    /// even with `enabled: false`, so turning the page on later cannot expose it by surprise).
    static func validateWeb(_ w: BridgeConfiguration.Web) throws {
        guard let address = w.address else {
            throw ConfigurationError(path: "web.listen", message: "must be HOST:PORT with an IP address or localhost "
                                     + "(127.0.0.1:8199, 0.0.0.0:8199, [::1]:8199), port 0-65535")
        }
        if let token = w.token {
            try check(!token.trimmingCharacters(in: .whitespaces).isEmpty, "web.token", "must not be empty (or null for none)")
            try check(w.passwordFile == nil, "web.password_file", "set web.token or web.password_file, not both")
        }
        if let ingress = w.ingressAddress {
            try check(WebListenAddress("\(ingress.contains(":") ? "[\(ingress)]" : ingress):0").map { $0.host != "localhost" } ?? false,
                      "web.ingress_address", "must be an IP address (the Home Assistant ingress proxy's, 172.30.32.2)")
        }
        try check(w.passwordFile.map { !$0.isEmpty } ?? true, "web.password_file", "must not be empty (or null for none)")
        try check(address.isLoopback || w.token != nil || w.passwordFile != nil, "web.listen",
                  "\(address) is not a loopback address: anyone on the network could reach the page, so it needs "
                  + "web.token or web.password_file (or listen on 127.0.0.1)")
    }

    /// The web token: `web.token`, or the first line of `web.password_file` (read here, so a
    /// missing or empty file is a configuration error at start). Nil when neither is set.
    public static func webSecret(_ c: BridgeConfiguration) throws -> String? {
        if let token = c.web.token { return token }
        guard let path = c.web.passwordFile else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(path: "web.password_file", message: "cannot read \(path)")
        }
        guard data.count <= 4096 else {
            throw ConfigurationError(path: "web.password_file", message: "\(path) is larger than 4 KiB; it should hold one line, the token")
        }
        let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let token = line.trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else {
            throw ConfigurationError(path: "web.password_file", message: "\(path) is empty; its first line is the token")
        }
        return token
    }

    static func check(_ ok: Bool, _ path: String, _ message: String) throws {
        if !ok { throw ConfigurationError(path: path, message: message) }
    }

    static let topicPrefixRule = "must be a non-empty topic without + or #, not starting with $ or /, not ending with /"

    static func isTopicPrefix(_ t: String) -> Bool {
        !t.isEmpty && !t.hasPrefix("/") && !t.hasSuffix("/") && !t.hasPrefix("$") && !t.contains("+") && !t.contains("#")
    }
}
