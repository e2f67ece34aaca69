import CastSimulator
import Testing

@testable import CastProtocol

/// The one-pass JSON parser decides plain JSON and must read it exactly as `JSONDecoder` reads a
/// `JSONValue`; everything else it leaves to `JSONDecoder`.
@Suite struct JSONParserTests {
    private func reference(_ text: String) -> JSONValue? { JSONValue.parseWithJSONDecoder(Array(text.utf8)) }

    @Test(arguments: [
        #"{"percent":30,"id":1}"#,
        #"{"url":"http:\/\/192.0.2.5\/a b.mp3","title":"Caf\u00e9 \ud83c\udfb5","n":-0.5e-3,"big":12345678901234567890}"#,
        #" [ true , false , null , 0 , -0 , 1E2 , 2.5e+10 , "" , [] , {} ] "#,
        #""just a string""#,
        "42",
        "-7.25",
        #"{"a":{"b":{"c":[1,[2,[3,{"d":"\b\f\n\r\t\"\\"}]]]}}}"#,
        #"{"emoji":"🎶","cjk":"日本語","nul":"a\u0000b"}"#,
        #"{"":""}"#,
        "{\n\t\"k\" :\r\n 1 }",
        #"[1e-320, 0.1, 1.7976931348623157e308, 0e-999, 4.9e-324]"#,
    ])
    func decidesPlainJSONLikeJSONDecoder(_ text: String) throws {
        let value = try #require(JSONValue.parseWithoutFallback(Array(text.utf8)), "the parser should decide \(text)")
        #expect(value == reference(text))
        #expect(JSONValue.parse(text) == value)
    }

    @Test func readsWhatACommandCarries() throws {
        let value = try #require(JSONValue.parseWithoutFallback(Array(#"{"url":"http://x/y","autoplay":true,"position":12.5,"tracks":[{"id":1}]}"#.utf8)))
        #expect(value == .object(["url": .string("http://x/y"), "autoplay": .bool(true), "position": .number(12.5),
                                  "tracks": .array([.object(["id": .number(1)])])]))
    }

    @Test(arguments: [
        #"{"a":1,"a":2}"#,             // which duplicate wins is JSONDecoder's rule
        #"{"a":"\ud800"}"#,            // lone surrogates
        #"{"a":"\udc00x"}"#,
        #"{"a":"\ud800\u0041"}"#,
        "[1e400]",                     // not finite as a Double
        "[-1e400]", "[1e-400]", "[2e-324]",   // underflows to zero: JSONDecoder refuses it
        "\u{FEFF}{}",                   // a byte order mark
        "[01]", "[1.]", "[.5]", "[+1]", "[-]", "[1e]", "[1e+]",
        "[1,]", #"{"a":1,}"#, "[", "{", #"{"a""#, #"{"a":}"#, "", " ", "nul", "tru", "[true false]",
        #"{"a":1} x"#, "\"tab\there\"", #""\x""#, #""\u12""#, #""unterminated"#, "{'a':1}", "[NaN]",
    ])
    func leavesTheRestToJSONDecoder(_ text: String) {
        #expect(JSONValue.parseWithoutFallback(Array(text.utf8)) == nil, "\(text)")
        #expect(JSONValue.parse(text) == reference(text), "\(text)")
    }

    @Test func invalidUTF8IsLeftToJSONDecoder() {
        let bytes: [UInt8] = [0x22, 0xC3, 0x28, 0x22]   // "\xC3(" : a broken two-byte sequence
        #expect(JSONValue.parseWithoutFallback(bytes) == nil)
        #expect(JSONValue.parse(bytes) == JSONValue.parseWithJSONDecoder(bytes))
    }

    @Test func nestingDeeperThanItsLimitIsLeftToJSONDecoder() throws {
        let limit = JSONParser.maxDepth
        let atLimit = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(JSONValue.parseWithoutFallback(Array(atLimit.utf8)) != nil)
        let deeper = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        #expect(JSONValue.parseWithoutFallback(Array(deeper.utf8)) == nil)
        #expect(JSONValue.parse(deeper) == reference(deeper))
        // Far past JSONDecoder's own limit: no crash, no value.
        let hostile = String(repeating: "[", count: 100_000)
        #expect(JSONValue.parse(hostile) == nil)
    }

    /// Random documents built from awkward pieces and then broken a little: whatever the parser
    /// decides must be what JSONDecoder gives.
    @Test func agreesWithJSONDecoderOnRandomDocuments() {
        var random = SeededRandom(seed: 20261125)
        let leaves = ["0", "-0", "1", "-12", "3.25", "1e3", "2E-2", "1e400", "1e-400", "0e-400", "01", "1.", "true", "false", "null",
                      #""""#, #""a""#, #""\u00e9\n""#, #""\ud83c\udfb5""#, #""\ud800""#, #""é""#, #""\/""#, "tru", #""x"#]
        let keys = [#""a""#, #""b""#, #""""#, #""\u0061""#, #""id""#]
        func document(_ depth: Int) -> String {
            switch Int.random(in: 0..<(depth > 3 ? 1 : 3), using: &random) {
            case 1:
                let count = Int.random(in: 0...3, using: &random)
                return "[" + (0..<count).map { _ in document(depth + 1) }.joined(separator: ",") + "]"
            case 2:
                let count = Int.random(in: 0...3, using: &random)
                return "{" + (0..<count).map { _ in
                    (keys.randomElement(using: &random) ?? #""k""#) + ":" + document(depth + 1)
                }.joined(separator: ",") + "}"
            default:
                return leaves.randomElement(using: &random) ?? "1"
            }
        }
        var decided = 0
        for _ in 0..<3000 {
            var text = document(0)
            switch Int.random(in: 0..<12, using: &random) {
            case 0: text = " \n" + text + "\t"
            case 1 where !text.isEmpty: text.removeLast()
            case 2: text += ","
            default: break
            }
            let bytes = Array(text.utf8)
            if let value = JSONValue.parseWithoutFallback(bytes) {
                decided += 1
                #expect(value == JSONValue.parseWithJSONDecoder(bytes), "\(text)")
            } else {
                #expect(JSONValue.parse(bytes) == JSONValue.parseWithJSONDecoder(bytes), "\(text)")
            }
        }
        #expect(decided > 1000)
    }
}
