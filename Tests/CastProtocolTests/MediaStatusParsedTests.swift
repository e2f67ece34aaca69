import Testing
@testable import CastProtocol

/// MEDIA_STATUS read from `JSONValue.parse`'s value gives exactly what `JSONDecoder` gives,
/// whatever the device puts in it, at every depth.
@Suite struct MediaStatusParsedTests {
    func agree(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        expectSameOutcome(text, { try MediaResponse.parse($0) }, { try MediaResponse.parseWithJSONDecoder($0) }, sourceLocation: sourceLocation)
    }

    static let typical = #"""
    {"type":"MEDIA_STATUS","requestId":3,"status":[{"mediaSessionId":1,"playerState":"PLAYING","idleReason":"FINISHED",
    "currentTime":12.5,"playbackRate":1,"supportedMediaCommands":274447,"volume":{"level":1,"muted":false},
    "activeTrackIds":[1,2],"currentItemId":4,"loadingItemId":5,"preloadedItemId":6,"repeatMode":"REPEAT_OFF",
    "queueData":{"name":"q"},"liveSeekableRange":{"start":0,"end":10},"customData":{"x":[1,"y"]},
    "breakStatus":{"breakId":"b","breakClipId":"c","currentBreakTime":1.5,"currentBreakClipTime":0.5,"whenSkippable":5},
    "videoInfo":{"width":1920,"height":1080,"hdrType":"sdr"},
    "extendedStatus":{"playerState":"LOADING","mediaSessionId":2,"media":{"contentId":"next"}},
    "media":{"contentId":"http://x/a.mp4","contentUrl":"http://x/a.mp4","streamType":"BUFFERED","contentType":"video/mp4",
    "duration":600.25,"entity":"e","hlsSegmentFormat":"ts","customData":{"k":1},"textTrackStyle":{"fontScale":1.2},
    "breaks":[],"breakClips":[],"tracks":[{"trackId":1,"type":"TEXT","language":"en"}],
    "metadata":{"metadataType":1,"title":"T","subtitle":"S","artist":"A","albumName":"AN","albumArtist":"AA",
    "composer":"C","seriesTitle":"ST","season":2,"episode":3,"trackNumber":4,"discNumber":1,"studio":"St",
    "releaseDate":"2020","originalAirdate":"2019","images":[{"url":"http://x/i.jpg","width":100,"height":50}]}},
    "items":[{"itemId":4,"autoplay":true,"startTime":0,"playbackDuration":30,"preloadTime":5,"activeTrackIds":[1],
    "customData":{"i":1},"media":{"contentId":"http://x/a.mp4","metadata":{"title":"T"}}}]}]}
    """#

    static let raws = ["null", "true", "0", "1", "-2.5", "1e2", "4.99999999999999999", "9007199254740993", "1e400",
                       "1e-400", "\"\"", "\"12\"", "[]", "[1]", "[null]", "[{}]", "{}", "{\"url\":\"u\"}"]

    @Test func theTypicalStatusIsReadWhole() throws {
        guard case .status(let id, let list) = try MediaResponse.parse(.string(Self.typical)), let status = list.first else {
            Issue.record("not a status")
            return
        }
        #expect(id == 3)
        #expect(status.media?.metadata?.images?.first?.width == 100)
        #expect(status.items?.first?.media?.metadata?.title == "T")
        #expect(status.extendedStatus?.media?.contentId == "next")
        #expect(status.breakStatus?.whenSkippable == 5)
        #expect(status.videoInfo?.height == 1080)
        agree(Self.typical)
    }

    /// Every value at every path replaced by every kind of JSON, one at a time.
    @Test func everyPathWithEveryKindOfValue() throws {
        let marker = JSONValue.string("\u{1}M\u{1}")
        let markerText = "\"\\u0001M\\u0001\""
        guard let document = JSONValue.parse(Self.typical) else {
            Issue.record("the typical status does not parse")
            return
        }
        func paths(_ value: JSONValue, _ prefix: [PathStep]) -> [[PathStep]] {
            switch value {
            case .object(let o): return [prefix] + o.keys.sorted().flatMap { paths(o[$0] ?? .null, prefix + [.key($0)]) }
            case .array(let a): return [prefix] + a.indices.flatMap { paths(a[$0], prefix + [.index($0)]) }
            default: return [prefix]
            }
        }
        var count = 0
        for path in paths(document, []) where !path.isEmpty && path != [.key("type")] {
            let marked = String(decoding: Self.replacing(document, at: path[...], with: marker).jsonBytes, as: UTF8.self)
            for raw in Self.raws {
                let text = marked.replacingOccurrences(of: markerText, with: raw)
                #expect(text != marked)
                agree(text)
                count += 1
            }
        }
        #expect(count > 1500)
    }

    enum PathStep: Equatable { case key(String), index(Int) }

    static func replacing(_ value: JSONValue, at path: ArraySlice<PathStep>, with new: JSONValue) -> JSONValue {
        guard let step = path.first else { return new }
        switch (step, value) {
        case (.key(let k), .object(var o)):
            o[k] = replacing(o[k] ?? .null, at: path.dropFirst(), with: new)
            return .object(o)
        case (.index(let i), .array(var a)) where a.indices.contains(i):
            a[i] = replacing(a[i], at: path.dropFirst(), with: new)
            return .array(a)
        default:
            return value
        }
    }

    @Test func oddDocuments() {
        for text in [
            #"{"type":"MEDIA_STATUS"}"#, #"{"type":"MEDIA_STATUS","status":[]}"#, #"{"type":"MEDIA_STATUS","status":null}"#,
            #"{"type":"MEDIA_STATUS","status":[{"mediaSessionId":1},null]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"mediaSessionId":1},{"mediaSessionId":2,"mediaSessionId":3}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"mediaSessionId":-0.0,"currentItemId":1.0e0,"supportedMediaCommands":12345678901234567890e-10}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"media":{"metadata":{"season":"7","episode":"x","trackNumber":2.5,"title":1,"songName":"s"}}}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"activeTrackIds":[1,2.5]},{"activeTrackIds":[9007199254740993]}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"items":[{"itemId":1},{"itemId":"2"}]}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"media":{"contentId":"\ud83c\udfb5","customData":{"a":"\ud800"}}}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"playerState":"PLAYING"}],}"#,
            #"{"type":"MEDIA_STATUS","status":[{"currentTime":1e-400}]}"#,
            #"{"type":"MEDIA_STATUS","playerState":"IDLE","media":{"contentId":"","metadata":{"title":"T"}}}"#,
            #"{"type":"MEDIA_STATUS","status":null,"playerState":"PLAYING","mediaSessionId":1}"#,
            #"{"type":"MEDIA_STATUS","playerState":7,"mediaSessionId":1}"#,
            #"{"type":"MEDIA_STATUS","playerState":"PLAYING","mediaSessionId":"x"}"#,
            #"{"responseType":"MEDIA_STATUS","status":[{"playerState":"PLAYING"}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"media":{"metadata":{"images":["http://img.jpg",{"url":"u","width":1}]}}}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"media":{"metadata":{"images":["a",7]}}}]}"#,
            #"{"type":"MEDIA_STATUS","status":[{"media":{"metadata":{"images":[{"url":5}]}}}]}"#,
        ] {
            agree(text)
        }
    }

    /// Images as plain URL strings (Pandora's receiver sends them so) are images with that URL.
    @Test func imagesAsPlainStrings() throws {
        let text = #"{"type":"MEDIA_STATUS","status":[{"playerState":"PLAYING","media":{"contentId":"c","metadata":{"#
            + #""metadataType":3,"title":"T","images":["http://img.jpg",{"url":"http://b.jpg","width":10,"height":20}]}}}]}"#
        guard case .status(_, let list) = try MediaResponse.parse(.string(text)) else {
            Issue.record("not a status")
            return
        }
        #expect(list.first?.media?.metadata?.images == [CastImage(url: "http://img.jpg"), CastImage(url: "http://b.jpg", width: 10, height: 20)])
        agree(text)
    }

    /// A MEDIA_STATUS with its fields at the top level (SiriusXM's receiver sent one: spec §6)
    /// is one status entry; `status` wins when it is there; a top level without a string
    /// `playerState` is no status.
    @Test func aTopLevelStatusIsOneEntry() throws {
        let text = #"{"type":"MEDIA_STATUS","mediaSessionId":0,"media":{"contentId":"","streamType":"NONE","contentType":"","#
            + #""metadata":{"metadataType":0,"title":"We Take Your Calls","images":[{"url":""}]}},"playbackRate":1,"#
            + #""playerState":"IDLE","currentTime":0,"supportedMediaCommands":0,"volume":{}}"#
        guard case .status(let requestId, let list) = try MediaResponse.parse(.string(text)) else {
            Issue.record("not a status")
            return
        }
        #expect(requestId == 0)
        #expect(list.count == 1)
        #expect(list.first?.playerState == "IDLE" && list.first?.media?.metadata?.title == "We Take Your Calls")
        agree(text)
        guard case .status(_, let listed) = try MediaResponse.parse(.string(
            #"{"type":"MEDIA_STATUS","status":[],"playerState":"PLAYING"}"#)) else { return }
        #expect(listed.isEmpty)
        guard case .status(_, let none) = try MediaResponse.parse(.string(#"{"type":"MEDIA_STATUS","playerState":3}"#)) else { return }
        #expect(none.isEmpty)
    }

    /// Random statuses: fields dropped, retyped and nested at random.
    @Test func randomStatusesAgree() {
        var rng = SystemRandomNumberGenerator()
        let kinds: [JSONValue] = [.null, .bool(false), .number(7), .number(0.5), .number(-1e300), .string("s"), .string("42"),
                                  .array([]), .array([.number(1)]), .object([:]), .object(["url": .string("u")])]
        guard let document = JSONValue.parse(Self.typical) else {
            Issue.record("the typical status does not parse")
            return
        }
        let mutator = JSONMutator(kinds: kinds, maxDepth: 8, fieldOdds: 12, appendOdds: 6, leafOdds: 10, unmutated: ["type"])
        for _ in 0..<3000 {
            agree(String(decoding: mutator.mutate(document, using: &rng).jsonBytes, as: UTF8.self))
        }
    }
}
