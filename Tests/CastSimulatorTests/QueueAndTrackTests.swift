import CastProtocol
import CastSimulator
import Testing
import TestSupport

/// The simulator's queue operations and tracks (issue #18): a queue listed by ids only until
/// asked, QUEUE_INSERT / REMOVE / REORDER / shuffle with their QUEUE_CHANGE, QUEUE_GET_ITEM_IDS and
/// QUEUE_GET_ITEMS, per-item autoplay and start time, EDIT_TRACKS_INFO by id and language.
@Suite("Queue and tracks")
struct QueueAndTrackTests {
    static func items(_ names: [String]) -> String {
        names.map { #"{"media":{"contentId":"http://x.invalid/\#($0).mp3","contentType":"audio/mpeg","duration":10,"metadata":{"title":"\#($0)"}}}"# }
            .joined(separator: ",")
    }

    /// The DMR with a queue of `names` (current: the first); returns (transport, mediaSessionId).
    static func queued(_ client: TestCastClient, _ names: [String]) async throws -> (String, Int) {
        let t = try await MediaTests.launched(client)
        let loaded = try await client.mediaRequest(t, requestId: 2, #"{"type":"QUEUE_LOAD","requestId":2,"items":[\#(items(names))]}"#)
        return (t, try #require(loaded.firstStatus?["mediaSessionId"]?.intValue))
    }

    static func ids(_ reply: JSONValue) -> [Int]? { reply.firstStatus?["items"]?.arrayValue?.compactMap { $0["itemId"]?.intValue } }

    @Test("the status lists items by id; QUEUE_GET_ITEM_IDS and QUEUE_GET_ITEMS describe them")
    func idsUntilAsked() async throws {
        try await withSimulator([testDevice("TV", clock: ManualSimulatorClock())]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let (t, id) = try await Self.queued(client, ["a", "b", "c"])
                let status = try await client.mediaRequest(t, requestId: 3, #"{"type":"GET_STATUS","requestId":3}"#)
                #expect(Self.ids(status) == [1, 2, 3])
                #expect(status.firstStatus?["items"]?.arrayValue?.allSatisfy { $0["media"] == nil } == true)
                let ids = try await client.mediaRequest(t, requestId: 4, #"{"type":"QUEUE_GET_ITEM_IDS","mediaSessionId":\#(id),"requestId":4}"#)
                #expect(ids["type"]?.stringValue == "QUEUE_ITEM_IDS")
                #expect(ids["itemIds"]?.arrayValue?.compactMap(\.intValue) == [1, 2, 3])
                let items = try await client.mediaRequest(t, requestId: 5, #"{"type":"QUEUE_GET_ITEMS","mediaSessionId":\#(id),"itemIds":[3,9,1],"requestId":5}"#)
                #expect(items["type"]?.stringValue == "QUEUE_ITEMS")
                #expect(items["items"]?.arrayValue?.compactMap { $0["media"]?["metadata"]?["title"]?.stringValue } == ["c", "a"], "unknown ids left out")
                let tooMany = (1...101).map(String.init).joined(separator: ",")
                let refused = try await client.mediaRequest(t, requestId: 6, #"{"type":"QUEUE_GET_ITEMS","mediaSessionId":\#(id),"itemIds":[\#(tooMany)],"requestId":6}"#)
                #expect(refused["type"]?.stringValue == "INVALID_REQUEST")
            }
        }
    }

    @Test("insert, remove, reorder and shuffle keep the current item playing and broadcast QUEUE_CHANGE")
    func edits() async throws {
        try await withSimulator([testDevice("TV", clock: ManualSimulatorClock())]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let (t, id) = try await Self.queued(client, ["a", "b", "c"])
                var r = try await client.mediaRequest(t, requestId: 10, #"{"type":"QUEUE_INSERT","mediaSessionId":\#(id),"insertBefore":2,"items":[\#(Self.items(["n"]))],"requestId":10}"#)
                #expect(Self.ids(r) == [1, 4, 2, 3])
                #expect(r.firstStatus?["currentItemId"]?.intValue == 1)
                let change = await client.waitFor(namespace: CastNamespace.media, type: "QUEUE_CHANGE") { $0["changeType"]?.stringValue == "INSERT" }
                #expect(change?["itemIds"]?.arrayValue?.compactMap(\.intValue) == [4])
                #expect(change?["insertBefore"]?.intValue == 2)
                // At the end; an item with an id, or an unknown insertBefore, is refused.
                r = try await client.mediaRequest(t, requestId: 11, #"{"type":"QUEUE_INSERT","mediaSessionId":\#(id),"items":[\#(Self.items(["z"]))],"requestId":11}"#)
                #expect(Self.ids(r) == [1, 4, 2, 3, 5])
                r = try await client.mediaRequest(t, requestId: 12, #"{"type":"QUEUE_INSERT","mediaSessionId":\#(id),"items":[{"itemId":9,"media":{"contentId":"x"}}],"requestId":12}"#)
                #expect(r["reason"]?.stringValue == "INVALID_PARAMS")
                r = try await client.mediaRequest(t, requestId: 13, #"{"type":"QUEUE_INSERT","mediaSessionId":\#(id),"insertBefore":77,"items":[\#(Self.items(["y"]))],"requestId":13}"#)
                #expect(r["reason"]?.stringValue == "INVALID_PARAMS")

                r = try await client.mediaRequest(t, requestId: 14, #"{"type":"QUEUE_REORDER","mediaSessionId":\#(id),"itemIds":[3,2],"insertBefore":1,"requestId":14}"#)
                #expect(Self.ids(r) == [3, 2, 1, 4, 5])
                #expect(r.firstStatus?["currentItemId"]?.intValue == 1)
                let update = await client.waitFor(namespace: CastNamespace.media, type: "QUEUE_CHANGE") { $0["changeType"]?.stringValue == "UPDATE" }
                #expect(update?["itemIds"]?.arrayValue?.compactMap(\.intValue) == [3, 2, 1, 4, 5])

                r = try await client.mediaRequest(t, requestId: 15, #"{"type":"QUEUE_REMOVE","mediaSessionId":\#(id),"itemIds":[2,4],"requestId":15}"#)
                #expect(Self.ids(r) == [3, 1, 5])
                r = try await client.mediaRequest(t, requestId: 16, #"{"type":"QUEUE_REMOVE","mediaSessionId":\#(id),"itemIds":[42],"requestId":16}"#)
                #expect(r["reason"]?.stringValue == "INVALID_PARAMS")
                // Removing the current item plays the next one.
                r = try await client.mediaRequest(t, requestId: 17, #"{"type":"QUEUE_REMOVE","mediaSessionId":\#(id),"itemIds":[1],"requestId":17}"#)
                #expect(r.firstStatus?["currentItemId"]?.intValue == 5)
                #expect(r.firstStatus?["media"]?["contentId"]?.stringValue == "http://x.invalid/z.mp3")

                r = try await client.mediaRequest(t, requestId: 18, #"{"type":"QUEUE_UPDATE","mediaSessionId":\#(id),"shuffle":true,"requestId":18}"#)
                #expect(Set(Self.ids(r) ?? []) == [3, 5])
                #expect(r.firstStatus?["currentItemId"]?.intValue == 5, "a shuffle does not interrupt")
                // Removing everything ends the session.
                r = try await client.mediaRequest(t, requestId: 19, #"{"type":"QUEUE_REMOVE","mediaSessionId":\#(id),"itemIds":[3,5],"requestId":19}"#)
                #expect(r.firstStatus?["playerState"]?.stringValue == "IDLE")
            }
        }
    }

    @Test("insert with currentItemIndex plays it; autoplay false waits paused; start time")
    func autoplayAndStart() async throws {
        let clock = ManualSimulatorClock()
        try await withSimulator([testDevice("TV", clock: clock)]) { sim in
            let device = sim.devices[0]
            try await withClosing(try await TestCastClient.connect(port: device.port, group: testGroup), close: { await $0.close() }) { client in
                let (t, id) = try await Self.queued(client, ["a"])
                let next = #"{"media":{"contentId":"http://x.invalid/b.mp3","duration":30},"autoplay":false,"startTime":5,"preloadTime":3}"#
                var r = try await client.mediaRequest(t, requestId: 3, #"{"type":"QUEUE_INSERT","mediaSessionId":\#(id),"items":[\#(next)],"requestId":3}"#)
                #expect(Self.ids(r) == [1, 2])
                try await device.advanceClock(by: 8)
                r = try await client.mediaRequest(t, requestId: 4, #"{"type":"GET_STATUS","requestId":4}"#)
                #expect(r.firstStatus?["preloadedItemId"]?.intValue == 2, "within the next item's preloadTime")
                try await device.advanceClock(by: 3)
                let waiting = await client.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS") {
                    $0.firstStatus?["currentItemId"]?.intValue == 2
                }
                #expect(waiting?.firstStatus?["playerState"]?.stringValue == "PAUSED")
                #expect(waiting?.firstStatus?["currentTime"]?.doubleValue == 5)
                let play = #"{"media":{"contentId":"http://x.invalid/c.mp3","duration":30}}"#
                r = try await client.mediaRequest(t, requestId: 5, #"{"type":"QUEUE_INSERT","mediaSessionId":\#(id),"items":[\#(play)],"currentItemIndex":0,"requestId":5}"#)
                #expect(r.firstStatus?["currentItemId"]?.intValue == 3)
                #expect(r.firstStatus?["playerState"]?.stringValue == "PLAYING")
            }
        }
    }

    @Test("EDIT_TRACKS_INFO by ids, by language, off, with a style; unknown ids and languages refused")
    func tracks() async throws {
        try await withSimulator([testDevice("TV", clock: ManualSimulatorClock())]) { sim in
            try await withClosing(try await TestCastClient.connect(port: sim.devices[0].port, group: testGroup), close: { await $0.close() }) { client in
                let t = try await MediaTests.launched(client)
                let tracks = #"[{"trackId":1,"type":"TEXT","subtype":"SUBTITLES","language":"en-US","trackContentId":"http://x/en.vtt"},{"trackId":2,"type":"TEXT","language":"de","trackContentId":"http://x/de.vtt"},{"trackId":3,"type":"AUDIO","language":"en"},{"trackId":4,"type":"AUDIO","language":"fr"}]"#
                let loaded = try await client.mediaRequest(t, requestId: 2, #"{"type":"LOAD","requestId":2,"activeTrackIds":[3],"media":{"contentId":"http://x/m.mp4","contentType":"video/mp4","tracks":\#(tracks)}}"#)
                let id = try #require(loaded.firstStatus?["mediaSessionId"]?.intValue)
                #expect(loaded.firstStatus?["activeTrackIds"]?.arrayValue?.compactMap(\.intValue) == [3])
                #expect(loaded.firstStatus?["media"]?["tracks"]?.arrayValue?.count == 4)
                func edit(_ n: Int, _ body: String) async throws -> JSONValue {
                    try await client.mediaRequest(t, requestId: n, #"{"type":"EDIT_TRACKS_INFO","mediaSessionId":\#(id),\#(body),"requestId":\#(n)}"#)
                }
                var r = try await edit(3, #""language":"en""#)
                #expect(r.firstStatus?["activeTrackIds"]?.arrayValue?.compactMap(\.intValue) == [3, 1])
                r = try await edit(4, #""activeTrackIds":[2,4]"#)
                #expect(r.firstStatus?["activeTrackIds"]?.arrayValue?.compactMap(\.intValue) == [2, 4])
                r = try await edit(5, #""enableTextTracks":false"#)
                #expect(r.firstStatus?["activeTrackIds"]?.arrayValue?.compactMap(\.intValue) == [4])
                r = try await edit(6, #""textTrackStyle":{"fontScale":1.5}"#)
                #expect(r.firstStatus?["media"]?["textTrackStyle"]?["fontScale"]?.doubleValue == 1.5)
                r = try await edit(7, #""activeTrackIds":[9]"#)
                #expect(r["reason"]?.stringValue == "INVALID_PARAMS")
                r = try await edit(8, #""language":"ja""#)
                #expect(r["reason"]?.stringValue == "LANGUAGE_NOT_SUPPORTED")
            }
        }
    }

    @Test("another sender plays in an app of its own (remoteLoad)")
    func remoteLoad() async throws {
        try await withSimulator([testDevice("TV")]) { sim in
            let device = sim.devices[0]
            let request: JSONValue = .object(["media": .object(["contentId": .string("spotify:track:1")])])
            #expect(await device.remoteLoad(appId: SimulatedAppID.music, request: request))
            let state = try await device.state()
            #expect(state.receiverStatus.applications.first?.displayName == "Sim Music")
            #expect(state.mediaStatus?.media?.contentId == "spotify:track:1")
            #expect(await !device.remoteLoad(appId: "NOPE", request: request))
        }
    }
}
