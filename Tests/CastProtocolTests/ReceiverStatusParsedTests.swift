import Testing
@testable import CastProtocol

/// RECEIVER_STATUS read from `JSONValue.parse`'s value gives exactly what `JSONDecoder` gives,
/// whatever the device puts in it.
@Suite struct ReceiverStatusParsedTests {
    func agree(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        expectSameOutcome(text, { try ReceiverResponse.parse($0) }, { try ReceiverResponse.parseWithJSONDecoder($0) }, sourceLocation: sourceLocation)
    }

    static let typical = #"""
    {"type":"RECEIVER_STATUS","requestId":7,"status":{"applications":[{"appId":"CC1AD845","appType":"WEB",
    "displayName":"Default Media Receiver","iconUrl":"","isIdleScreen":false,"launchedFromCloud":false,
    "namespaces":[{"name":"urn:x-cast:com.google.cast.media"},{"name":"urn:x-cast:com.google.cast.cac"}],
    "sessionId":"7E2FF513-CDF6-9A91-2B28-3E3DE7BAC174","statusText":"Ready To Cast","transportId":"web-5",
    "universalAppId":"CC1AD845"}],"isActiveInput":true,"isStandBy":false,"userEq":{"low_shelf":{"gain_db":0}},
    "volume":{"controlType":"attenuation","level":0.4,"muted":false,"stepInterval":0.05}}}
    """#

    @Test func theTypicalStatusIsReadWhole() throws {
        guard case .status(let id, let status) = try ReceiverResponse.parse(.string(Self.typical)) else {
            Issue.record("not a status")
            return
        }
        #expect(id == 7)
        #expect(status.applications.first?.transportId == "web-5")
        #expect(status.applications.first?.namespaces == ["urn:x-cast:com.google.cast.media", "urn:x-cast:com.google.cast.cac"])
        #expect(status.volume == ReceiverVolume(controlType: "attenuation", level: 0.4, muted: false, stepInterval: 0.05))
        #expect(status.isActiveInput == true)
        #expect(status.userEq == .object(["low_shelf": .object(["gain_db": .number(0)])]))
        agree(Self.typical)
    }

    /// Every field with every kind of value, one at a time.
    @Test func everyFieldWithEveryKindOfValue() throws {
        let values = ["null", "true", "false", "0", "1", "-2.5", "1e-7", "1e400", "1e-400", "\"\"", "\"x\"", "\"web-\\u0001\"",
                      "[]", "[1]", "[{\"name\":\"a\"}]", "[{\"name\":1}]", "[{}]", "[null]", "{}", "{\"name\":\"a\"}"]
        guard case .object(var top)? = JSONValue.parse(Self.typical), case .object(let status)? = top["status"],
              case .array(let apps)? = status["applications"], case .object(let app)? = apps.first,
              case .object(let volume)? = status["volume"] else {
            Issue.record("the typical status does not parse")
            return
        }
        func text(_ value: JSONValue) -> String { String(decoding: value.jsonBytes, as: UTF8.self) }
        var checked = 0
        func agreeReplacing(_ document: String, _ marker: String, _ raw: String) {
            let replaced = document.replacingOccurrences(of: marker, with: raw)
            #expect(replaced != document, "the marker \(marker) is not in \(document)")
            checked += 1
            agree(replaced)
        }
        // Replaces `key`'s value textually, so values JSONValue cannot hold (1e400) reach the decoders too.
        func with(_ object: [String: JSONValue], _ key: String, _ raw: String) -> String {
            var o = object
            o[key] = .string("\u{1}PLACEHOLDER\u{1}")
            let replaced = text(.object(o)).replacingOccurrences(of: "\"\\u0001PLACEHOLDER\\u0001\"", with: raw)
            #expect(!replaced.contains("PLACEHOLDER"))
            return replaced
        }
        for raw in values {
            for key in status.keys.sorted() + ["missing"] {
                var t = top
                t["status"] = .string("\u{2}")
                agreeReplacing(text(.object(t)), "\"\\u0002\"", with(status, key, raw))
            }
            for key in app.keys.sorted() {
                var s = status
                s["applications"] = .array([.string("\u{3}")])
                var t = top
                t["status"] = .object(s)
                agreeReplacing(text(.object(t)), "[\"\\u0003\"]", "[" + with(app, key, raw) + "]")
            }
            for key in volume.keys.sorted() {
                var s = status
                s["volume"] = .string("\u{4}")
                var t = top
                t["status"] = .object(s)
                agreeReplacing(text(.object(t)), "\"\\u0004\"", with(volume, key, raw))
            }
            top["status"] = .string("\u{5}")
            agreeReplacing(text(.object(top)), "\"\\u0005\"", raw)
            top["status"] = .object(status)
        }
        #expect(checked > 300)
    }

    @Test func oddDocuments() {
        for text in [
            #"{"type":"RECEIVER_STATUS"}"#,
            #"{"type":"RECEIVER_STATUS","status":{"applications":[{"appId":"A"},{"appType":"WEB"}]}}"#,
            #"{"type":"RECEIVER_STATUS","status":{"volume":{"level":0.5},"volume":{"level":"x"}}}"#,
            #"{"type":"RECEIVER_STATUS","status":{"volume":{"level":0.5}},"status":{}}"#,
            #"{"type":"RECEIVER_STATUS","status":{"app\u0049d":1,"applications":[{"\u0061ppId":"B","transportId":"t\u00e9"}]}}"#,
            #"{"type":"RECEIVER_STATUS","status":{"applications":[{"appId":"A","transportId":"*"}]}}"#,
            #"{"type":"RECEIVER_STATUS","status":{"applications":[{"appId":"A","namespaces":[{"name":"a","x":1},{"name":"b"}]}]}}"#,
            #"{"type":"RECEIVER_STATUS","status":{"userEq":[1,{"a":null}],"isStandBy":1}}"#,
            #"{"type":"RECEIVER_STATUS","status":{"volume":{"level":1E2,"stepInterval":-0.0}}}"#,
            #"{"type":"RECEIVER_STATUS","status":{"applications":[{"appId":"\ud800"}]}}"#,
            #"{"type":"RECEIVER_STATUS","status":{}} "#,
            #"{"type":"RECEIVER_STATUS","status":{},}"#,
            #"{"type":"RECEIVER_STATUS","requestId":1.5,"status":{}}"#,
            "\u{FEFF}{\"type\":\"RECEIVER_STATUS\",\"status\":{}}",
        ] {
            agree(text)
        }
    }

    /// Random statuses: fields dropped, retyped and nested at random.
    @Test func randomStatusesAgree() {
        var rng = SystemRandomNumberGenerator()
        let kinds: [JSONValue] = [.null, .bool(true), .number(3), .number(0.25), .string("s"), .array([]), .object([:]),
                                  .array([.object(["name": .string("n")])]), .object(["level": .number(0.1)])]
        guard case .object(let top)? = JSONValue.parse(Self.typical) else {
            Issue.record("the typical status does not parse")
            return
        }
        let mutator = JSONMutator(kinds: kinds, maxDepth: 4, fieldOdds: 10, appendOdds: 5, leafOdds: 8)
        for _ in 0..<2000 {
            var t = top
            if let status = top["status"] { t["status"] = mutator.mutate(status, using: &rng) }
            agree(String(decoding: JSONValue.object(t).jsonBytes, as: UTF8.self))
        }
    }
}
