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

    /// Classifies a topic; nil when it is none of the bridge's input topics. Compares bytes, as
    /// the broker does when it matches our subscriptions, and makes strings only of what it
    /// returns (it runs on every command: one pass, no splitting into an array of levels).
    public func parse(_ topic: String) -> IncomingTopic? {
        var topic = topic
        var base = base
        var discoveryPrefix = discoveryPrefix
        return topic.withUTF8 { t in
            discoveryPrefix.withUTF8 { d in
                base.withUTF8 { b in Self.parse(t, base: b, discoveryPrefix: d) }
            }
        }
    }

    private static let slash = UInt8(ascii: "/")

    private static func parse(_ t: UnsafeBufferPointer<UInt8>, base b: UnsafeBufferPointer<UInt8>,
                              discoveryPrefix d: UnsafeBufferPointer<UInt8>) -> IncomingTopic? {
        if t.count == d.count + 7, starts(t, with: d, at: 0), equals(t, d.count, "/status") { return .homeAssistantStatus }
        guard t.count > b.count, starts(t, with: b, at: 0), t[b.count] == slash else { return nil }
        // Levels after `<base>/`: the device, then what follows it.
        let devStart = b.count + 1
        guard let devEnd = firstSlash(t, from: devStart), devEnd > devStart else { return nil }
        let device = string(t, devStart, devEnd)
        let second = devEnd + 1
        let secondEnd = firstSlash(t, from: second) ?? t.count
        if equals(t, devStart, "bridge"), devEnd - devStart == 6 {
            // `bridge/request/<name>`: exactly three levels, the name non-empty and short.
            guard secondEnd < t.count, secondEnd - second == 7, equals(t, second, "request") else { return nil }
            let nameStart = secondEnd + 1
            guard firstSlash(t, from: nameStart) == nil, t.count > nameStart, t.count - nameStart <= 64 else { return nil }
            return .bridgeRequest(name: string(t, nameStart, t.count))
        }
        guard secondEnd - second == 7, equals(t, second, "command") else { return nil }
        // `command` alone is a command with an empty name (`command/#` delivers it too).
        guard secondEnd < t.count else { return .deviceCommand(device: device, name: "") }
        let rest = secondEnd + 1
        let thirdEnd = firstSlash(t, from: rest) ?? t.count
        if thirdEnd - rest == 4, equals(t, rest, "send") {
            // The namespace is everything after `send/` (it may contain `/`).
            guard thirdEnd < t.count else { return .deviceCommand(device: device, name: "send") }
            return .deviceSend(device: device, namespace: string(t, thirdEnd + 1, t.count))
        }
        // Every topic under `command/` is a command, so it gets its one answer: a name with more
        // levels (`command/volume/extra`, `command/play/`) is an unknown command.
        return .deviceCommand(device: device, name: string(t, rest, t.count))
    }

    private static func starts(_ t: UnsafeBufferPointer<UInt8>, with p: UnsafeBufferPointer<UInt8>, at offset: Int) -> Bool {
        guard t.count - offset >= p.count else { return false }
        for i in 0..<p.count where t[offset + i] != p[i] { return false }
        return true
    }

    /// `t` holds the ASCII `literal` at `offset` (not necessarily ending there).
    private static func equals(_ t: UnsafeBufferPointer<UInt8>, _ offset: Int, _ literal: StaticString) -> Bool {
        let n = literal.utf8CodeUnitCount
        guard t.count - offset >= n else { return false }
        let l = literal.utf8Start
        for i in 0..<n where t[offset + i] != l[i] { return false }
        return true
    }

    private static func firstSlash(_ t: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        var i = from
        while i < t.count {
            if t[i] == slash { return i }
            i += 1
        }
        return nil
    }

    private static func string(_ t: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: t[from..<to]), as: UTF8.self)
    }

    // MARK: building

    // Every leaf is the contract's (Contract: BridgeLeaf, DeviceLeaf, CommandName, RequestName);
    // the parser above compares the same words as bytes (ContractTests: every built topic parses).
    public func bridge(_ leaf: BridgeLeaf) -> String { "\(base)/bridge/\(leaf.rawValue)" }
    public var bridgeState: String { bridge(.state) }
    public var bridgeInfo: String { bridge(.info) }
    public var bridgeDevices: String { bridge(.devices) }
    public var bridgeEvent: String { bridge(.event) }
    public func bridgeResponse(_ name: String) -> String { "\(bridge(.response))/\(name)" }
    public func bridgeRequest(_ name: String) -> String { "\(bridge(.request))/\(name)" }
    public func bridgeRequest(_ name: RequestName) -> String { bridgeRequest(name.rawValue) }

    public func device(_ dev: String, _ leaf: DeviceLeaf) -> String { "\(base)/\(dev)/\(leaf.rawValue)" }
    public func availability(_ dev: String) -> String { device(dev, .availability) }
    public func info(_ dev: String) -> String { device(dev, .info) }
    public func receiver(_ dev: String) -> String { device(dev, .receiver) }
    public func media(_ dev: String) -> String { device(dev, .media) }
    public func state(_ dev: String) -> String { device(dev, .state) }
    public func event(_ dev: String) -> String { device(dev, .event) }
    public func response(_ dev: String) -> String { device(dev, .response) }
    public func members(_ dev: String) -> String { device(dev, .members) }
    public func keep(_ dev: String) -> String { device(dev, .keep) }
    public func command(_ dev: String, _ name: String) -> String { "\(device(dev, .command))/\(name)" }
    public func command(_ dev: String, _ name: CommandName) -> String { command(dev, name.rawValue) }
    public func message(_ dev: String, namespace: String) -> String { "\(device(dev, .message))/\(namespace)" }

    /// `text` as a single topic level (an app message's namespace): `%`, `/`, `+`, `#` and
    /// control characters percent-encoded (`urn:x-cast:a/b` -> `urn:x-cast:a%2Fb`).
    static func topicLevel(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                for byte in String(scalar).utf8 { out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true) }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ s: Unicode.Scalar) -> Bool {
        s == "%" || s == "/" || s == "+" || s == "#" || s.value < 0x20 || s.value == 0x7F
    }
}
