import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

private let tv = "living_room_tv"
private let kitchen = "kitchen"

extension BridgeHarness {
    /// The newest media document of `device` once it satisfies `predicate`.
    func media(_ device: String, timeout: Duration = .seconds(15), _ predicate: @escaping (JSONValue) -> Bool) async -> JSONValue? {
        await observer.waitJSON(topic(device, "media"), timeout: timeout, predicate)
    }

    /// The content ids of `device`'s queue as published.
    func queueContent(_ media: JSONValue?) -> [String?] {
        media?["queue"]?["items"]?.arrayValue?.map { $0["content_id"]?.stringValue } ?? []
    }

    /// A bridge request; returns its response.
    func bridgeRequest(_ name: String, _ payload: String) async throws -> JSONValue {
        let responseTopic = "cast2mqtt/bridge/response/\(name)"
        let before = observer.messages(on: responseTopic).count
        try client.publish(MQTTMessage(topic: "cast2mqtt/bridge/request/\(name)", payload: Array(payload.utf8), qos: .atLeastOnce))
        let arrived = await waitUntil { self.observer.messages(on: responseTopic).count > before }
        try #require(arrived, "no response to \(name); daemon log:\n\(log.suffix(3000))")
        return try CastJSON.decode(JSONValue.self, from: observer.messages(on: responseTopic)[before].payload)
    }
}

/// Issue #18 end to end: the daemon, mosquitto and simulated devices; every `tracks` and `queue`
/// operation and error, the queue's metadata fetched from a device that lists it by ids, an app
/// the bridge did not launch, and logs by component with one device's traffic traced.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndTracksAndQueueTests {
    static let movie = """
    {"url": "http://127.0.0.1/media/movie.mp4", "title": "Movie",
     "tracks": [{"id": 1, "type": "text", "language": "en", "name": "English", "content_id": "http://127.0.0.1/media/en.vtt"},
                {"id": 2, "type": "text", "language": "de", "content_id": "http://127.0.0.1/media/de.vtt"},
                {"id": 3, "type": "audio", "language": "en"}, {"id": 4, "type": "audio", "language": "fr"}],
     "active_tracks": [3]}
    """

    @Test func tracksEveryOperationAndError() async throws {
        try await withBridge(supportedMediaCommands: ["Kitchen": MediaCommands([.pause, .seek]).rawValue]) { h in
            try await h.waitOnline([tv, kitchen])
            let device = h.devices[0]
            var r = try await h.command(tv, "load", Self.movie)
            #expect(r.status == "ok", "\(r)")
            let load = try #require(device.received(namespace: CastNamespace.media, type: "LOAD").last?.json)
            #expect(load["activeTrackIds"] == .array([.number(3)]))
            #expect(load["media"]?["tracks"]?.arrayValue?.first?["trackContentType"] == .string("text/vtt"))
            let listed = await h.media(tv) { $0["tracks"]?.arrayValue?.count == 4 }
            #expect(listed?["active_tracks"] == .array([.number(3)]))
            #expect(listed?["tracks"]?.arrayValue?.first == .object(["id": .number(1), "type": .string("text"), "subtype": .string("subtitles"),
                                                                    "language": .string("en"), "name": .string("English"),
                                                                    "content_id": .string("http://127.0.0.1/media/en.vtt")]))

            r = try await h.command(tv, "tracks", "en")
            #expect(r.status == "ok", "\(r)")
            #expect(r["data"]?["active_tracks"] == .array([.number(3), .number(1)]))
            #expect(device.received(namespace: CastNamespace.media, type: "EDIT_TRACKS_INFO").last?.json?["activeTrackIds"]
                    == .array([.number(3), .number(1)]))
            #expect(await h.media(tv) { $0["active_tracks"] == .array([.number(3), .number(1)]) } != nil)
            r = try await h.jsonCommand(tv, "tracks", ["audio": .string("fr")])
            #expect(r["data"]?["active_tracks"] == .array([.number(1), .number(4)]))
            r = try await h.command(tv, "tracks", "off")
            #expect(r["data"]?["active_tracks"] == .array([.number(4)]))
            r = try await h.jsonCommand(tv, "tracks", ["active": .array([.number(2), .number(3)])])
            #expect(r["data"]?["active_tracks"] == .array([.number(2), .number(3)]))
            r = try await h.jsonCommand(tv, "tracks", ["text_style": .object(["font_scale": .number(1.5), "edge_type": .string("outline")])])
            #expect(r.status == "ok", "\(r)")
            let style = device.received(namespace: CastNamespace.media, type: "EDIT_TRACKS_INFO").last?.json?["textTrackStyle"]
            #expect(style == .object(["fontScale": .number(1.5), "edgeType": .string("OUTLINE")]))

            // Errors: a language or id the media lacks, the bit missing, no media, no app.
            let edits = device.received(namespace: CastNamespace.media, type: "EDIT_TRACKS_INFO").count
            r = try await h.command(tv, "tracks", "ja")
            #expect(r.errorCode == "invalid_payload", "\(r)")
            r = try await h.jsonCommand(tv, "tracks", ["active": .array([.number(9)])])
            #expect(r.errorCode == "invalid_payload")
            r = try await h.command(tv, "tracks", "{\"volume\": 3}")
            #expect(r.errorCode == "invalid_payload")
            #expect(device.received(namespace: CastNamespace.media, type: "EDIT_TRACKS_INFO").count == edits, "nothing sent")
            r = try await h.command(kitchen, "tracks", "en")
            #expect(r.errorCode == "no_app")
            r = try await h.command(kitchen, "load", Self.movie)
            #expect(r.status == "ok", "\(r)")
            r = try await h.command(kitchen, "tracks", "en")
            #expect(r.errorCode == "not_supported", "\(r)")
            // A stopped session: the device refuses; no media session at all: the bridge does.
            r = try await h.command(tv, "stop", "")
            r = try await h.command(tv, "tracks", "en")
            #expect(r.errorCode == "invalid_player_state", "\(r)")
            r = try await h.command(tv, "launch", SimulatedAppID.echo)
            r = try await h.command(tv, "launch", CastAppID.defaultMediaReceiver)
            #expect(r.status == "ok", "\(r)")
            r = try await h.command(tv, "tracks", "en")
            #expect(r.errorCode == "no_media_session", "\(r)")
        }
    }

    @Test func queueEveryOperationWithFetchedMetadata() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv])
            let device = h.devices[0]
            var r = try await h.jsonCommand(tv, "load", ["queue": .array((1...3).map {
                .object(["url": .string("http://127.0.0.1/q/\($0).mp3"), "title": .string("Song \($0)")])
            })])
            #expect(r.status == "ok", "\(r)")
            // The device lists the queue by ids; the bridge asks the items and publishes them.
            var media = await h.media(tv) { h.queueContent($0).compactMap { $0 }.count == 3 }
            #expect(h.queueContent(media) == ["http://127.0.0.1/q/1.mp3", "http://127.0.0.1/q/2.mp3", "http://127.0.0.1/q/3.mp3"])
            #expect(media?["queue"]?["items"]?.arrayValue?.first?["title"] == .string("Song 1"))
            #expect(device.received(namespace: CastNamespace.media, type: "QUEUE_GET_ITEMS").count >= 1)

            r = try await h.jsonCommand(tv, "queue", ["insert": .array([.object(["url": .string("http://127.0.0.1/q/end.mp3"),
                                                                                  "preload_time": .number(5)])])])
            #expect(r.status == "ok", "\(r)")
            #expect(r["data"]?["item_ids"] == .array([1, 2, 3, 4].map { .number($0) }))
            let insert = try #require(device.received(namespace: CastNamespace.media, type: "QUEUE_INSERT").last?.json)
            #expect(insert["insertBefore"] == nil)
            #expect(insert["items"]?.arrayValue?.first?["preloadTime"] == .number(5))
            media = await h.media(tv) { h.queueContent($0).last == "http://127.0.0.1/q/end.mp3" }
            #expect(media != nil, "the inserted item's metadata is fetched")
            #expect(media?["state"] == .string("playing"), "what played goes on")
            #expect(media?["queue"]?["current_item_id"] == .number(1))

            r = try await h.jsonCommand(tv, "queue", ["insert": .array([.object(["url": .string("http://127.0.0.1/q/next.mp3")])]),
                                                      "before": .string("next")])
            #expect(r["data"]?["item_ids"] == .array([1, 5, 2, 3, 4].map { .number($0) }))
            #expect(await h.media(tv) { h.queueContent($0).dropFirst().first == "http://127.0.0.1/q/next.mp3" } != nil)
            r = try await h.jsonCommand(tv, "queue", ["remove": .array([.number(2)])])
            #expect(r["data"]?["item_ids"] == .array([1, 5, 3, 4].map { .number($0) }))
            r = try await h.jsonCommand(tv, "queue", ["reorder": .array([.number(4)]), "before": .number(5)])
            #expect(r["data"]?["item_ids"] == .array([1, 4, 5, 3].map { .number($0) }))
            media = await h.media(tv) { h.queueContent($0) == ["http://127.0.0.1/q/1.mp3", "http://127.0.0.1/q/end.mp3",
                                                             "http://127.0.0.1/q/next.mp3", "http://127.0.0.1/q/3.mp3"] }
            #expect(media != nil, "the document follows the device's order")
            r = try await h.jsonCommand(tv, "queue", ["jump": .number(3)])
            #expect(r["data"]?["current_item_id"] == .number(3))
            #expect(await h.media(tv) { $0["content_id"] == .string("http://127.0.0.1/q/3.mp3") } != nil)
            r = try await h.jsonCommand(tv, "queue", ["jump_by": .number(-1)])
            #expect(r["data"]?["current_item_id"] == .number(5))
            r = try await h.jsonCommand(tv, "queue", ["repeat": .string("all")])
            #expect(device.received(namespace: CastNamespace.media, type: "QUEUE_UPDATE").last?.json?["repeatMode"] == .string("REPEAT_ALL"))
            #expect(await h.media(tv) { $0["queue"]?["repeat_mode"] == .string("all") } != nil)
            r = try await h.jsonCommand(tv, "queue", ["shuffle": .bool(true)])
            #expect(r.status == "ok", "\(r)")
            #expect(device.received(namespace: CastNamespace.media, type: "QUEUE_UPDATE").last?.json?["shuffle"] == .bool(true))
            #expect(Set(r["data"]?["item_ids"]?.arrayValue ?? []) == Set([1, 4, 5, 3].map { JSONValue.number($0) }))

            // Errors: an unknown item id (nothing sent), a bad payload, no media session.
            let updates = device.received(namespace: CastNamespace.media).count
            r = try await h.jsonCommand(tv, "queue", ["jump": .number(42)])
            #expect(r.errorCode == "invalid_payload")
            r = try await h.jsonCommand(tv, "queue", ["remove": .array([.number(2)])])
            #expect(r.errorCode == "invalid_payload", "item 2 is gone")
            r = try await h.command(tv, "queue", "next")
            #expect(r.errorCode == "invalid_payload")
            #expect(device.received(namespace: CastNamespace.media).count == updates)
            r = try await h.command(tv, "stop", "")
            r = try await h.jsonCommand(tv, "queue", ["jump_by": .number(1)])
            #expect(r.errorCode == "invalid_player_state", "the device refuses a stopped session's queue: \(r)")
            r = try await h.command(tv, "launch", SimulatedAppID.echo)
            r = try await h.command(tv, "launch", CastAppID.defaultMediaReceiver)
            r = try await h.jsonCommand(tv, "queue", ["jump_by": .number(1)])
            #expect(r.errorCode == "no_media_session", "\(r)")
        }
    }

    @Test func queueEditsGoOutWithoutTheQueueBitsAndTheOtherBitsHold() async throws {
        try await withBridge(devices: ["Kitchen"], supportedMediaCommands: ["Kitchen": MediaCommands([.pause, .seek]).rawValue]) { h in
            try await h.waitOnline([kitchen])
            var r = try await h.jsonCommand(kitchen, "load", ["queue": .array([.object(["url": .string("http://127.0.0.1/1.mp3")]),
                                                                                 .object(["url": .string("http://127.0.0.1/2.mp3")])])])
            #expect(r.status == "ok", "\(r)")
            // Edits go out whatever the QUEUE_NEXT / QUEUE_PREV bits say (real receivers list them
            // only while a next or previous item exists); the receiver decides.
            r = try await h.jsonCommand(kitchen, "queue", ["insert": .array([.object(["url": .string("http://127.0.0.1/3.mp3")])])])
            #expect(r.status == "ok", "\(r)")
            #expect(await h.media(kitchen) { h.queueContent($0).count == 3 } != nil, "the item was inserted")
            r = try await h.jsonCommand(kitchen, "queue", ["remove": .array([.number(2)])])
            #expect(r.status == "ok", "\(r)")
            // What the bits do say is still honoured: no repeat-one bit, no shuffle bit.
            for body: [String: JSONValue] in [["repeat": .string("one")], ["shuffle": .bool(true)], ["jump_by": .number(1)]] {
                r = try await h.jsonCommand(kitchen, "queue", body)
                #expect(r.errorCode == "not_supported", "\(body): \(r)")
            }
        }
    }

    @Test func anAppTheBridgeDidNotLaunch() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline([tv])
            let device = h.devices[0]
            // Another sender plays a queue in a media app of its own.
            let queue: JSONValue = .object(["items": .array((1...2).map {
                .object(["media": .object(["contentId": .string("music:track:\($0)"), "metadata": .object(["title": .string("Track \($0)")])])])
            })])
            #expect(await device.remoteLoad(appId: SimulatedAppID.music, request: queue, queue: true))
            #expect(await h.media(tv) { h.queueContent($0) == ["music:track:1", "music:track:2"] } != nil)
            let launches = device.received(namespace: CastNamespace.receiver, type: "LAUNCH").count

            // An enqueue into its queue is refused, not turned into a relaunch.
            var r = try await h.jsonCommand(tv, "queue", ["insert": .array([.object(["url": .string("http://127.0.0.1/mine.mp3")])])])
            #expect(r.errorCode == "invalid_player_state", "\(r)")
            #expect(r["error"]?["message"]?.stringValue?.contains("Sim Music") == true)
            #expect(device.received(namespace: CastNamespace.media, type: "QUEUE_INSERT").isEmpty)
            #expect(device.received(namespace: CastNamespace.receiver, type: "LAUNCH").count == launches)
            // Jumping in it is fine.
            r = try await h.jsonCommand(tv, "queue", ["jump_by": .number(1)])
            #expect(r.status == "ok", "\(r)")

            // load replaces it, and says so.
            r = try await h.command(tv, "load", "http://127.0.0.1/media/song.mp3")
            #expect(r.status == "ok", "\(r)")
            #expect(r["data"]?["replaced"]?["app_id"] == .string(SimulatedAppID.music))
            #expect(r["data"]?["replaced"]?["app_name"] == .string("Sim Music"))
            r = try await h.command(tv, "load", "http://127.0.0.1/media/other.mp3")
            #expect(r["data"]?["replaced"] == .null, "the same app replaces nothing")
        }
    }

    @Test func oneDevicesTraceLeavesTheOthersAtTheirLevel() async throws {
        try await withBridge(environment: ["CAST2MQTT_LOG_LEVEL": "info", "CAST2MQTT_LOG_DEVICES": "Living Room TV",
                                           "CAST2MQTT_LOG_LEVELS": "mqtt=warning"]) { h in
            try await h.waitOnline([tv, kitchen])
            func traffic(_ name: String) -> [Substring] {
                h.log.split(separator: "\n").filter { $0.contains("cast message") && $0.contains("cast.device=\(name) (") }
            }
            _ = try await h.command(tv, "refresh", "")
            _ = try await h.command(kitchen, "refresh", "")
            #expect(await waitUntil { traffic("Living Room TV").contains { $0.contains("RECEIVER_STATUS") } })
            #expect(traffic("Kitchen").isEmpty, "the kitchen stays at info")
            #expect(traffic("Living Room TV").contains { $0.contains(" trace cast2mqtt.cast:") && $0.contains("cast.payload=") })
            #expect(!h.log.contains("debug cast2mqtt"), "nothing else at debug")

            // At run time: trace the kitchen, stop tracing the TV.
            var r = try await h.bridgeRequest("log_level", #"{"device": "kitchen"}"#)
            #expect(r["data"]?["devices"] == .array([.string("kitchen"), .string(tv)]))
            #expect(r["data"]?["levels"]?["mqtt"] == .string("warning"))
            r = try await h.bridgeRequest("log_level", #"{"device": "Living Room TV", "level": "default"}"#)
            #expect(r["data"]?["devices"] == .array([.string("kitchen")]))
            let tvLines = traffic("Living Room TV").count
            _ = try await h.command(tv, "refresh", "")
            _ = try await h.command(kitchen, "refresh", "")
            #expect(await waitUntil { traffic("Kitchen").contains { $0.contains("RECEIVER_STATUS") } })
            #expect(traffic("Living Room TV").count == tvLines, "the TV's traffic is no longer logged")
            r = try await h.bridgeRequest("log_level", #"{"component": "bridge", "level": "debug"}"#)
            #expect(r["data"]?["levels"]?["bridge"] == .string("debug"))
            r = try await h.bridgeRequest("log_level", #"{"component": "radio", "level": "debug"}"#)
            #expect(r.errorCode == "invalid_payload")
        }
    }

    @Test func jsonLogLines() async throws {
        try await withBridge(devices: ["Kitchen"], environment: ["CAST2MQTT_LOG_FORMAT": "json", "CAST2MQTT_LOG_LEVEL": "debug"]) { h in
            try await h.waitOnline([kitchen])
            _ = try await h.command(kitchen, "refresh", "")
            let lines = h.log.split(separator: "\n").filter { !$0.isEmpty }
            #expect(lines.count > 5)
            for line in lines {
                let object = try? CastJSON.decode(JSONValue.self, from: String(line))
                #expect(object?["message"]?.stringValue != nil && object?["level"] != nil && object?["time"] != nil
                        && object?["logger"]?.stringValue?.hasPrefix("cast2mqtt") == true, "not a JSON log line: \(line)")
            }
            #expect(lines.contains { $0.contains(#""logger":"cast2mqtt.cast""#) && $0.contains(#""cast.type":"RECEIVER_STATUS""#) })
        }
    }
}
