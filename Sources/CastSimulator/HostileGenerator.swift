import CastProtocol
import Foundation

/// Builds the hostile messages of each class from a `HostileContext`. Pure and deterministic.
public struct HostileGenerator: Sendable {
    /// The largest frame body a Cast sender accepts (CastFraming's limit: one owner).
    public static var frameLimit: Int { CastFraming.maxBodySize }
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
        // The queue's answers and notices (a sender fetches item metadata with them).
        let id = context.mediaSessionId
        for (name, text) in [
            ("QUEUE_ITEMS", #"{"type":"QUEUE_ITEMS","requestId":0,"items":[{"itemId":1,"autoplay":true,"preloadTime":5,"media":{"contentId":"http://127.0.0.1/q/1.mp3","duration":200,"metadata":{"metadataType":3,"title":"One","artist":"A","images":[{"url":"http://127.0.0.1/1.jpg"}]}}},{"itemId":2,"media":{"contentId":"http://127.0.0.1/q/2.mp3"}}]}"#),
            ("QUEUE_CHANGE", #"{"type":"QUEUE_CHANGE","requestId":0,"changeType":"INSERT","itemIds":[3,4],"insertBefore":2,"sequenceNumber":\#(id)}"#),
            ("QUEUE_ITEM_IDS", #"{"type":"QUEUE_ITEM_IDS","requestId":0,"itemIds":[1,2,3,4]}"#),
        ] {
            if let json = HostileJSON.parse(text) {
                result.append(Template(name: name, namespace: CastNamespace.media, source: context.appTransport,
                                       destination: .broadcast, json: json))
            }
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
