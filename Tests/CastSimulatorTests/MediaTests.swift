import CastProtocol
import CastSimulator
import Testing
import TestSupport

@Suite("Media receiver")
struct MediaTests {
    static let load = #"{"type":"LOAD","requestId":10,"autoplay":true,"media":{"contentId":"http://example.invalid/movie.mp4","contentType":"video/mp4","streamType":"BUFFERED","duration":100,"metadata":{"metadataType":1,"title":"Movie"}},"customData":{"k":"v"}}"#

    /// Launches the Default Media Receiver and connects to it; returns its transportId.
    static func launched(_ client: TestCastClient) async throws -> String {
        let app = try await client.launch("CC1AD845", requestId: 1)
        let transport = try #require(app["transportId"]?.stringValue)
        try await client.connect(to: transport)
        return transport
    }

    /// Launches the DMR, connects to it and loads `Self.load`; returns (transportId, mediaSessionId).
    static func loaded(_ client: TestCastClient) async throws -> (String, Int) {
        let transport = try await launched(client)
        let reply = try await client.mediaRequest(transport, requestId: 10, load)
        let id = try #require(reply.firstStatus?["mediaSessionId"]?.intValue)
        return (transport, id)
    }

    @Test("LOAD plays; position follows the manual clock and the rate; FINISHED at the end")
    func loadPlayAndFinish() async throws {
        let clock = ManualSimulatorClock()
        try await withSimulator([testDevice("TV", clock: clock)]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let t = try await Self.launched(client)
                let loaded = try await client.mediaRequest(t, requestId: 10, Self.load)
                let status = try #require(loaded.firstStatus)
                #expect(loaded["type"]?.stringValue == "MEDIA_STATUS")
                #expect(status["playerState"]?.stringValue == "PLAYING")
                #expect(status["media"]?["contentId"]?.stringValue == "http://example.invalid/movie.mp4")
                #expect(status["media"]?["metadata"]?["title"]?.stringValue == "Movie")
                #expect(status["supportedMediaCommands"]?.intValue == SimulatedDeviceConfiguration.defaultSupportedMediaCommands)
                #expect(status["videoInfo"]?["width"]?.intValue == 1920)
                #expect(status["volume"]?["level"]?.doubleValue == 1)
                #expect(device.counters.loads == 1)
                let id = try #require(status["mediaSessionId"]?.intValue)

                try await device.advanceClock(by: 10)
                var s = try await client.mediaRequest(t, requestId: 11, #"{"type":"GET_STATUS","requestId":11}"#)
                #expect(s.firstStatus?["currentTime"]?.doubleValue == 10)

                s = try await client.mediaRequest(t, requestId: 12, #"{"type":"SET_PLAYBACK_RATE","playbackRate":2,"mediaSessionId":\#(id),"requestId":12}"#)
                #expect(s.firstStatus?["playbackRate"]?.doubleValue == 2)
                try await device.advanceClock(by: 5)
                s = try await client.mediaRequest(t, requestId: 13, #"{"type":"PAUSE","mediaSessionId":\#(id),"requestId":13}"#)
                #expect(s.firstStatus?["playerState"]?.stringValue == "PAUSED")
                #expect(s.firstStatus?["currentTime"]?.doubleValue == 20)
                try await device.advanceClock(by: 30)
                s = try await client.mediaRequest(t, requestId: 14, #"{"type":"SEEK","currentTime":50,"mediaSessionId":\#(id),"requestId":14}"#)
                #expect(s.firstStatus?["currentTime"]?.doubleValue == 50)
                #expect(s.firstStatus?["playerState"]?.stringValue == "PAUSED")
                s = try await client.mediaRequest(t, requestId: 15, #"{"type":"SEEK","relativeTime":-10,"resumeState":"PLAYBACK_START","mediaSessionId":\#(id),"requestId":15}"#)
                #expect(s.firstStatus?["currentTime"]?.doubleValue == 40)
                #expect(s.firstStatus?["playerState"]?.stringValue == "PLAYING")
                s = try await client.mediaRequest(t, requestId: 16, #"{"type":"PLAY","mediaSessionId":\#(id),"requestId":16}"#)
                #expect(s.firstStatus?["playerState"]?.stringValue == "PLAYING")
                // Replies are followed by broadcasts with requestId 0.
                let broadcast = await client.waitFor { m in
                    m.destinationID == "*" && m.json?["type"]?.stringValue == "MEDIA_STATUS"
                        && m.json?.firstStatus?["playerState"]?.stringValue == "PAUSED"
                }
                #expect(broadcast?.json?["requestId"]?.intValue == 0)

                try await device.advanceClock(by: 31)  // 40 + 2 * 31 > 100
                let finished = try #require(await client.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS") {
                    $0.firstStatus?["idleReason"]?.stringValue == "FINISHED"
                })
                #expect(finished.firstStatus?["playerState"]?.stringValue == "IDLE")
                #expect(finished["requestId"]?.intValue == 0)
                // The session is over: commands now fail with INVALID_PLAYER_STATE.
                let after = try await client.mediaRequest(t, requestId: 17, #"{"type":"PLAY","mediaSessionId":\#(id),"requestId":17}"#)
                #expect(after["type"]?.stringValue == "INVALID_PLAYER_STATE")
            }
        }
    }

    @Test("a URL containing 'fail' answers LOAD_FAILED with itemId and detailedErrorCode")
    func loadFailed() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let t = try await Self.launched(client)
                let reply = try await client.mediaRequest(t, requestId: 2, #"{"type":"LOAD","requestId":2,"media":{"contentId":"http://x.invalid/fail-301.mp3","contentType":"audio/mp3"}}"#)
                #expect(reply["type"]?.stringValue == "LOAD_FAILED")
                #expect(reply["itemId"]?.intValue == 1)
                #expect(reply["detailedErrorCode"]?.intValue == 301)
                let reply2 = try await client.mediaRequest(t, requestId: 3, #"{"type":"LOAD","requestId":3,"media":{"contentId":"http://x.invalid/FAIL.mp3"}}"#)
                #expect(reply2["detailedErrorCode"]?.intValue == 104)
            }
        }
    }

    @Test("commands without media are INVALID_PLAYER_STATE; a wrong mediaSessionId is INVALID_MEDIA_SESSION_ID")
    func stateErrors() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let t = try await Self.launched(client)
                for (n, type) in ["PLAY", "PAUSE", "SEEK", "STOP", "SET_PLAYBACK_RATE", "QUEUE_NEXT"].enumerated() {
                    let r = try await client.mediaRequest(t, requestId: 100 + n, #"{"type":"\#(type)","mediaSessionId":1,"requestId":\#(100 + n)}"#)
                    #expect(r["type"]?.stringValue == "INVALID_PLAYER_STATE", "\(type)")
                }
                let loaded = try await client.mediaRequest(t, requestId: 10, Self.load)
                let id = try #require(loaded.firstStatus?["mediaSessionId"]?.intValue)
                let wrong = try await client.mediaRequest(t, requestId: 11, #"{"type":"PAUSE","mediaSessionId":\#(id + 5),"requestId":11}"#)
                #expect(wrong["type"]?.stringValue == "INVALID_REQUEST")
                #expect(wrong["reason"]?.stringValue == "INVALID_MEDIA_SESSION_ID")
                let unknown = try await client.mediaRequest(t, requestId: 12, #"{"type":"WIBBLE","mediaSessionId":\#(id),"requestId":12}"#)
                #expect(unknown["reason"]?.stringValue == "INVALID_COMMAND")
                let stop = try await client.mediaRequest(t, requestId: 13, #"{"type":"STOP","mediaSessionId":\#(id),"requestId":13}"#)
                #expect(stop.firstStatus?["playerState"]?.stringValue == "IDLE")
                #expect(stop.firstStatus?["idleReason"]?.stringValue == "CANCELLED")
            }
        }
    }

    @Test("QUEUE_LOAD assigns itemIds from 1; jumps, END_OF_QUEUE, auto-advance")
    func queue() async throws {
        let clock = ManualSimulatorClock()
        try await withSimulator([testDevice("TV", clock: clock)]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let t = try await Self.launched(client)
                let items = (1...3).map { #"{"media":{"contentId":"http://x.invalid/\#($0).mp3","contentType":"audio/mp3","duration":10}}"# }
                let loaded = try await client.mediaRequest(t, requestId: 2, #"{"type":"QUEUE_LOAD","requestId":2,"startIndex":1,"repeatMode":"REPEAT_OFF","items":[\#(items.joined(separator: ","))]}"#)
                let s = try #require(loaded.firstStatus)
                #expect(s["items"]?.arrayValue?.compactMap { $0["itemId"]?.intValue } == [1, 2, 3])
                #expect(s["currentItemId"]?.intValue == 2)
                #expect(s["repeatMode"]?.stringValue == "REPEAT_OFF")
                #expect(s["videoInfo"] == nil)
                let id = try #require(s["mediaSessionId"]?.intValue)
                let jumped = try await client.mediaRequest(t, requestId: 3, #"{"type":"QUEUE_UPDATE","jump":1,"mediaSessionId":\#(id),"requestId":3}"#)
                #expect(jumped.firstStatus?["currentItemId"]?.intValue == 3)
                let end = try await client.mediaRequest(t, requestId: 4, #"{"type":"QUEUE_NEXT","mediaSessionId":\#(id),"requestId":4}"#)
                #expect(end["reason"]?.stringValue == "END_OF_QUEUE")
                let prev = try await client.mediaRequest(t, requestId: 5, #"{"type":"QUEUE_PREV","mediaSessionId":\#(id),"requestId":5}"#)
                #expect(prev.firstStatus?["currentItemId"]?.intValue == 2)
                try await device.advanceClock(by: 10.5)
                let advanced = await client.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS") {
                    $0["requestId"]?.intValue == 0 && $0.firstStatus?["currentItemId"]?.intValue == 3
                        && $0.firstStatus?["playerState"]?.stringValue == "PLAYING"
                }
                #expect(advanced != nil)
            }
        }
    }

    @Test("STORE_SESSION returns a loadRequestData snapshot that RESUME_SESSION loads")
    func storeAndResume() async throws {
        let clock = ManualSimulatorClock()
        try await withSimulator([testDevice("TV", clock: clock)]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let (t, id) = try await Self.loaded(client)
                try await device.advanceClock(by: 12)
                let state = try await client.mediaRequest(t, requestId: 20, #"{"type":"STORE_SESSION","mediaSessionId":\#(id),"requestId":20}"#)
                #expect(state["type"]?.stringValue == "SESSION_STATE")
                let data = try #require(state["sessionState"]?["loadRequestData"])
                #expect(data["currentTime"]?.doubleValue == 12)
                #expect(data["media"]?["contentId"]?.stringValue == "http://example.invalid/movie.mp4")
                #expect(data["customData"]?["k"]?.stringValue == "v")
                let text = try CastJSON.encode(JSONValue.object(["type": .string("RESUME_SESSION"), "requestId": .number(21),
                                                                 "sessionState": try #require(state["sessionState"])]))
                let resumed = try await client.mediaRequest(t, requestId: 21, text)
                #expect(resumed.firstStatus?["currentTime"]?.doubleValue == 12)
                #expect(resumed.firstStatus?["playerState"]?.stringValue == "PLAYING")
                #expect(resumed.firstStatus?["mediaSessionId"]?.intValue != id)
            }
        }
    }

    @Test("media with a position-0 break plays the ad first; SKIP_AD ends it")
    func adBreak() async throws {
        try await withSimulator([testDevice("TV", clock: ManualSimulatorClock())]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let t = try await Self.launched(client)
                let load = #"{"type":"LOAD","requestId":2,"media":{"contentId":"http://x.invalid/v.mp4","contentType":"video/mp4","duration":60,"breaks":[{"id":"b1","position":0,"breakClipIds":["c1"]}],"breakClips":[{"id":"c1","duration":15,"whenSkippable":5}]}}"#
                let loaded = try await client.mediaRequest(t, requestId: 2, load)
                let s = try #require(loaded.firstStatus)
                #expect(s["breakStatus"]?["breakId"]?.stringValue == "b1")
                #expect(s["breakStatus"]?["breakClipId"]?.stringValue == "c1")
                #expect(s["media"]?["breaks"]?.arrayValue?.count == 1)
                let id = try #require(s["mediaSessionId"]?.intValue)
                try await sim.devices[0].advanceClock(by: 4)
                let during = try await client.mediaRequest(t, requestId: 3, #"{"type":"GET_STATUS","requestId":3}"#)
                #expect(during.firstStatus?["breakStatus"]?["currentBreakClipTime"]?.doubleValue == 4)
                #expect(during.firstStatus?["currentTime"]?.doubleValue == 0)
                let skipped = try await client.mediaRequest(t, requestId: 4, #"{"type":"SKIP_AD","mediaSessionId":\#(id),"requestId":4}"#)
                #expect(skipped.firstStatus?["breakStatus"] == nil)
                try await sim.devices[0].advanceClock(by: 3)
                let after = try await client.mediaRequest(t, requestId: 5, #"{"type":"GET_STATUS","requestId":5}"#)
                #expect(after.firstStatus?["currentTime"]?.doubleValue == 3)
            }
        }
    }
}
