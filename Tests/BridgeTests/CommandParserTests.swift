import CastProtocol
import Foundation
import Testing
@testable import Bridge

@Suite struct CommandParserTests {
    let parser = CommandParser(maxPayload: 65_536, allowedNamespaces: ["urn:x-cast:*"])

    func ok(_ name: String, _ text: String) throws -> ParsedCommand {
        switch parser.parse(name: name, payload: Array(text.utf8)) {
        case .success(let c): return c
        case .failure(let f): Issue.record("\(name) \(text): \(f.error)"); throw f.error
        }
    }

    func code(_ name: String, _ bytes: [UInt8]) -> ErrorCode? {
        if case .failure(let f) = parser.parse(name: name, payload: bytes) { return f.error.code }
        return nil
    }

    func code(_ name: String, _ text: String) -> ErrorCode? { code(name, Array(text.utf8)) }

    @Test(arguments: ["play", "pause", "toggle", "stop", "next", "previous", "quit", "refresh", "skip_ad"])
    func noValueCommands(name: String) throws {
        let expected: [String: DeviceCommand] = ["play": .play, "pause": .pause, "toggle": .toggle, "stop": .stop, "next": .next,
                                                 "previous": .previous, "quit": .quit, "refresh": .refresh, "skip_ad": .skipAd]
        #expect(try ok(name, "").command == expected[name])
        #expect(try ok(name, "  \n").command == expected[name])
        #expect(try ok(name, "{}").command == expected[name])
        #expect(try ok(name, #"{"id": 7}"#).id == .number(7))
        #expect(code(name, "now") == .invalidPayload)
        #expect(code(name, #"{"bogus": 1}"#) == .invalidPayload)
    }

    @Test func idEcho() throws {
        #expect(try ok("play", #"{"id": "a1"}"#).id == .string("a1"))
        #expect(try ok("play", "").id == nil)
        #expect(code("play", #"{"id": [1]}"#) == .invalidPayload)
        #expect(code("play", #"{"id": true}"#) == .invalidPayload)
        // The id is echoed even when the rest of the command is bad.
        if case .failure(let f) = parser.parse(name: "rate", payload: Array(#"{"id": 9, "rate": 7}"#.utf8)) {
            #expect(f.id == .number(9))
            #expect(f.error.code == .invalidPayload)
        } else { Issue.record("expected failure") }
    }

    @Test func seekForms() throws {
        #expect(try ok("seek", "42").command == .seek(SeekCommand(target: .absolute(42), resumeState: nil)))
        #expect(try ok("seek", "42.5").command == .seek(SeekCommand(target: .absolute(42.5), resumeState: nil)))
        #expect(try ok("seek", "+10").command == .seek(SeekCommand(target: .relative(10), resumeState: nil)))
        #expect(try ok("seek", "-10").command == .seek(SeekCommand(target: .relative(-10), resumeState: nil)))
        #expect(try ok("seek", #"{"position": 90}"#).command == .seek(SeekCommand(target: .absolute(90), resumeState: nil)))
        #expect(try ok("seek", #"{"relative": -5, "resume": "pause"}"#).command
                == .seek(SeekCommand(target: .relative(-5), resumeState: "PLAYBACK_PAUSE")))
        #expect(try ok("seek", #"{"position": 1, "resume": "play"}"#).command
                == .seek(SeekCommand(target: .absolute(1), resumeState: "PLAYBACK_START")))
        for bad in ["", "abc", "1e3", "inf", "nan", "0x10", "--1", "1.2.3", "."] { #expect(code("seek", bad) == .invalidPayload, "\(bad)") }
        for bad in [#"{}"#, #"{"position": -1}"#, #"{"position": 1, "relative": 1}"#, #"{"position": "1"}"#,
                    #"{"relative": 1, "resume": "stop"}"#] {
            #expect(code("seek", bad) == .invalidPayload, "\(bad)")
        }
    }

    @Test func rateForms() throws {
        #expect(try ok("rate", "1.5").command == .rate(1.5))
        #expect(try ok("rate", "0.5").command == .rate(0.5))
        #expect(try ok("rate", "2").command == .rate(2))
        #expect(try ok("rate", #"{"rate": 0.75}"#).command == .rate(0.75))
        for bad in ["0.4", "2.1", "-1", "fast", ""] { #expect(code("rate", bad) == .invalidPayload, "\(bad)") }
        for bad in [#"{"rate": 3}"#, #"{"rate": "1"}"#, #"{}"#] { #expect(code("rate", bad) == .invalidPayload, "\(bad)") }
    }

    @Test func volumeForms() throws {
        #expect(try ok("volume", "40").command == .volume(.level(0.4)))
        #expect(try ok("volume", "0").command == .volume(.level(0)))
        #expect(try ok("volume", "100").command == .volume(.level(1)))
        #expect(try ok("volume", "+5").command == .volume(.relativePercent(5)))
        #expect(try ok("volume", "-5").command == .volume(.relativePercent(-5)))
        #expect(try ok("volume", #"{"level": 0.4}"#).command == .volume(.level(0.4)))
        #expect(try ok("volume", #"{"percent": 40}"#).command == .volume(.level(0.4)))
        for bad in ["101", "-101", "loud", "", "40%"] { #expect(code("volume", bad) == .invalidPayload, "\(bad)") }
        for bad in [#"{"level": 1.5}"#, #"{"level": -0.1}"#, #"{"percent": 140}"#, #"{"level": 0.1, "percent": 10}"#,
                    #"{"level": "0.4"}"#, #"{}"#] {
            #expect(code("volume", bad) == .invalidPayload, "\(bad)")
        }
    }

    @Test func muteForms() throws {
        for word in ["true", "on", "1", "ON", "True"] { #expect(try ok("mute", word).command == .mute(.set(true))) }
        for word in ["false", "off", "0", "OFF"] { #expect(try ok("mute", word).command == .mute(.set(false))) }
        #expect(try ok("mute", "toggle").command == .mute(.toggle))
        #expect(try ok("mute", #"{"muted": true}"#).command == .mute(.set(true)))
        #expect(try ok("mute", #"{"muted": false}"#).command == .mute(.set(false)))
        for bad in ["", "yes please", "2"] { #expect(code("mute", bad) == .invalidPayload, "\(bad)") }
        for bad in [#"{"muted": "true"}"#, #"{"muted": 1}"#, #"{}"#] { #expect(code("mute", bad) == .invalidPayload, "\(bad)") }
    }

    @Test func launchForms() throws {
        #expect(try ok("launch", "CC1AD845").command == .launch(appId: "CC1AD845"))
        #expect(try ok("launch", #"{"app_id": "233637DE"}"#).command == .launch(appId: "233637DE"))
        for bad in ["", "bad id", "a/b", String(repeating: "A", count: 65)] { #expect(code("launch", bad) == .invalidPayload, "\(bad)") }
        #expect(code("launch", #"{"app_id": 5}"#) == .invalidPayload)
    }

    @Test func loadShortForm() throws {
        let c = try ok("load", "http://192.0.2.5/song.mp3")
        guard case .load(let load) = c.command, let request = load.load else { Issue.record("not a load"); return }
        #expect(load.appId == "CC1AD845")
        #expect(request.media.contentId == "http://192.0.2.5/song.mp3")
        #expect(request.media.contentType == "audio/mpeg")
        #expect(request.media.streamType == "BUFFERED")
        #expect(request.autoplay)
        #expect(code("load", "") == .invalidPayload)
        #expect(code("load", "http://a b") == .invalidPayload)
    }

    @Test func contentTypeGuess() {
        #expect(MediaBuilder.guessContentType("http://x/a.mp4?x=1") == "video/mp4")
        #expect(MediaBuilder.guessContentType("http://x/live.m3u8") == "application/x-mpegURL")
        #expect(MediaBuilder.guessContentType("http://x/a.FLAC#t") == "audio/flac")
        #expect(MediaBuilder.guessContentType("http://x/pic.jpg") == "image/jpeg")
        #expect(MediaBuilder.guessContentType("http://x/stream") == "video/mp4")
    }

    @Test func loadJSONForm() throws {
        let text = #"""
        {"id": "a1", "url": "http://192.0.2.5/movie", "content_type": "video/webm", "stream_type": "live", "title": "T",
         "subtitle": "S", "artist": "A", "album": "B", "images": ["http://192.0.2.5/i.png"], "metadata_type": "movie",
         "autoplay": false, "position": 12, "rate": 1.25, "custom_data": {"k": 1}, "app_id": "ABCDEF12", "repeat": "all",
         "breaks": [{"id": "b1", "break_clip_ids": ["c1"], "position": 0}], "break_clips": [{"id": "c1", "content_id": "http://x/ad.mp4", "when_skippable": 5}]}
        """#
        let c = try ok("load", text)
        #expect(c.id == .string("a1"))
        guard case .load(let load) = c.command, let r = load.load else { Issue.record("not a load"); return }
        #expect(load.appId == "ABCDEF12")
        #expect(r.media.contentType == "video/webm")
        #expect(r.media.streamType == "LIVE")
        #expect(r.media.metadata?.metadataType == 1)
        #expect(r.media.metadata?.title == "T")
        #expect(r.media.metadata?.albumName == "B")
        #expect(r.media.metadata?.images == [CastImage(url: "http://192.0.2.5/i.png")])
        #expect(r.media.customData == .object(["k": .number(1)]))
        #expect(r.autoplay == false)
        #expect(r.currentTime == 12)
        #expect(r.playbackRate == 1.25)
        #expect(r.queueData == .object(["repeatMode": .string("REPEAT_ALL")]))
        #expect(r.media.breaks?.arrayValue?.first?["breakClipIds"] == .array([.string("c1")]))
        #expect(r.media.breakClips?.arrayValue?.first?["whenSkippable"] == .number(5))
        #expect(r.media.breakClips?.arrayValue?.first?["contentId"] == .string("http://x/ad.mp4"))
    }

    @Test func loadQueueForm() throws {
        let c = try ok("load", #"{"queue": [{"url": "http://x/1.mp3", "title": "One"}, {"url": "http://x/2.mp3"}], "repeat": "one", "position": 3}"#)
        guard case .load(let load) = c.command, let q = load.queue else { Issue.record("not a queue"); return }
        #expect(q.items.count == 2)
        #expect(q.items[0].media?.contentId == "http://x/1.mp3")
        #expect(q.items[0].media?.metadata?.title == "One")
        #expect(q.items[0].itemId == nil)
        #expect(q.repeatMode == "REPEAT_SINGLE")
        #expect(q.currentTime == 3)
    }

    @Test func loadBadInputs() {
        for bad in [#"{}"#, #"{"url": 5}"#, #"{"url": "http://x", "stream_type": "fast"}"#, #"{"url": "http://x", "rate": 9}"#,
                    #"{"url": "http://x", "metadata_type": "song"}"#, #"{"url": "http://x", "position": -3}"#,
                    #"{"url": "http://x", "autoplay": "yes"}"#, #"{"url": "http://x", "images": "http://i"}"#,
                    #"{"queue": []}"#, #"{"queue": [{"title": "no url"}]}"#, #"{"queue": [1]}"#,
                    #"{"url": "http://x", "queue": [{"url": "http://y"}]}"#, #"{"url": "http://x", "repeat": "twice"}"#,
                    #"{"url": "http://x", "breaks": {"a": 1}}"#, #"{"url": "http://x", "colour": "red"}"#,
                    #"{"url": "http://x", "app_id": "not valid!"}"#] {
            #expect(code("load", bad) == .invalidPayload, "\(bad)")
        }
    }

    @Test func loadTooLargeForCast() {
        let big = String(repeating: "x", count: 60_000)
        let text = #"{"url": "http://x/a.mp3", "custom_data": {"blob": "\#(big)"}, "title": "\#(String(repeating: "t", count: 8000))"}"#
        #expect(code("load", text) == .payloadTooLarge)
    }

    @Test func sendJSONForm() throws {
        let c = try ok("send", #"{"namespace": "urn:x-cast:com.example.app", "data": {"b": 1, "a": "x"}, "reply": true, "timeout": 3, "app_id": "ABCD1234"}"#)
        guard case .send(let s) = c.command else { Issue.record("not send"); return }
        #expect(s.namespace == "urn:x-cast:com.example.app")
        #expect(s.payload == .string(#"{"a":"x","b":1}"#))
        #expect(s.awaitReply)
        #expect(s.timeout == 3)
        #expect(s.appId == "ABCD1234")
        let plain = try ok("send", #"{"namespace": "urn:x-cast:com.example.app", "data": "hello"}"#)
        guard case .send(let s2) = plain.command else { return }
        #expect(s2.payload == .string("hello"))
        #expect(s2.awaitReply == false)
        #expect(code("send", "hello") == .invalidPayload)
        #expect(code("send", #"{"namespace": "urn:x-cast:com.example.app"}"#) == .invalidPayload)
        #expect(code("send", #"{"namespace": "urn:x-cast:com.example.app", "data": 1, "timeout": 0}"#) == .invalidPayload)
        #expect(code("send", #"{"namespace": "urn:x-cast:com.google.cast.tp.heartbeat", "data": 1}"#) == .namespaceNotAllowed)
    }

    @Test func sendTopicForm() {
        let r = parser.parseSend(namespace: "urn:x-cast:com.example.app", payload: Array("ping".utf8))
        guard case .success(let c) = r, case .send(let s) = c.command else { Issue.record("expected success"); return }
        #expect(s.payload == .string("ping"))
        let binary = parser.parseSend(namespace: "urn:x-cast:com.example.app", payload: [0xff, 0x00, 0x01])
        guard case .success(let b) = binary, case .send(let sb) = b.command else { Issue.record("expected success"); return }
        #expect(sb.payload == .binary([0xff, 0x00, 0x01]))
    }

    func sendCode(_ ns: String, _ payload: [UInt8] = Array("x".utf8), parser p: CommandParser? = nil) -> ErrorCode? {
        if case .failure(let f) = (p ?? parser).parseSend(namespace: ns, payload: payload) { return f.error.code }
        return nil
    }

    @Test func namespaceRules() {
        #expect(sendCode("com.example.app") == .invalidPayload)
        #expect(sendCode("urn:x-cast:") == .invalidPayload)
        #expect(sendCode("urn:x-cast:with space") == .invalidPayload)
        #expect(sendCode("urn:x-cast:com.google.cast.tp.connection") == .namespaceNotAllowed)
        #expect(sendCode("urn:x-cast:com.google.cast.tp.deviceauth") == .namespaceNotAllowed)
        #expect(sendCode("urn:x-cast:com.google.cast.receiver") == .namespaceNotAllowed)
        #expect(sendCode("urn:x-cast:com.google.cast.media") == .namespaceNotAllowed)
        #expect(sendCode("urn:x-cast:com.google.cast.cac") == nil)
        #expect(sendCode("urn:x-cast:com.example.app/sub") == nil)
        #expect(sendCode("urn:x-cast:com.example.app", []) == .invalidPayload)
        let strict = CommandParser(maxPayload: 1000, allowedNamespaces: ["urn:x-cast:com.example.*"])
        #expect(sendCode("urn:x-cast:com.example.app", parser: strict) == nil)
        #expect(sendCode("urn:x-cast:org.other.app", parser: strict) == .namespaceNotAllowed)
        // Reserved even when a pattern would allow it.
        let loose = CommandParser(maxPayload: 1000, allowedNamespaces: ["urn:x-cast:*", "urn:x-cast:com.google.cast.tp.*"])
        #expect(sendCode("urn:x-cast:com.google.cast.tp.heartbeat", parser: loose) == .namespaceNotAllowed)
        #expect(sendCode("urn:x-cast:com.example.app", Array(repeating: 0x41, count: 1001), parser: strict) == .payloadTooLarge)
        #expect(sendCode("urn:x-cast:com.example.app", Array(repeating: 0x41, count: 65_400)) == .payloadTooLarge)
    }

    @Test func transferForms() throws {
        #expect(try ok("transfer", "kitchen").command == .transfer(to: "kitchen", keepSource: false))
        #expect(try ok("transfer", #"{"to": "kitchen", "keep_source": true}"#).command == .transfer(to: "kitchen", keepSource: true))
        #expect(code("transfer", "") == .invalidPayload)
        #expect(code("transfer", #"{"keep_source": true}"#) == .invalidPayload)
        #expect(code("transfer", #"{"to": "k", "keep_source": "yes"}"#) == .invalidPayload)
    }

    @Test func announceForms() throws {
        #expect(try ok("announce", "http://x/ding.mp3").command
                == .announce(AnnounceCommand(url: "http://x/ding.mp3", volume: nil, contentType: nil, title: nil, wait: false)))
        #expect(try ok("announce", #"{"url": "http://x/d.mp3", "volume": 0.6, "title": "Door"}"#).command
                == .announce(AnnounceCommand(url: "http://x/d.mp3", volume: 0.6, contentType: nil, title: "Door", wait: false)))
        #expect(code("announce", #"{"url": "http://x/d.mp3", "volume": 2}"#) == .invalidPayload)
        #expect(code("announce", #"{"volume": 0.5}"#) == .invalidPayload)
        #expect(code("announce", "") == .invalidPayload)
    }

    @Test func generalBadInput() {
        #expect(code("play", [0xC3, 0x28]) == .invalidPayload)  // invalid UTF-8
        #expect(code("play", "{not json") == .invalidPayload)
        #expect(code("volume", #"{"level": 0.4"#) == .invalidPayload)
        #expect(code("dance", "") == .unknownCommand)
        #expect(code("dance", #"{"id": 1}"#) == .unknownCommand)
        let small = CommandParser(maxPayload: 256, allowedNamespaces: ["urn:x-cast:*"])
        if case .failure(let f) = small.parse(name: "load", payload: Array(repeating: 0x61, count: 257)) {
            #expect(f.error.code == .payloadTooLarge)
        } else { Issue.record("expected payload_too_large") }
    }

    @Test func bridgeRequests() {
        func parse(_ name: String, _ text: String) -> Result<(BridgeRequest, JSONValue?), ParseFailure> {
            parser.parseBridgeRequest(name: name, payload: Array(text.utf8))
        }
        if case .success(let (r, id)) = parse("devices", #"{"id": 3}"#) { #expect(r == .devices); #expect(id == .number(3)) } else { Issue.record("devices") }
        if case .success(let (r, _)) = parse("health_check", "") { #expect(r == .healthCheck) } else { Issue.record("health") }
        if case .success(let (r, _)) = parse("refresh", "{}") { #expect(r == .refresh) } else { Issue.record("refresh") }
        if case .success(let (r, _)) = parse("transfer", #"{"from": "a", "to": "b"}"#) {
            #expect(r == .transfer(from: "a", to: "b", keepSource: false))
        } else { Issue.record("transfer") }
        if case .failure(let f) = parse("transfer", "a b") { #expect(f.error.code == .invalidPayload) } else { Issue.record("transfer short") }
        if case .failure(let f) = parse("reboot", "") { #expect(f.error.code == .unknownCommand) } else { Issue.record("unknown") }
    }

    /// The byte-level trim gives what Foundation's `.whitespacesAndNewlines` trim gives.
    @Test func trimmingAgreesWithFoundation() {
        let pieces = [" ", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{2028}", "\u{3000}", "\u{1680}",
                      "a", "{", "}", "é", "🎵", "\u{0}", "\u{1F}", "\u{200B}", "\u{FEFF}", "50"]
        var rng = SystemRandomNumberGenerator()
        var cases = ["", " ", "  50  ", "\t{\"a\":1}\n", "\u{A0}50", "50\u{2028}", "\u{85}\u{85}", " é ", "\u{3000}x\u{3000}"]
        for _ in 0..<5000 {
            cases.append((0..<Int.random(in: 0...6, using: &rng)).map { _ in pieces.randomElement(using: &rng) ?? "" }.joined())
        }
        for text in cases {
            #expect(CommandParser.trimmed(text) == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(Array(text.unicodeScalars))")
        }
        if case .success(let c) = parser.parse(name: "volume", payload: Array(" \n 40 \t".utf8)) {
            #expect(c.command == .volume(.level(0.4)))
        } else {
            Issue.record("a short form with white space around it")
        }
    }
}
