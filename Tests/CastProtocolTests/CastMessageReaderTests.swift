import CastSimulator
import Foundation
import Testing

@testable import CastProtocol

/// `CastMessageReader` (what `CastMessage(serializedBytes:)` runs) against SwiftProtobuf's
/// decoding of the generated type (`init(swiftProtobufBytes:)`): every body one takes the other
/// takes, with the same message; every body one refuses the other refuses.
@Suite struct CastMessageReaderTests {
    /// The outcome of a reading: the message, or that it was refused.
    static func outcome(_ read: () throws -> CastMessage) -> CastMessage? { try? read() }

    static func expectSame(_ body: [UInt8], _ label: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
        let ours = outcome { try CastMessage(serializedBytes: body) }
        let reference = outcome { try CastMessage(swiftProtobufBytes: body) }
        #expect(ours == reference, "\(label()): ours \(String(describing: ours)), SwiftProtobuf \(String(describing: reference)); body \(body.prefix(48))",
                sourceLocation: sourceLocation)
    }

    // MARK: - Writing protobuf by hand

    static func varint(_ value: UInt64) -> [UInt8] {
        var v = value
        var out: [UInt8] = []
        repeat {
            var byte = UInt8(v & 0x7F)
            v >>= 7
            if v != 0 { byte |= 0x80 }
            out.append(byte)
        } while v != 0
        return out
    }

    static func tag(_ number: UInt64, _ wire: UInt64) -> [UInt8] { varint(number << 3 | wire) }
    static func string(_ number: UInt64, _ bytes: [UInt8]) -> [UInt8] { tag(number, 2) + varint(UInt64(bytes.count)) + bytes }
    static func string(_ number: UInt64, _ text: String) -> [UInt8] { string(number, Array(text.utf8)) }
    static func number(_ number: UInt64, _ value: UInt64) -> [UInt8] { tag(number, 0) + varint(value) }

    /// A valid body: version, ids, namespace, type and payload.
    static func body(version: UInt64 = 0, source: String = "receiver-0", destination: String = "sender-0",
                     namespace: String = "urn:x-cast:com.google.cast.receiver", text: String? = #"{"type":"PING"}"#,
                     binary: [UInt8]? = nil) -> [UInt8] {
        var out = number(1, version) + string(2, source) + string(3, destination) + string(4, namespace)
        out += number(5, binary == nil ? 0 : 1)
        if let text { out += string(6, text) }
        if let binary { out += string(7, binary) }
        return out
    }

    @Test func plainMessagesReadAsSwiftProtobufReadsThem() throws {
        let cases: [(String, [UInt8])] = [
            ("text", Self.body()),
            ("binary", Self.body(text: nil, binary: [0, 1, 2, 0xFF])),
            ("empty text", Self.body(text: "")),
            ("unicode", Self.body(source: "web-ü", text: #"{"t":"é😀\u0000"}"#)),
            ("NUL in the text", Self.body(text: "a\u{0}b")),
            ("version 3", Self.body(version: 3)),
            ("60 KB of nesting", Self.body(text: String(repeating: "[", count: 30_000) + String(repeating: "]", count: 30_000))),
        ]
        for (label, bytes) in cases {
            Self.expectSame(bytes, label)
            #expect((try? CastMessage(serializedBytes: bytes)) != nil, "\(label) refused")
        }
        let message = try CastMessage(serializedBytes: Self.body(text: "hello"))
        #expect(message == CastMessage(sourceID: "receiver-0", destinationID: "sender-0",
                                       namespace: "urn:x-cast:com.google.cast.receiver", payload: .string("hello")))
    }

    /// The corners of the wire format, each against SwiftProtobuf.
    @Test func wireFormatCornersAgree() {
        let base = Self.body()
        let unknowns: [(String, [UInt8])] = [
            ("unknown varint", Self.number(15, 300)),
            ("unknown fixed64", Self.tag(16, 1) + [1, 2, 3, 4, 5, 6, 7, 8]),
            ("unknown fixed32", Self.tag(17, 5) + [1, 2, 3, 4]),
            ("unknown bytes", Self.string(18, [9, 9, 9])),
            ("unknown group", Self.tag(19, 3) + Self.number(1, 5) + Self.tag(19, 4)),
            ("nested groups", Self.tag(19, 3) + Self.tag(20, 3) + Self.tag(20, 4) + Self.tag(19, 4)),
            ("group closed by another number", Self.tag(19, 3) + Self.tag(20, 4)),
            ("unterminated group", Self.tag(19, 3) + Self.number(1, 5)),
            ("end group at the top", Self.tag(19, 4)),
            ("wire type 6", [0x7E]),
            ("wire type 7", [0x7F]),
            ("field number 0", [0x00, 0x01]),
            ("field number 0, bytes", [0x02, 0x00]),
            ("5-byte tag", [0x80 | 0x08, 0x80, 0x80, 0x80, 0x01, 0x00]),
            ("5-byte tag, fifth byte 16", [0x80 | 0x08, 0x80, 0x80, 0x80, 0x10, 0x00]),
            ("6-byte tag", [0x88, 0x80, 0x80, 0x80, 0x81, 0x00, 0x00]),
            ("padded tag of field 2", [0x92, 0x80, 0x00, 0x01, 0x41]),
            ("10-byte varint", Self.tag(15, 0) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
            ("11-byte varint", Self.tag(15, 0) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
            ("truncated varint", Self.tag(15, 0) + [0xFF]),
            ("truncated fixed64", Self.tag(16, 1) + [1, 2, 3]),
            ("truncated bytes", Self.tag(18, 2) + [5, 1]),
            ("length 2^31", Self.tag(6, 2) + Self.varint(0x8000_0000)),
            ("version out of its enum", Self.number(1, 9)),
            ("version 2^32 (truncates to 0)", Self.number(1, 1 << 32)),
            ("version -1", Self.number(1, UInt64.max)),
            ("payload type 2", Self.number(5, 2)),
            ("source as a varint", Self.number(2, 7)),
            ("namespace as fixed32", Self.tag(4, 5) + [1, 2, 3, 4]),
            ("payload type as bytes", Self.string(5, [1])),
            ("continued", Self.number(8, 1)),
            ("remaining_length", Self.number(9, 1 << 40)),
            ("continued as bytes", Self.string(8, [1])),
            ("second source wins", Self.string(2, "web-5")),
            ("binary beside text", Self.string(7, [1, 2])),
            ("invalid UTF-8 source", Self.string(2, [0xC3, 0x28])),
            ("surrogate in the text", Self.string(6, [0xED, 0xA0, 0x80])),
            ("overlong slash", Self.string(6, [0xC0, 0xAF])),
            ("beyond U+10FFFF", Self.string(6, [0xF4, 0x90, 0x80, 0x80])),
            ("empty source", Self.string(2, "")),
        ]
        for (label, bytes) in unknowns {
            Self.expectSame(base + bytes, "\(label) after the message")
            Self.expectSame(bytes + base, "\(label) before the message")
            Self.expectSame(bytes, "\(label) alone")
        }
        // Groups nested up to SwiftProtobuf's depth limit, and one more.
        for depth in [98, 99, 100, 101] {
            let open = (0..<depth).flatMap { Self.tag(UInt64(20 + $0), 3) }
            let close = (0..<depth).reversed().flatMap { Self.tag(UInt64(20 + $0), 4) }
            Self.expectSame(base + open + close, "groups \(depth) deep")
        }
        // Each required field missing.
        let parts = [Self.number(1, 0), Self.string(2, "a"), Self.string(3, "b"), Self.string(4, "urn:x-cast:c"), Self.number(5, 0),
                     Self.string(6, "x")]
        for missing in parts.indices {
            let bytes = parts.indices.filter { $0 != missing }.flatMap { parts[$0] }
            Self.expectSame(bytes, "without part \(missing)")
        }
    }

    /// Random bodies: valid messages mutated (bytes flipped, cut, inserted, fields spliced in),
    /// each read both ways.
    @Test func randomBodiesAgree() {
        var random = SeededRandom(seed: 20_261_127)
        let pieces: [[UInt8]] = [
            Self.number(1, 1), Self.number(1, 7), Self.number(5, 1), Self.number(5, 0), Self.string(6, "{}"),
            Self.string(7, [0xFF]), Self.string(2, [0xE2, 0x82]), Self.tag(30, 3), Self.tag(30, 4), Self.tag(31, 5) + [0, 0, 0, 0],
            Self.number(8, 0), Self.tag(6, 0), [0x80], [0xFF, 0xFF], Self.string(4, "urn:x-cast:é"),
        ]
        var decided = 0
        for i in 0..<4000 {
            var bytes = Self.body(text: i % 3 == 0 ? nil : "{\"n\":\(i)}", binary: i % 3 == 0 ? [UInt8(i % 256)] : nil)
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                switch Int.random(in: 0..<5, using: &random) {
                case 0 where !bytes.isEmpty:
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                case 1 where !bytes.isEmpty:
                    bytes.removeLast(Int.random(in: 1...min(8, bytes.count), using: &random))
                case 2:
                    bytes.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random))
                case 3:
                    let piece = pieces[Int.random(in: 0..<pieces.count, using: &random)]
                    bytes.insert(contentsOf: piece, at: Int.random(in: 0...bytes.count, using: &random))
                default:
                    bytes += pieces[Int.random(in: 0..<pieces.count, using: &random)]
                }
            }
            if (try? CastMessage(serializedBytes: bytes)) != nil { decided += 1 }
            Self.expectSame(bytes, "random body \(i)")
        }
        // Both outcomes occur often enough for the comparison to mean something.
        #expect(decided > 400 && decided < 3600, "\(decided) of 4000 read")
    }
}
