import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct EndToEndTransferTests {
    @Test func commandedTransferMovesPlayback() async throws {
        try await withBridge() { h in
            try await h.waitOnline(["living_room_tv", "kitchen"])
            _ = try await h.command("living_room_tv", "load", "http://127.0.0.1/media/long.mp3")
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state") { $0 == "playing" } != nil)
            _ = try await h.command("living_room_tv", "seek", "30")
            let r = try await h.command("living_room_tv", "transfer", "kitchen", timeout: .seconds(30))
            #expect(r.status == "ok", "\(r)")
            #expect(r["data"]?["to"]?.stringValue == "kitchen")
            let position = r["data"]?["position"]?.doubleValue ?? 0
            #expect(position >= 29 && position < 40, "\(r)")
            let load = try #require(h.devices[1].received(namespace: CastNamespace.media).last { $0.type == "LOAD" || $0.type == "RESUME_SESSION" })
            if load.type == "LOAD" {
                #expect(load.json?["media"]?["contentId"]?.stringValue == "http://127.0.0.1/media/long.mp3")
            }
            #expect(await h.observer.wait("cast2mqtt/kitchen/state") { $0 == "playing" } != nil)
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state") { $0 == "off" || $0 == "idle" } != nil)
        }
    }

    @Test func observedCloudTransferIsReported() async throws {
        try await withBridge() { h in
            try await h.waitOnline(["living_room_tv", "kitchen"])
            _ = try await h.command("living_room_tv", "load", "http://127.0.0.1/media/long.mp3")
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state") { $0 == "playing" } != nil)
            try await h.simulator.transfer(from: h.devices[0], to: h.devices[1])
            let event = await h.observer.waitJSON("cast2mqtt/bridge/event") { $0["type"]?.stringValue == "stream_transferred" }
            #expect(event?["from"]?.stringValue == "living_room_tv", "\(String(describing: event))")
            #expect(event?["to"]?.stringValue == "kitchen")
            #expect(event?["content_id"]?.stringValue == "http://127.0.0.1/media/long.mp3")
            #expect(await h.observer.wait("cast2mqtt/kitchen/state") { $0 == "playing" } != nil)
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state") { $0 == "off" || $0 == "idle" } != nil)
            #expect(h.observer.messages(on: "cast2mqtt/kitchen/event").contains {
                String(decoding: $0.payload, as: UTF8.self).contains("stream_transferred")
            })
        }
    }
}
