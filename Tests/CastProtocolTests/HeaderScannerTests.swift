import CastSimulator
import Testing

@testable import CastProtocol

/// The one-pass header scanner decides the plain cases and must read them exactly as
/// `JSONDecoder` does; everything else it leaves to `JSONDecoder`.
@Suite struct HeaderScannerTests {
    private func both(_ text: String) -> (CastPayloadHeader?, CastPayloadHeader?) {
        (CastPayloadHeader.parse(.string(text)), CastPayloadHeader.parseWithJSONDecoder(.string(text)))
    }

    @Test(arguments: [
        #"{"type":"RECEIVER_STATUS","requestId":7,"status":{"volume":{"level":0.5},"applications":[{"appId":"CC1AD845"}]}}"#,
        #"{"type":"PING"}"#,
        #"  { "requestId" : 12 , "type" : "MEDIA_STATUS" }  "#,
        #"{"type":"LAUNCH_STATUS","launchRequestId":3}"#,
        #"{"requestId":"5","launchRequestId":4}"#,
        #"{"requestId":null,"type":null}"#,
        #"{"type":5,"requestId":true}"#,
        #"{"requestId":-3}"#,
        #"{"requestId":-0}"#,
        #"{"requestId":9223372036854775807}"#,
        #"{}"#,
        #"{"a":[1,2.5e-3,{"b":"c\"d\\e\u00e9"}],"type":"X"}"#,
        #"{"customData":{"requestId":99,"type":"inner"},"type":"OUTER"}"#,
        #"{"responseType":"MEDIA_STATUS","requestId":2,"status":[]}"#,
        #"{"type":"RECEIVER_STATUS","responseType":"MEDIA_STATUS"}"#,
        #"{"type":null,"responseType":"MEDIA_STATUS"}"#,
        #"{"responseType":7}"#,
    ])
    func decidesPlainPayloadsLikeJSONDecoder(_ text: String) {
        guard case .header(let header) = HeaderScanner.scan(text) else {
            Issue.record("the scanner should decide \(text)")
            return
        }
        #expect(header == CastPayloadHeader.parseWithJSONDecoder(.string(text)))
    }

    @Test(arguments: [
        #"{"requestId":3.0}"#,          // a float id: JSONDecoder's rules apply
        #"{"requestId":1e19}"#,
        #"{"requestId":99999999999999999999}"#,
        #"{"type":"A","type":"B"}"#,    // duplicate routing key
        #"{"typ\u0065":"PING"}"#,       // an escaped key
        #"{"type":"P\u0049NG"}"#,       // an escaped type
        #"[1,2]"#,
        #""#,
        #"{"type":"PING"} x"#,
        #"{"type":"PING",}"#,
        #"{"a":01}"#,
        #"{"a":"\ud800"}"#,
        #"{"a":tru}"#,
        "{\"a\":\"tab\there\"}",
    ])
    func leavesTheRestToJSONDecoder(_ text: String) {
        #expect(HeaderScanner.scan(text) == .unsure)
        let (header, reference) = both(text)
        #expect(header == reference)
    }

    /// Real receiver apps name the kind `responseType` (a Pandora status; spec §6): read as
    /// `type` when there is no `type` key; `type` wins when both are there.
    @Test func responseTypeIsTheKindWithoutAType() {
        #expect(CastPayloadHeader.parse(.string(#"{"responseType":"MEDIA_STATUS","requestId":2}"#))
                == CastPayloadHeader(type: "MEDIA_STATUS", requestId: 2))
        #expect(CastPayloadHeader.parse(.string(#"{"type":"RECEIVER_STATUS","responseType":"MEDIA_STATUS"}"#))?.type
                == "RECEIVER_STATUS")
        #expect(CastPayloadHeader.parse(.string(#"{"type":null,"responseType":"MEDIA_STATUS"}"#))?.type == nil)
        #expect(HeaderScanner.scan(#"{"responseType":"A","responseType":"B"}"#) == .unsure)
    }

    @Test func deepNestingIsLeftToJSONDecoder() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(HeaderScanner.scan(#"{"a":\#(deep),"type":"X"}"#) == .unsure)
        let (header, reference) = both(#"{"a":\#(deep),"type":"X"}"#)
        #expect(header == reference)
    }

    /// Random payloads built from routing keys, awkward values and broken bits: whatever the
    /// scanner decides must be what JSONDecoder gives.
    @Test func agreesWithJSONDecoderOnRandomPayloads() {
        var random = SeededRandom(seed: 20261123)
        let keys = [#""type""#, #""requestId""#, #""launchRequestId""#, #""status""#, #""t\u0079pe""#, #""""#]
        let values = [#""PING""#, "7", "-1", "0", "3.0", "1e2", "null", "true", #""x""#, "[]", "{}",
                      #"{"requestId":1}"#, "[1,[2,{}]]", #""\n\u00e9""#, "01", "-", #""unterminated"#, "1.", ".5"]
        var decided = 0
        for _ in 0..<3000 {
            var members: [String] = []
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let key = keys.randomElement(using: &random) ?? #""k""#
                let value = values.randomElement(using: &random) ?? "1"
                members.append("\(key):\(value)")
            }
            var text = "{" + members.joined(separator: ",") + "}"
            if Int.random(in: 0..<10, using: &random) == 0 { text = " " + text + "\n" }
            if Int.random(in: 0..<20, using: &random) == 0, !text.isEmpty { text.removeLast() }
            if case .header = HeaderScanner.scan(text) { decided += 1 }
            let (header, reference) = both(text)
            #expect(header == reference, "\(text)")
        }
        // Most random payloads are plain enough for the scanner.
        #expect(decided > 1000)
    }
}
