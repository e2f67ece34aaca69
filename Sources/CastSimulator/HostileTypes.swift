import CastProtocol
import Foundation

/// The classes of hostile messages a simulated device can send (`cast-sim --hostile`, the control
/// action `hostile`). Each class is built by mutating the messages the device really sends.
public enum HostileClass: String, CaseIterable, Sendable, Codable {
    /// Every number (and `requestId`, also where there is none) replaced by values no integer type
    /// holds: 1e19, -1e19, 1e308, 99999999999999999999, 18446744073709551615, 1.5, -1, …
    case numbers
    /// Every value replaced by one of another JSON type; also payloads that are not objects.
    case wrongTypes = "wrong_types"
    /// Every value null, one at a time and all at once.
    case nulls
    /// Every string "", every array [], every object {} (e.g. `transportId: ""`).
    case emptyValues = "empty_values"
    /// Arrays and objects nested thousands deep (and just past 512) within 64 KiB.
    case deepNesting = "deep_nesting"
    /// Every string (and a key) 60 000 bytes long.
    case longStrings = "long_strings"
    /// Invalid UTF-8: unpaired surrogate and NUL escapes, BINARY payloads on JSON namespaces, and
    /// (last, because a sender drops the connection on them) raw invalid bytes in `payload_utf8`.
    case invalidUTF8 = "invalid_utf8"
    /// Unknown and misspelt `type`s, no `type`, and real types on the wrong namespace.
    case unknownTypes = "unknown_types"
    /// App messages on namespaces containing `+`, `#`, `/`, control characters, very long ones,
    /// and an application status announcing such namespaces.
    case namespaces
    /// Replies to the sender's last requests: the real `requestId` with a broken body, and
    /// near misses (`7.5`, `"7"`, `-7`, `7 + 2^32`) with an error body.
    case brokenReplies = "broken_replies"
    /// Deliberately over the 64 KiB frame limit (a valid length prefix and a real, padded status).
    case oversizedMessage = "oversized_message"

    /// Parses `all` or a comma-separated list of class names; nil when a name is unknown.
    public static func parseList(_ text: String) -> [HostileClass]? {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !names.isEmpty else { return nil }
        if names == ["all"] { return allCases }
        var classes: [HostileClass] = []
        for name in names {
            guard let parsed = HostileClass(rawValue: name) else { return nil }
            if !classes.contains(parsed) { classes.append(parsed) }
        }
        return classes
    }
}

/// One hostile message, ready to be framed. `payload` is the raw `payload_utf8` (or
/// `payload_binary`) bytes, so it can carry what a Swift `String` cannot (invalid UTF-8).
public struct HostileMessage: Sendable, Hashable {
    public enum Destination: Sendable, Hashable {
        /// `*`, once per TCP connection.
        case broadcast
        /// Each sender id with a virtual connection to `receiver-0` (a reply).
        case senders
        /// This exact id.
        case id(String)
    }

    public var hostileClass: HostileClass
    /// What was done, e.g. `MEDIA_STATUS status[0].mediaSessionId = 1e19`.
    public var label: String
    public var namespace: [UInt8]
    public var source: String
    public var destination: Destination
    public var binary: Bool
    public var payload: [UInt8]

    public init(hostileClass: HostileClass, label: String, namespace: [UInt8], source: String, destination: Destination,
                binary: Bool, payload: [UInt8]) {
        self.hostileClass = hostileClass
        self.label = label
        self.namespace = namespace
        self.source = source
        self.destination = destination
        self.binary = binary
        self.payload = payload
    }

    /// The namespace as text (invalid UTF-8 repaired), for logs and tests.
    public var namespaceText: String { String(decoding: namespace, as: UTF8.self) }
    /// The payload as text (invalid UTF-8 repaired), for logs and tests.
    public var payloadText: String { String(decoding: payload, as: UTF8.self) }

    /// The protobuf `CastMessage` bytes (hand-encoded, so invalid UTF-8 goes out as is).
    public func body(destinationID: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + namespace.count + 64)
        func varint(_ value: Int) {
            var v = UInt64(value)
            while v >= 0x80 {
                out.append(UInt8(v & 0x7F) | 0x80)
                v >>= 7
            }
            out.append(UInt8(v))
        }
        func field(_ number: Int, _ bytes: [UInt8]) {
            varint(number << 3 | 2)
            varint(bytes.count)
            out += bytes
        }
        varint(1 << 3)  // protocol_version = CASTV2_1_0
        varint(0)
        field(2, Array(source.utf8))
        field(3, Array(destinationID.utf8))
        field(4, namespace)
        varint(5 << 3)  // payload_type
        varint(binary ? 1 : 0)
        field(binary ? 7 : 6, payload)
        return out
    }

    /// The whole frame: 4-byte big-endian length, then `body`.
    public func frame(destinationID: String) -> [UInt8] {
        let body = body(destinationID: destinationID)
        let n = UInt32(truncatingIfNeeded: body.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + body
    }

    /// Body size with the longest destination id a sender uses here (`sender-0` or `*`).
    public var bodySize: Int { body(destinationID: "sender-0").count }
}

/// A request a sender made and the device may still owe an answer to (for `broken_replies`).
public struct HostileRequest: Sendable, Hashable {
    public var namespace: String
    /// The endpoint the request went to (`receiver-0` or an app's transportId).
    public var endpoint: String
    public var sourceID: String
    public var requestId: Int
    public var type: String

    public init(namespace: String, endpoint: String, sourceID: String, requestId: Int, type: String) {
        self.namespace = namespace
        self.endpoint = endpoint
        self.sourceID = sourceID
        self.requestId = requestId
        self.type = type
    }
}

/// What the generator mutates: the messages the device would send now.
public struct HostileContext: Sendable, Hashable {
    /// RECEIVER_STATUS JSON (requestId 0) as the device would broadcast it.
    public var receiverStatus: String
    /// MEDIA_STATUS JSON of the running media session, if any.
    public var mediaStatus: String?
    /// The running app's transportId (`receiver-0` when none runs).
    public var appTransport: String
    /// The mediaSessionId to put in the rich media template.
    public var mediaSessionId: Int
    /// The last request of each sender per namespace.
    public var pendingRequests: [HostileRequest]
    public var seed: UInt64

    public init(receiverStatus: String, mediaStatus: String?, appTransport: String, mediaSessionId: Int,
                pendingRequests: [HostileRequest], seed: UInt64) {
        self.receiverStatus = receiverStatus
        self.mediaStatus = mediaStatus
        self.appTransport = appTransport
        self.mediaSessionId = mediaSessionId
        self.pendingRequests = pendingRequests
        self.seed = seed
    }
}

/// Deterministic pseudo-random numbers (SplitMix64): the same seed gives the same messages.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A JSON tree that keeps key order and can hold what `JSONValue` cannot: number literals of any
/// size, and string contents or whole fragments as raw bytes.
indirect enum HostileJSON: Sendable, Hashable {
    struct Member: Sendable, Hashable {
        var key: String
        var value: HostileJSON
    }

    case null
    case bool(Bool)
    /// A number literal, written as is (`1e19`, `99999999999999999999`).
    case number(String)
    case string(String)
    /// A string whose content bytes are written between the quotes as is (escapes or invalid UTF-8).
    case rawString([UInt8])
    /// Bytes written as is in place of a value.
    case raw([UInt8])
    case array([HostileJSON])
    case object([Member])

    enum Step: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n):
            if n.rounded() == n, abs(n) < 9.0e15 { self = .number(String(Int64(n))) } else { self = .number("\(n)") }
        case .string(let s): self = .string(s)
        case .array(let a): self = .array(a.map(HostileJSON.init))
        case .object(let o): self = .object(o.keys.sorted().map { Member(key: $0, value: HostileJSON(o[$0] ?? .null)) })
        }
    }

    static func parse(_ text: String) -> HostileJSON? {
        (try? CastJSON.decode(JSONValue.self, from: text)).map(HostileJSON.init)
    }

    var isContainer: Bool {
        switch self {
        case .array, .object: return true
        default: return false
        }
    }

    subscript(key: String) -> HostileJSON? {
        if case .object(let members) = self { return members.first { $0.key == key }?.value }
        return nil
    }

    /// Every node below the root with its path, depth first, in document order.
    func paths(prefix: [Step] = []) -> [([Step], HostileJSON)] {
        var result: [([Step], HostileJSON)] = []
        switch self {
        case .array(let items):
            for (i, item) in items.enumerated() {
                let path = prefix + [.index(i)]
                result.append((path, item))
                result += item.paths(prefix: path)
            }
        case .object(let members):
            for member in members {
                let path = prefix + [.key(member.key)]
                result.append((path, member.value))
                result += member.value.paths(prefix: path)
            }
        default:
            break
        }
        return result
    }

    /// A copy with the node at `path` replaced (or, for a missing last key, added).
    func replacing(_ path: ArraySlice<Step>, with value: HostileJSON) -> HostileJSON {
        guard let step = path.first else { return value }
        switch (self, step) {
        case (.array(var items), .index(let i)) where items.indices.contains(i):
            items[i] = items[i].replacing(path.dropFirst(), with: value)
            return .array(items)
        case (.object(var members), .key(let key)):
            if let i = members.firstIndex(where: { $0.key == key }) {
                members[i].value = members[i].value.replacing(path.dropFirst(), with: value)
            } else if path.count == 1 {
                members.append(Member(key: key, value: value))
            }
            return .object(members)
        default:
            return self
        }
    }

    func replacing(_ path: [Step], with value: HostileJSON) -> HostileJSON { replacing(path[...], with: value) }

    /// Every leaf (and, when `containers`, every container below the root) mapped by `transform`.
    func mapLeaves(_ transform: (HostileJSON) -> HostileJSON) -> HostileJSON {
        switch self {
        case .array(let items): return .array(items.map { $0.mapLeaves(transform) })
        case .object(let members):
            return .object(members.map { Member(key: $0.key, value: $0.value.mapLeaves(transform)) })
        default: return transform(self)
        }
    }

    var bytes: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .number(let literal): out += Array(literal.utf8)
        case .string(let s): Self.writeString(s, into: &out)
        case .rawString(let content):
            out.append(0x22)
            out += content
            out.append(0x22)
        case .raw(let bytes): out += bytes
        case .array(let items):
            out.append(0x5B)
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(0x2C) }
                item.write(into: &out)
            }
            out.append(0x5D)
        case .object(let members):
            out.append(0x7B)
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(0x2C) }
                Self.writeString(member.key, into: &out)
                out.append(0x3A)
                member.value.write(into: &out)
            }
            out.append(0x7D)
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(0x22)
        for byte in s.utf8 {
            switch byte {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, 0x6E]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(0x22)
    }

    static func describe(_ path: [Step]) -> String {
        var text = ""
        for step in path {
            switch step {
            case .key(let key): text += text.isEmpty ? key : "." + key
            case .index(let i): text += "[\(i)]"
            }
        }
        return text.isEmpty ? "(root)" : text
    }
}
