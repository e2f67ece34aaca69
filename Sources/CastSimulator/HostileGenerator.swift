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

/// Builds the hostile messages of each class from a `HostileContext`. Pure and deterministic.
public struct HostileGenerator: Sendable {
    /// The largest frame body a Cast sender accepts.
    public static let frameLimit = 65_536
    /// What the big classes (strings, nesting) aim at: 60 000 bytes of payload.
    public static let bigPayload = 60_000

    /// Numbers no 64-bit integer (or no integer at all) holds, as JSON literals.
    public static let outOfRangeNumbers = [
        "1e19", "-1e19", "1e308", "-1e308", "99999999999999999999", "18446744073709551615",
        "-9223372036854775809", "9223372036854775808", "1.5", "-1", "1e-320", "-0.0",
    ]

    let context: HostileContext

    public init(_ context: HostileContext) { self.context = context }

    /// A template: a real message the device sends, as a mutable tree.
    struct Template {
        var name: String
        var namespace: String
        var source: String
        var destination: HostileMessage.Destination
        var json: HostileJSON
    }

    /// The rich MEDIA_STATUS the Default Media Receiver sends during an ad break of queued,
    /// video content (every field the bridge projects has a value to mutate).
    public static func richMediaStatus(mediaSessionId: Int) -> String {
        """
        {"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":\(mediaSessionId),"playerState":"PLAYING",\
        "currentTime":12.5,"playbackRate":1,"supportedMediaCommands":278223,\
        "volume":{"level":1,"muted":false},"activeTrackIds":[1],"currentItemId":1,"repeatMode":"REPEAT_OFF",\
        "media":{"contentId":"http://127.0.0.1/hostile/video.mp4","contentUrl":"http://127.0.0.1/hostile/video.mp4",\
        "contentType":"video/mp4","streamType":"BUFFERED","duration":212.5,\
        "metadata":{"metadataType":1,"title":"Title","subtitle":"Subtitle","seriesTitle":"Series","season":2,\
        "episode":3,"images":[{"url":"http://127.0.0.1/i.jpg","width":480,"height":360}]},\
        "breaks":[{"id":"b1","breakClipIds":["c1"],"position":0,"duration":10}],\
        "breakClips":[{"id":"c1","duration":10,"whenSkippable":5}]},\
        "items":[{"itemId":1,"autoplay":true,"media":{"contentId":"http://127.0.0.1/hostile/video.mp4",\
        "streamType":"BUFFERED","contentType":"video/mp4","metadata":{"metadataType":0,"title":"Item"}}}],\
        "breakStatus":{"breakId":"b1","breakClipId":"c1","currentBreakTime":1.5,"currentBreakClipTime":1.5,\
        "whenSkippable":5},"videoInfo":{"width":1920,"height":1080,"hdrType":"sdr"}}]}
        """
    }

    /// The real messages the device would send now.
    func templates() -> [Template] {
        var result: [Template] = []
        if let receiver = HostileJSON.parse(context.receiverStatus) {
            result.append(Template(name: "RECEIVER_STATUS", namespace: CastNamespace.receiver,
                                   source: CastEndpoint.receiver, destination: .broadcast, json: receiver))
        }
        if let text = context.mediaStatus, let media = HostileJSON.parse(text) {
            result.append(Template(name: "MEDIA_STATUS", namespace: CastNamespace.media, source: context.appTransport,
                                   destination: .broadcast, json: media))
        }
        if let rich = HostileJSON.parse(Self.richMediaStatus(mediaSessionId: context.mediaSessionId)) {
            result.append(Template(name: "MEDIA_STATUS(break)", namespace: CastNamespace.media,
                                   source: context.appTransport, destination: .broadcast, json: rich))
        }
        result.append(Template(name: "PING", namespace: CastNamespace.heartbeat, source: CastEndpoint.receiver,
                               destination: .senders, json: .object([.init(key: "type", value: .string("PING"))])))
        if let app = HostileJSON.parse(#"{"type":"X","requestId":0,"data":{"text":"hello","n":1,"on":true,"list":[1,2]}}"#) {
            result.append(Template(name: "APP", namespace: SimulatedAppID.echoNamespace, source: context.appTransport,
                                   destination: .broadcast, json: app))
        }
        return result
    }

    /// The messages of `hostileClass`.
    public func messages(_ hostileClass: HostileClass) -> [HostileMessage] {
        var random = SeededRandom(seed: context.seed &+ UInt64(HostileClass.allCases.firstIndex(of: hostileClass) ?? 0) &* 7919)
        let templates = templates()
        func make(_ t: Template, _ label: String, _ json: HostileJSON, namespace: String? = nil) -> HostileMessage {
            HostileMessage(hostileClass: hostileClass, label: "\(t.name) \(label)", namespace: Array((namespace ?? t.namespace).utf8),
                           source: t.source, destination: t.destination, binary: false, payload: json.bytes)
        }
        var out: [HostileMessage] = []
        switch hostileClass {
        case .numbers:
            for t in templates {
                var paths = t.json.paths().filter { if case .number = $0.1 { return true } else { return false } }.map(\.0)
                if t.json["requestId"] == nil { paths.insert([.key("requestId")], at: 0) }
                for path in paths {
                    for literal in Self.outOfRangeNumbers {
                        out.append(make(t, "\(HostileJSON.describe(path)) = \(literal)", t.json.replacing(path, with: .number(literal))))
                    }
                }
                for literal in Self.outOfRangeNumbers.prefix(6) {
                    let all = t.json.mapLeaves { if case .number = $0 { return .number(literal) } else { return $0 } }
                    out.append(make(t, "every number = \(literal)", all))
                }
            }
        case .wrongTypes:
            for t in templates {
                for (path, node) in t.json.paths() {
                    let replacement = Self.otherType(than: node, random: &random)
                    out.append(make(t, "\(HostileJSON.describe(path)) -> \(String(decoding: replacement.bytes, as: UTF8.self))",
                                    t.json.replacing(path, with: replacement)))
                }
                for root in ["[]", "[{}]", "\"\(t.name)\"", "42", "true", "null", ""] {
                    out.append(make(t, "payload \(root.isEmpty ? "empty" : root)", .raw(Array(root.utf8))))
                }
                let all = t.json.mapLeaves { Self.otherType(than: $0, random: &random) }
                out.append(make(t, "every leaf of another type", all))
            }
        case .nulls:
            for t in templates {
                for (path, _) in t.json.paths() {
                    out.append(make(t, "\(HostileJSON.describe(path)) = null", t.json.replacing(path, with: .null)))
                }
                out.append(make(t, "every leaf null", t.json.mapLeaves { _ in .null }))
                out.append(make(t, "every leaf but type null",
                                t.json.mapLeaves { _ in .null }.replacing([.key("type")], with: t.json["type"] ?? .null)))
            }
        case .emptyValues:
            for t in templates {
                for (path, node) in t.json.paths() {
                    let empty: HostileJSON
                    switch node {
                    case .string: empty = .string("")
                    case .array: empty = .array([])
                    case .object: empty = .object([])
                    default: continue
                    }
                    out.append(make(t, "\(HostileJSON.describe(path)) empty", t.json.replacing(path, with: empty)))
                }
                let all = t.json.mapLeaves { if case .string = $0 { return .string("") } else { return $0 } }
                out.append(make(t, "every string empty", all))
            }
        case .deepNesting:
            for t in templates {
                // Where to nest: every container at depth ≤ 2 below the root, and a new key.
                var points: [[HostileJSON.Step]] = t.json.paths().filter { $0.0.count <= 3 && $0.1.isContainer }.map(\.0)
                points.append([.key("x")])
                if points.count > 8 { points = Array(points.prefix(8)) }
                let size = t.json.bytes.count + 128
                let budget = max(0, Self.bigPayload - size)
                for path in points {
                    for depth in [513, budget / 2] {
                        out.append(make(t, "\(HostileJSON.describe(path)) arrays \(depth) deep",
                                        t.json.replacing(path, with: Self.nestedArrays(depth))))
                    }
                    let objects = budget / 6
                    out.append(make(t, "\(HostileJSON.describe(path)) objects \(objects) deep",
                                    t.json.replacing(path, with: Self.nestedObjects(objects))))
                    let mixed = budget / 8
                    out.append(make(t, "\(HostileJSON.describe(path)) [{\"a\": mixed \(mixed) deep",
                                    t.json.replacing(path, with: Self.nestedMixed(mixed))))
                }
                out.append(make(t, "payload arrays \(Self.bigPayload / 2) deep", Self.nestedArrays(Self.bigPayload / 2)))
                // Unterminated: opens only.
                out.append(make(t, "payload \(Self.bigPayload) unclosed [", .raw(Array(repeating: 0x5B, count: Self.bigPayload))))
            }
        case .longStrings:
            for t in templates {
                for (path, node) in t.json.paths() {
                    guard case .string = node else { continue }
                    let long = Self.longString(bytes: Self.bigPayload, random: &random)
                    let replaced = t.json.replacing(path, with: .string(long))
                    guard replaced.bytes.count <= Self.frameLimit - 512 else { continue }
                    out.append(make(t, "\(HostileJSON.describe(path)) \(long.utf8.count) bytes", replaced))
                }
                let key = Self.longString(bytes: Self.bigPayload - t.json.bytes.count + 8, random: &random)
                out.append(make(t, "a key of \(key.utf8.count) bytes", t.json.replacing([.key(key)], with: .number("1"))))
            }
        case .invalidUTF8:
            let invalid: [[UInt8]] = [
                [0xC3, 0x28], [0xA0, 0xA1], [0xE2, 0x28, 0xA1], [0xF0, 0x28, 0x8C, 0xBC], [0xC0, 0x80],
                [0xED, 0xA0, 0x80], [0xFF, 0xFE], [0xF8, 0x88, 0x80, 0x80, 0x80],
            ]
            let escapes = [#"\ud800"#, #"\udc00\ud800"#, #"a\u0000b"#, #"\uffff\ufffe"#, #"\ud83d"#]
            for t in templates {
                // Escapes that decode to no valid Unicode scalar (valid UTF-8 on the wire).
                for (i, (path, node)) in t.json.paths().enumerated() {
                    guard case .string = node else { continue }
                    let escape = escapes[i % escapes.count]
                    out.append(make(t, "\(HostileJSON.describe(path)) = \"\(escape)\"",
                                    t.json.replacing(path, with: .rawString(Array(escape.utf8)))))
                }
                // The same message as a BINARY payload with invalid UTF-8 inside.
                var bytes = t.json.bytes
                bytes.insert(contentsOf: invalid[Int(random.next() % UInt64(invalid.count))], at: min(bytes.count, 10))
                out.append(HostileMessage(hostileClass: hostileClass, label: "\(t.name) as BINARY with invalid UTF-8",
                                          namespace: Array(t.namespace.utf8), source: t.source, destination: t.destination,
                                          binary: true, payload: bytes))
            }
            // Last: frames whose STRING payload or namespace is not UTF-8 at all (a sender
            // drops the connection: protobuf strings must be UTF-8).
            for (i, t) in templates.enumerated() {
                guard let (path, _) = t.json.paths().first(where: { if case .string = $0.1 { return true } else { return false } })
                else { continue }
                let bad = invalid[i % invalid.count]
                out.append(make(t, "\(HostileJSON.describe(path)) with raw bytes \(bad.map { String($0, radix: 16) })",
                                t.json.replacing(path, with: .rawString(Array("ok".utf8) + bad))))
            }
            if let app = templates.first(where: { $0.name == "APP" }) {
                out.append(HostileMessage(hostileClass: hostileClass, label: "APP namespace with raw invalid UTF-8",
                                          namespace: Array("urn:x-cast:bad".utf8) + [0xC3, 0x28], source: app.source,
                                          destination: .broadcast, binary: false, payload: app.json.bytes))
            }
        case .unknownTypes:
            let types = ["UNKNOWN", "", "receiver_status", "MEDIA_STATUS ", "media_status", "PONG", "PING", "LAUNCH",
                         "LOAD", "CLOSE", "LAUNCH_STATUS", "INVALID_REQUEST", "\u{0}", String(repeating: "T", count: 300)]
            for t in templates {
                for type in types {
                    out.append(make(t, "type = \"\(type.prefix(20))\"", t.json.replacing([.key("type")], with: .string(type))))
                }
                if case .object(let members) = t.json {
                    out.append(make(t, "no type", .object(members.filter { $0.key != "type" })))
                }
            }
            // Real messages on the wrong namespace.
            let wrong = [CastNamespace.receiver, CastNamespace.media, CastNamespace.heartbeat, CastNamespace.multizone,
                         SimulatedAppID.echoNamespace, "urn:x-cast:com.google.cast.unknown"]
            for t in templates {
                for namespace in wrong where namespace != t.namespace {
                    out.append(make(t, "on \(namespace)", t.json, namespace: namespace))
                }
            }
        case .namespaces:
            let names = Self.hostileNamespaces
            if let app = templates.first(where: { $0.name == "APP" }) {
                for name in names {
                    out.append(make(app, "on namespace \(name.debugDescription)", app.json, namespace: name))
                }
            }
            if let receiver = templates.first(where: { $0.name == "RECEIVER_STATUS" }) {
                for (path, node) in receiver.json.paths() {
                    guard case .key("namespaces")? = path.last, case .array = node else { continue }
                    let list = HostileJSON.array(names.map { .object([.init(key: "name", value: .string($0))]) })
                    out.append(make(receiver, "\(HostileJSON.describe(path)) = hostile names", receiver.json.replacing(path, with: list)))
                }
            }
        case .brokenReplies:
            for request in context.pendingRequests {
                out += Self.brokenReplies(to: request, nearMisses: true)
            }
        case .oversizedMessage:
            if let receiver = templates.first(where: { $0.name == "RECEIVER_STATUS" }) {
                let padded = receiver.json.replacing([.key("padding")], with: .string(String(repeating: "p", count: 70_000)))
                out.append(make(receiver, "padded to \(padded.bytes.count) bytes", padded))
            }
            if let media = templates.first(where: { $0.name.hasPrefix("MEDIA_STATUS") }) {
                let padded = media.json.replacing([.key("status"), .index(0), .key("customData")],
                                                  with: .string(String(repeating: "q", count: 100_000)))
                out.append(make(media, "customData padded to \(padded.bytes.count) bytes", padded))
            }
        }
        return out
    }

    /// The messages of several classes, in the given order.
    public func messages(_ classes: [HostileClass]) -> [HostileMessage] { classes.flatMap(messages) }

    /// Namespaces no MQTT topic level can carry as they are.
    public static let hostileNamespaces: [String] = [
        "urn:x-cast:com.example.a+b", "urn:x-cast:#", "urn:x-cast:com.example/a/b", "urn:x-cast:/", "urn:x-cast:a/+/#",
        "urn:x-cast:a\u{0}b", "urn:x-cast:a\nb", "urn:x-cast:\u{7F}", "urn:x-cast:\u{1B}[31mred", "urn:x-cast:a\tb",
        "urn:x-cast:\u{2028}", "+", "#", "/", "$SYS/x", "urn:x-cast:" + String(repeating: "n", count: 200),
        "urn:x-cast:" + String(repeating: "l", count: 400), "urn:x-cast:com.example../..", "urn:x-cast:a b",
        "urn:x-cast:ü/é",
    ]

    /// Replies to `request`: its real id with broken bodies, then (optionally) near-miss ids.
    public static func brokenReplies(to request: HostileRequest, nearMisses: Bool) -> [HostileMessage] {
        brokenBodyReplies(to: request) + (nearMisses ? nearMissReplies(to: request) : [])
    }

    /// The real requestId with a body the sender cannot use.
    public static func brokenBodyReplies(to request: HostileRequest) -> [HostileMessage] {
        let id = request.requestId
        let type: String
        switch request.namespace {
        case CastNamespace.receiver: type = "RECEIVER_STATUS"
        case CastNamespace.media: type = "MEDIA_STATUS"
        default: type = request.type
        }
        let bodies = [
            #"{"type":"\#(type)","requestId":\#(id)}"#,
            #"{"type":"\#(type)","requestId":\#(id),"status":null}"#,
            #"{"type":"\#(type)","requestId":\#(id),"status":"broken"}"#,
            #"{"type":"\#(type)","requestId":\#(id),"status":[null,1,"x"]}"#,
            #"{"type":"\#(type)","requestId":\#(id),"status":{"applications":"x","volume":[]}}"#,
            #"{"type":"\#(type)","requestId":\#(id),"status":[{"mediaSessionId":"x","playerState":7}]}"#,
            #"{"type":"\#(type)","requestId":\#(id),"status":{"volume":{"level":1e400}}}"#,
            #"{"requestId":\#(id)}"#,
            #"{"type":null,"requestId":\#(id)}"#,
            #"{"type":"INVALID_REQUEST","requestId":\#(id),"reason":{}}"#,
            #"{"type":"LAUNCH_ERROR","requestId":\#(id),"reason":5}"#,
            #"{"type":"LOAD_FAILED","requestId":\#(id),"detailedErrorCode":1e19,"itemId":-1e19}"#,
            #"{"type":"\#(type)","requestId":\#(id),"#,
            #"not JSON "requestId":\#(id)"#,
        ]
        return bodies.enumerated().map { i, body in
            HostileMessage(hostileClass: .brokenReplies, label: "reply to \(request.type) #\(id): broken body \(i)",
                           namespace: Array(request.namespace.utf8), source: request.endpoint,
                           destination: .id(request.sourceID), binary: false, payload: Array(body.utf8))
        }
    }

    /// Error replies whose requestId is *almost* the pending one: a sender that completes the
    /// request with one of these answers it wrongly.
    public static func nearMissReplies(to request: HostileRequest) -> [HostileMessage] {
        let id = request.requestId
        let misses = ["\(id).5", "\(id)e-1", "\"\(id)\"", "\(-id)", "\(Int64(id) + 4_294_967_296)",
                      Self.add(id, to: "18446744073709551616"), "[\(id)]", "{\"id\":\(id)}"]
        return misses.map { literal in
            let body = #"{"type":"INVALID_REQUEST","requestId":\#(literal),"reason":"HOSTILE_NEAR_MISS"}"#
            return HostileMessage(hostileClass: .brokenReplies, label: "reply to \(request.type) #\(id): requestId \(literal)",
                                  namespace: Array(request.namespace.utf8), source: request.endpoint,
                                  destination: .id(request.sourceID), binary: false, payload: Array(body.utf8))
        }
    }

    /// `decimal + small` for a non-negative decimal literal (no integer type holds 2^64 + n).
    static func add(_ small: Int, to decimal: String) -> String {
        var digits = decimal.utf8.map { Int($0) - 48 }
        var carry = max(0, small)
        var i = digits.count - 1
        while carry > 0 {
            if i < 0 {
                digits.insert(0, at: 0)
                i = 0
            }
            let sum = digits[i] + carry % 10
            digits[i] = sum % 10
            carry = carry / 10 + sum / 10
            i -= 1
        }
        return String(decoding: digits.map { UInt8($0 + 48) }, as: UTF8.self)
    }

    static func otherType(than node: HostileJSON, random: inout SeededRandom) -> HostileJSON {
        let candidates: [HostileJSON]
        switch node {
        case .number: candidates = [.string("1"), .bool(true), .array([.number("1")]), .object([])]
        case .string(let s): candidates = [.number("42"), .bool(false), .array([.string(s)]), .object([.init(key: "v", value: .string(s))])]
        case .bool: candidates = [.string("true"), .number("1"), .array([])]
        case .null: candidates = [.object([]), .number("0"), .string("null")]
        case .array: candidates = [.object([.init(key: "0", value: .number("1"))]), .string("[]"), .number("0")]
        case .object: candidates = [.array([.number("1")]), .string("{}"), .bool(true)]
        case .rawString, .raw: candidates = [.number("0")]
        }
        return candidates[Int(random.next() % UInt64(candidates.count))]
    }

    static func nestedArrays(_ depth: Int) -> HostileJSON {
        .raw(Array(repeating: 0x5B, count: depth) + Array(repeating: 0x5D, count: depth))
    }

    static func nestedObjects(_ depth: Int) -> HostileJSON {
        .raw(Array(repeating: Array(#"{"a":"#.utf8), count: depth).flatMap { $0 } + Array("1".utf8)
             + Array(repeating: 0x7D, count: depth))
    }

    static func nestedMixed(_ depth: Int) -> HostileJSON {
        .raw(Array(repeating: Array(#"[{"a":"#.utf8), count: depth).flatMap { $0 } + Array("0".utf8)
             + Array(repeating: Array("}]".utf8), count: depth).flatMap { $0 })
    }

    /// A string that takes `bytes` bytes inside JSON quotes (escapes counted), mixing ASCII,
    /// multi-byte characters and characters that need escaping, from the seeded generator.
    static func longString(bytes: Int, random: inout SeededRandom) -> String {
        let pieces: [(String, Int)] = [("abcdefgh", 8), ("é", 2), ("€", 3), ("😀", 4), ("\"", 2), ("\\", 2),
                                       ("\n", 2), ("/", 1), ("+", 1), ("#", 1), (" ", 1)]
        var text = ""
        var count = 0
        while count < bytes {
            let (piece, size) = pieces[Int(random.next() % UInt64(pieces.count))]
            if count + size > bytes {
                text += String(repeating: "z", count: bytes - count)
                break
            }
            text += piece
            count += size
        }
        return text
    }
}
