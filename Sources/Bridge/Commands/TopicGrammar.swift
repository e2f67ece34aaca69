/// What an incoming MQTT topic means.
public enum IncomingTopic: Sendable, Hashable {
    /// `<base>/<dev>/command/<name>`
    case deviceCommand(device: String, name: String)
    /// `<base>/<dev>/command/send/<namespace>`; the namespace is everything after `send/`,
    /// so it may itself contain `/`.
    case deviceSend(device: String, namespace: String)
    /// `<base>/bridge/request/<name>`
    case bridgeRequest(name: String)
    /// `<discovery_prefix>/status`
    case homeAssistantStatus
}

/// Parses and builds the topics of the contract.
public struct TopicGrammar: Sendable, Hashable {
    public var base: String
    public var discoveryPrefix: String

    public init(base: String, discoveryPrefix: String) {
        self.base = base
        self.discoveryPrefix = discoveryPrefix
    }

    /// The filters the MQTT side must subscribe to.
    public func subscriptions(homeAssistant: Bool) -> [String] {
        var out = ["\(base)/+/command/#", "\(base)/bridge/request/+"]
        if homeAssistant { out.append("\(discoveryPrefix)/status") }
        return out
    }

    /// Classifies a topic; nil when it is none of the bridge's input topics.
    public func parse(_ topic: String) -> IncomingTopic? {
        if topic == "\(discoveryPrefix)/status" { return .homeAssistantStatus }
        let prefix = base + "/"
        guard topic.hasPrefix(prefix) else { return nil }
        let rest = topic.dropFirst(prefix.count)
        let levels = rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard levels.count >= 2, !levels[0].isEmpty else { return nil }
        if levels[0] == "bridge" {
            guard levels.count == 3, levels[1] == "request", Self.isName(levels[2]) else { return nil }
            return .bridgeRequest(name: levels[2])
        }
        guard levels[1] == "command" else { return nil }
        if levels.count >= 3, levels[2] == "send" {
            guard levels.count >= 4 else { return .deviceCommand(device: levels[0], name: "send") }
            let namespace = levels[3...].joined(separator: "/")
            return .deviceSend(device: levels[0], namespace: namespace)
        }
        // Every topic under `command/` is a command, so it gets its one answer: a name with more
        // levels (`command/volume/extra`, `command/play/`) or none is an unknown command.
        // (`command/#` also delivers `command` itself.)
        return .deviceCommand(device: levels[0], name: levels.dropFirst(2).joined(separator: "/"))
    }

    static func isName(_ s: String) -> Bool { !s.isEmpty && s.utf8.count <= 64 }

    // MARK: building

    public var bridgeState: String { "\(base)/bridge/state" }
    public var bridgeInfo: String { "\(base)/bridge/info" }
    public var bridgeDevices: String { "\(base)/bridge/devices" }
    public var bridgeEvent: String { "\(base)/bridge/event" }
    public func bridgeResponse(_ name: String) -> String { "\(base)/bridge/response/\(name)" }
    public func bridgeRequest(_ name: String) -> String { "\(base)/bridge/request/\(name)" }

    public func device(_ dev: String, _ leaf: String) -> String { "\(base)/\(dev)/\(leaf)" }
    public func availability(_ dev: String) -> String { device(dev, "availability") }
    public func info(_ dev: String) -> String { device(dev, "info") }
    public func receiver(_ dev: String) -> String { device(dev, "receiver") }
    public func media(_ dev: String) -> String { device(dev, "media") }
    public func state(_ dev: String) -> String { device(dev, "state") }
    public func event(_ dev: String) -> String { device(dev, "event") }
    public func response(_ dev: String) -> String { device(dev, "response") }
    public func command(_ dev: String, _ name: String) -> String { device(dev, "command/\(name)") }
    public func message(_ dev: String, namespace: String) -> String { device(dev, "message/\(namespace)") }
}
