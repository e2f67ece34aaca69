import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct EndToEndAnnounceAndAdTests {
    @Test func adBreakIsShownAndSkipped() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            let r = try await h.jsonCommand("living_room_tv", "load", [
                "url": .string("http://127.0.0.1/media/show.mp4"),
                "breaks": .array([.object(["id": .string("b1"), "position": .number(0), "break_clip_ids": .array([.string("c1")])])]),
                "break_clips": .array([.object(["id": .string("c1"), "duration": .number(30), "when_skippable": .number(0)])]),
            ])
            #expect(r.status == "ok", "\(r)")
            let load = try #require(h.devices[0].received(namespace: CastNamespace.media, type: "LOAD").last?.json)
            #expect(load["media"]?["breaks"]?.arrayValue?.first?["breakClipIds"] != nil, "\(load)")
            let media = await h.observer.waitJSON("cast2mqtt/living_room_tv/media") { $0["break_status"]?.isNull == false }
            #expect(media?["break_status"]?["break_id"]?.stringValue == "b1", "\(String(describing: media))")
            #expect(media?["video_info"] != nil)
            let skip = try await h.command("living_room_tv", "skip_ad", "")
            #expect(skip.status == "ok", "\(skip)")
            #expect(h.devices[0].received(namespace: CastNamespace.media, type: "SKIP_AD").count == 1)
            #expect(await h.observer.waitJSON("cast2mqtt/living_room_tv/media") { $0["break_status"]?.isNull == true } != nil)
        }
    }

    @Test func announcePlaysAClipThenRestoresMediaAndVolume() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            let device = h.devices[0]
            _ = try await h.command("living_room_tv", "volume", "30")
            _ = try await h.command("living_room_tv", "load", "http://127.0.0.1/media/song.mp3")
            _ = try await h.command("living_room_tv", "seek", "50")
            let r = try await h.jsonCommand("living_room_tv", "announce", ["url": .string("http://127.0.0.1/media/doorbell.mp3"),
                                                                          "volume": .number(0.7)])
            #expect(r.status == "ok", "\(r)")
            let loads = device.received(namespace: CastNamespace.media, type: "LOAD").compactMap { $0.json?["media"]?["contentId"]?.stringValue }
            #expect(loads.last == "http://127.0.0.1/media/doorbell.mp3")
            let volumes = device.received(namespace: CastNamespace.receiver, type: "SET_VOLUME").compactMap { $0.json?["volume"]?["level"]?.doubleValue }
            #expect(volumes.last.map { abs($0 - 0.7) < 0.001 } == true, "\(volumes)")
            // The clip ends: the bridge restores the song at its position and the volume.
            _ = await device.finishMedia()
            #expect(await waitUntil {
                device.received(namespace: CastNamespace.media, type: "LOAD").last?.json?["media"]?["contentId"]?.stringValue
                    == "http://127.0.0.1/media/song.mp3"
            }, "previous media not restored; log:\n\(h.log.suffix(3000))")
            let restored = device.received(namespace: CastNamespace.media, type: "LOAD").last?.json
            #expect((restored?["currentTime"]?.doubleValue ?? 0) >= 49, "\(String(describing: restored))")
            #expect(await waitUntil {
                let levels = device.received(namespace: CastNamespace.receiver, type: "SET_VOLUME").compactMap { $0.json?["volume"]?["level"]?.doubleValue }
                return levels.last.map { abs($0 - 0.3) < 0.001 } ?? false
            })
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state") { $0 == "playing" } != nil)
        }
    }
    /// Issue #26: `announce` A, then B while A plays: B is answered once (`queued`) — not again
    /// when it plays — and the song comes back after the last clip.
    @Test func aQueuedAnnouncementIsAnsweredOnce() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            let device = h.devices[0]
            _ = try await h.command("living_room_tv", "load", "http://127.0.0.1/media/song.mp3")
            let a = try await h.jsonCommand("living_room_tv", "announce", ["url": .string("http://127.0.0.1/media/a.mp3")])
            #expect(a.status == "ok", "\(a)")
            let b = try await h.jsonCommand("living_room_tv", "announce", ["url": .string("http://127.0.0.1/media/b.mp3")])
            #expect(b["data"]?["queued"]?.intValue == 1, "\(b)")
            let bID = try #require(b["id"])
            // A ends: B plays; B ends: the song is restored (so B's LOAD was confirmed before).
            _ = await device.finishMedia()
            let playingB = await h.observer.waitJSON("cast2mqtt/living_room_tv/media", timeout: .seconds(30)) {
                $0["content_id"]?.stringValue == "http://127.0.0.1/media/b.mp3" && $0["state"]?.stringValue == "playing"
            }
            try #require(playingB != nil, "B did not play; log:\n\(h.log.suffix(3000))")
            _ = await device.finishMedia()
            #expect(await waitUntil {
                device.received(namespace: CastNamespace.media, type: "LOAD").last?.json?["media"]?["contentId"]?.stringValue
                    == "http://127.0.0.1/media/song.mp3"
            }, "the song was not restored; log:\n\(h.log.suffix(3000))")
            // Published after any answer to B on the bridge's one MQTT connection, so in order.
            let back = await h.observer.waitJSON("cast2mqtt/living_room_tv/media", timeout: .seconds(30)) {
                $0["content_id"]?.stringValue == "http://127.0.0.1/media/song.mp3"
            }
            #expect(back != nil, "the song's media was not published")
            let answersToB = h.observer.messages(on: "cast2mqtt/living_room_tv/response")
                .compactMap { JSONValue.parse($0.payload) }.filter { $0["id"] == bID }
            #expect(answersToB.count == 1, "answers to B: \(answersToB)")
        }
    }
}
