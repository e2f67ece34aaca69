import Foundation
import CastSimulator
import Testing

@testable import CastProtocol

/// `JSONValue.jsonBytes` must give exactly the bytes `CastJSON.encode` gives (retained MQTT
/// documents are compared byte for byte, and consumers may have seen the old encoding).
@Suite struct JSONWriterTests {
    static let tricky: [JSONValue] = [
        .null, .bool(true), .bool(false), .number(0), .number(-0.0), .number(42), .number(-3), .number(0.1),
        .number(1e-7), .number(1e21), .number(9.5e15), .number(1e16), .number(5e15), .number(123_456_789.123),
        .number(1.0 / 3.0), .number(9_007_199_254_740_994), .string(""), .string("plain"),
        .string("a\"b\\c/d\u{1}\u{1f}\n\r\t\u{8}\u{c}\u{7f}\u{2028}é😀"), .string("http://example.com/a b"),
        .array([]), .object([:]),
        .object(["break_status": .null, "breaks": .number(1), "breakStatus": .number(2), "a10": .number(3),
                 "a9": .number(4), "B": .number(5), "_x": .number(6), "é": .number(7), "Z": .number(8),
                 "updated_at": .string("2026-11-23T10:00:00.000Z")]),
        .array([.object(["x": .array([.null, .bool(true), .object(["k\"ey": .string("v\n")])])]), .number(2.5)]),
    ]

    @Test(arguments: tricky) func sameBytesAsTheEncoder(_ value: JSONValue) throws {
        let expected = try CastJSON.encode(value)
        #expect(String(decoding: value.jsonBytes, as: UTF8.self) == expected)
    }

    @Test func randomDocumentsMatchTheEncoder() throws {
        var generator = SeededRandom(seed: 0x5eed)
        let keys = ["a", "B", "_x", "break_status", "breaks", "é", "a10", "a9", "updated_at", "x\"y", "😀"]
        func value(_ depth: Int) -> JSONValue {
            switch generator.next() % (depth > 3 ? 5 : 7) {
            case 0: return .null
            case 1: return .bool(generator.next() % 2 == 0)
            case 2: return .number(Double(Int64(bitPattern: generator.next() % 2_000_001) - 1_000_000) / 7)
            case 3: return .string(String(decoding: (0..<(generator.next() % 9)).map { _ in UInt8(generator.next() % 128) },
                                          as: UTF8.self))
            case 4: return Self.tricky[Int(generator.next() % UInt64(Self.tricky.count))]
            case 5: return .array((0..<(generator.next() % 4)).map { _ in value(depth + 1) })
            default:
                var object: [String: JSONValue] = [:]
                for _ in 0..<(generator.next() % 6) { object[keys[Int(generator.next() % UInt64(keys.count))]] = value(depth + 1) }
                return .object(object)
            }
        }
        for _ in 0..<2000 {
            let v = value(0)
            #expect(String(decoding: v.jsonBytes, as: UTF8.self) == (try CastJSON.encode(v)))
        }
    }

    @Test func nonFiniteNumbersAreNull() {
        #expect(JSONValue.array([.number(.nan), .number(.infinity)]).jsonBytes == Array("[null,null]".utf8))
    }
}

/// `JSONValue` decoding tries kinds in a fixed order; every kind must still come out as itself.
@Suite struct JSONValueDecodingTests {
    @Test func everyKindDecodesAsItself() throws {
        let text = #"{"s":"1","n":1,"f":1.5,"t":true,"F":false,"z":null,"a":[1,"1",true,null,{}],"o":{"x":[]}}"#
        let value = try CastJSON.decode(JSONValue.self, from: text)
        #expect(value == .object([
            "s": .string("1"), "n": .number(1), "f": .number(1.5), "t": .bool(true), "F": .bool(false), "z": .null,
            "a": .array([.number(1), .string("1"), .bool(true), .null, .object([:])]),
            "o": .object(["x": .array([])]),
        ]))
        for scalar in ["true", "false", "0", "-2.5", "\"true\"", "\"0\"", "null", "[]", "{}"] {
            let decoded = try CastJSON.decode(JSONValue.self, from: scalar)
            #expect(String(decoding: decoded.jsonBytes, as: UTF8.self) == scalar)
        }
    }
}
