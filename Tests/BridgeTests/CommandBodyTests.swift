import CastProtocol
import Testing
@testable import Bridge

/// The payload's body read straight from the bytes (JSON form) against the reading it replaced
/// (kept here as the reference: a String first, trimmed, then JSON), on payloads built from
/// white space of every kind, broken UTF-8, deep nesting and ordinary commands.
@Suite struct CommandBodyTests {
    enum Outcome: Equatable {
        case short(String)
        case json([String: JSONValue])
        case failure(ParseFailure)
    }

    static func outcome(_ r: Result<CommandParser.Body, ParseFailure>) -> Outcome {
        switch r {
        case .success(.short(let s)): .short(s)
        case .success(.json(let d)): .json(d)
        case .failure(let f): .failure(f)
        }
    }

    static func reference(_ p: CommandParser, _ payload: [UInt8]) -> Result<CommandParser.Body, ParseFailure> {
        do { try p.checkPayloadSize(payload) } catch { return .failure(ParseFailure(error: error, id: nil)) }
        guard let text = String(validating: payload, as: UTF8.self) else {
            return .failure(ParseFailure(error: .invalid("the payload is not valid UTF-8"), id: nil))
        }
        let trimmed = CommandParser.trimmed(text)
        guard trimmed.hasPrefix("{") else { return .success(.short(trimmed)) }
        let json = Array(trimmed.utf8)
        if JSONOutput.nestsDeeper(json, than: CommandParser.maxJSONDepth) {
            return .failure(ParseFailure(error: .invalid(
                "the JSON nests more than \(CommandParser.maxJSONDepth) levels deep; flatten custom_data or data"), id: nil))
        }
        guard let value = JSONOutput.parse(json), case .object(let dict) = value else {
            return .failure(ParseFailure(error: .invalid("the payload starts with { but is not a valid JSON object"), id: nil))
        }
        return .success(.json(dict))
    }

    @Test func theByteReadingAgreesWithTheStringReading() {
        let parser = CommandParser(maxPayload: 4096, allowedNamespaces: [])
        let pads: [[UInt8]] = [[], [0x20], [0x09, 0x0A], [0x0B], [0x0C, 0x0D], [0xC2, 0xA0], [0xE2, 0x80, 0xA8], [0xC2, 0x85], [0xFF]]
        let cores: [[UInt8]] = [
            Array(#"{"percent": 37, "id": 5}"#.utf8), Array(#"{"level":0.5}"#.utf8), Array("{}".utf8), Array("{".utf8),
            Array("{]".utf8), Array("{\"a\": \"\u{e9}\"}".utf8), [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D],
            [0x7B, 0xFF, 0x7D], Array("[1]".utf8), Array("0.5".utf8), Array("".utf8), Array("play".utf8),
            Array((String(repeating: "{\"a\":", count: 40) + "1" + String(repeating: "}", count: 40)).utf8),
            Array((String(repeating: "{\"a\":", count: 40) + "\"\u{1}\"").utf8) + [0xC3] + Array(String(repeating: "}", count: 40).utf8),
            Array(#"{"id": "x", "expires": 3} trailing"#.utf8), Array(#"{"a":1}}"#.utf8),
            Array(String(repeating: "x", count: 5000).utf8),
        ]
        var checked = 0
        for before in pads {
            for core in cores {
                for after in pads {
                    let payload = before + core + after
                    #expect(Self.outcome(parser.body(payload)) == Self.outcome(Self.reference(parser, payload)),
                            "\(payload.prefix(40))")
                    checked += 1
                }
            }
        }
        #expect(checked == pads.count * pads.count * cores.count)
    }
}
