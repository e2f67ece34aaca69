import CastProtocol
import Foundation
import Testing
@testable import Bridge

@Suite struct StateProjectionTests {
    let mediaTopic = "cast2mqtt/living_room_tv/media"
    let stateTopic = "cast2mqtt/living_room_tv/state"
    let eventTopic = "cast2mqtt/living_room_tv/event"

    /// A realistic MEDIA_STATUS as a Default Media Receiver sends it.
    static let mediaStatusJSON = #"""
    {"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":3,"playbackRate":1,"playerState":"PLAYING",
     "currentTime":31.2,"supportedMediaCommands":274447,"volume":{"level":1,"muted":false},"currentItemId":7,
     "repeatMode":"REPEAT_OFF","items":[{"itemId":7,"media":{"contentId":"http://192.0.2.5/song.mp3","metadata":{"title":"Song"}}},
     {"itemId":8,"media":{"contentId":"http://192.0.2.5/next.mp3","metadata":{"title":"Next"}}}],
     "media":{"contentId":"http://192.0.2.5/song.mp3","contentUrl":"http://cdn/song.mp3","streamType":"BUFFERED","contentType":"audio/mpeg",
      "duration":212.5,"metadata":{"metadataType":3,"title":"Song","artist":"Artist","albumName":"Album","albumArtist":"AA",
      "trackNumber":4,"images":[{"url":"http://192.0.2.5/a.jpg","width":480,"height":360}]}},
     "breakStatus":{"breakId":"b1","breakClipId":"c1","currentBreakTime":3.5,"currentBreakClipTime":1.5,"whenSkippable":5},
     "videoInfo":{"width":1920,"height":1080,"hdrType":"sdr"}}]}
    """#

    /// One rule for absent strings (spec §6): `""` from a device is `null` in every document,
    /// and an image without a URL is no image (both as real receivers send them).
    @Test func emptyStringsAreNull() throws {
        let text = #"{"type":"MEDIA_STATUS","status":[{"mediaSessionId":1,"playerState":"PLAYING","currentTime":1,"#
            + #""media":{"contentId":"","contentType":"","streamType":"LIVE","metadata":{"metadataType":0,"title":"T","#
            + #""subtitle":"","images":[{"url":""},{"url":"http://192.0.2.5/i.jpg"}]}}}]}"#
        guard case .status(_, let statuses) = try MediaResponse.parse(.string(text)) else {
            Issue.record("not a status"); return
        }
        var h = Harness()
        let app = ReceiverApplication(appId: CastAppID.defaultMediaReceiver, displayName: "", namespaces: [CastNamespace.media],
                                      sessionId: "s1", statusText: "", transportId: "t1")
        let out = h.online(status: receiver(app: app), media: statuses)
        let doc = try #require(out.json(mediaTopic))
        #expect(doc["title"] == .string("T"))
        for key in ["subtitle", "content_id", "content_type"] { #expect(doc[key] == .null, "\(key)") }
        #expect(doc["images"]?.arrayValue?.map { $0["url"] } == [.string("http://192.0.2.5/i.jpg")])
        let receiverDoc = try #require(out.json("cast2mqtt/living_room_tv/receiver"))
        #expect(receiverDoc["status_text"] == .null && receiverDoc["app_name"] == .null)
        // Media without a content id that plays is loaded content (media_loaded, content_id null).
        #expect(out.events(eventTopic).contains("media_loaded"))
        let loaded = out.on(eventTopic).compactMap(json).first { $0["type"] == .string("media_loaded") }
        #expect(loaded?["content_id"] == .null && loaded?["title"] == .string("T"))
    }

    /// A duration of 0 is how receivers say "unknown": `null`.
    @Test func aZeroDurationIsUnknown() throws {
        var status = playing()
        status.media?.duration = 0
        var h = Harness()
        let doc = try #require(h.online(media: [status]).json(mediaTopic))
        #expect(doc["duration"] == .null)
    }

    @Test func mediaDocumentFieldByField() throws {
        guard case .status(_, let statuses) = try MediaResponse.parse(.string(Self.mediaStatusJSON)) else {
            Issue.record("not a status"); return
        }
        var h = Harness()
        let out = h.online(media: statuses)
        let doc = try #require(out.json(mediaTopic))
        #expect(doc["state"] == .string("playing"))
        #expect(doc["idle_reason"] == .null)
        #expect(doc["media_session_id"] == .number(3))
        #expect(doc["content_id"] == .string("http://192.0.2.5/song.mp3"))
        #expect(doc["content_url"] == .string("http://cdn/song.mp3"))
        #expect(doc["content_type"] == .string("audio/mpeg"))
        #expect(doc["stream_type"] == .string("buffered"))
        #expect(doc["duration"] == .number(212.5))
        #expect(doc["position"] == .number(31.2))
        #expect(doc["position_updated_at"] == .string(iso8601(t0)))
        #expect(doc["playback_rate"] == .number(1))
        #expect(doc["title"] == .string("Song"))
        #expect(doc["subtitle"] == .null)
        #expect(doc["artist"] == .string("Artist"))
        #expect(doc["album"] == .string("Album"))
        #expect(doc["album_artist"] == .string("AA"))
        #expect(doc["series_title"] == .null)
        #expect(doc["season"] == .null)
        #expect(doc["episode"] == .null)
        #expect(doc["track"] == .number(4))
        #expect(doc["images"] == .array([.object(["url": .string("http://192.0.2.5/a.jpg"), "width": .number(480), "height": .number(360)])]))
        #expect(doc["metadata_type"] == .string("music_track"))
        #expect(doc["supported_commands"] == .array(["pause", "seek", "volume", "mute", "edit_tracks", "playback_rate", "stream_transfer"].map(JSONValue.string)))
        #expect(doc["queue"]?["current_item_id"] == .number(7))
        #expect(doc["queue"]?["repeat_mode"] == .string("off"))
        #expect(doc["queue"]?["items"]?.arrayValue?.count == 2)
        #expect(doc["queue"]?["items"]?.arrayValue?.last == .object(["item_id": .number(8), "content_id": .string("http://192.0.2.5/next.mp3"), "title": .string("Next"),
                                                                     "artist": .null, "duration": .null, "autoplay": .null, "images": .array([])]))
        #expect(doc["tracks"] == .array([]))
        #expect(doc["active_tracks"] == .array([]))
        #expect(doc["break_status"] == .object(["break_id": .string("b1"), "break_clip_id": .string("c1"), "current_break_time": .number(3.5),
                                                "current_break_clip_time": .number(1.5), "when_skippable": .number(5)]))
        #expect(doc["video_info"] == .object(["width": .number(1920), "height": .number(1080), "hdr_type": .string("sdr")]))
        #expect(doc["app_id"] == .string("CC1AD845"))
        #expect(doc["updated_at"] == .string(iso8601(t0)))
        // Keys are sorted in the published bytes.
        let text = try #require(out.on(mediaTopic).last?.text)
        #expect(text.hasPrefix(#"{"active_tracks":[],"album":"Album","album_artist":"AA","app_id":"CC1AD845""#))
    }

    @Test func receiverDocument() throws {
        var h = Harness()
        let status = ReceiverStatus(applications: [dmrApp], volume: ReceiverVolume(controlType: "attenuation", level: 0.25, muted: true, stepInterval: 0.05),
                                    isActiveInput: true, isStandBy: nil)
        let doc = try #require(h.online(status: status).json("cast2mqtt/living_room_tv/receiver"))
        #expect(doc["app_id"] == .string("CC1AD845"))
        #expect(doc["app_name"] == .string("Default Media Receiver"))
        #expect(doc["session_id"] == .string("session-1"))
        #expect(doc["status_text"] == .string("Casting"))
        #expect(doc["idle_screen"] == .bool(false))
        #expect(doc["standby"] == .null)
        #expect(doc["active_input"] == .bool(true))
        #expect(doc["volume"] == .object(["level": .number(0.25), "muted": .bool(true), "control_type": .string("attenuation"), "step": .number(0.05)]))
        #expect(doc["namespaces"] == .array([.string(CastNamespace.media), .string("urn:x-cast:com.example.app")]))
        #expect(doc["updated_at"] == .string(iso8601(t0)))
    }

    @Test func stateWords() {
        var h = Harness()
        let out = h.online(status: receiver(app: nil), media: nil)
        #expect(out.texts(stateTopic).last == "off")
        #expect(out.json(mediaTopic) == .object(["state": .string("off")]))
        let backdrop = ReceiverApplication(appId: CastAppID.backdrop, displayName: "Backdrop", isIdleScreen: true, sessionId: "b")
        let idleScreen = h.feed(.receiverStatus(tvID, receiver(app: backdrop)))
        #expect(idleScreen.json("cast2mqtt/living_room_tv/receiver")?["idle_screen"] == .bool(true))
        #expect(idleScreen.json("cast2mqtt/living_room_tv/receiver")?["app_id"] == .null)
        #expect(h.core.registry[tvID]?.stateWord == "off")
        let app = h.feed(.receiverStatus(tvID, receiver()))
        #expect(app.texts(stateTopic) == ["idle"])
        // Joining (media GET_STATUS) is the client's; the bridge asks for nothing itself.
        #expect(app.operations.isEmpty)
        h.feed(.mediaStatus(tvID, [playing(state: "BUFFERING")]))
        #expect(h.core.registry[tvID]?.stateWord == "buffering")
        #expect(h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "PLAYING")])).texts(stateTopic) == ["playing"])
        #expect(h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "PAUSED")])).texts(stateTopic) == ["paused"])
        let idle = h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "IDLE", idleReason: "CANCELLED")]))
        #expect(idle.texts(stateTopic) == ["idle"])
        #expect(idle.json(mediaTopic)?["idle_reason"] == .string("cancelled"))
        #expect(h.feed(.mediaStatus(tvID, [])).json(mediaTopic) == .object(["state": .string("idle")]))
    }

    @Test func changeOnlyRepublish() {
        var h = Harness()
        h.online()
        h.now = t0.addingTimeInterval(2)
        let first = h.feed(.mediaStatus(tvID, [playing(time: 40)]))
        #expect(first.on(mediaTopic).count == 1)
        h.now = t0.addingTimeInterval(3)
        let same = h.feed(.mediaStatus(tvID, [playing(time: 40)]))
        #expect(same.publications.isEmpty)
        let sameReceiver = h.feed(.receiverStatus(tvID, receiver()))
        #expect(sameReceiver.publications.isEmpty)
        #expect(sameReceiver.operations.isEmpty, "no re-join of the same session")
    }

    @Test func positionThatOnlyFollowsPlaybackIsNoChange() {
        var h = Harness()
        h.online()
        h.now = t0.addingTimeInterval(2)
        #expect(h.feed(.mediaStatus(tvID, [playing(time: 40)])).on(mediaTopic).count == 1)
        // A broadcast a moment later whose position is where playback has got to: no republish.
        h.now = t0.addingTimeInterval(3)
        #expect(h.feed(.mediaStatus(tvID, [playing(time: 41.1)])).on(mediaTopic).isEmpty)
        // A jump (seek) is a change.
        h.now = t0.addingTimeInterval(4)
        let seek = h.feed(.mediaStatus(tvID, [playing(time: 90)]))
        #expect(seek.json(mediaTopic)?["position"] == .number(90))
        // Paused, the position is content like any other.
        h.now = t0.addingTimeInterval(5)
        #expect(h.feed(.mediaStatus(tvID, [playing(state: "PAUSED", time: 91)])).on(mediaTopic).count == 1)
    }

    @Test func partialStatusMerges() throws {
        var h = Harness()
        h.online()
        let out = h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "PAUSED", currentTime: 50)]))
        let doc = try #require(out.json(mediaTopic))
        #expect(doc["title"] == .string("Song"))
        #expect(doc["state"] == .string("paused"))
        #expect(doc["position"] == .number(50))
    }

    @Test func events() {
        var h = Harness()
        h.feed(.deviceDiscovered(tvDescriptor()))
        #expect(h.feed(.castConnected(tvID)).operations.isEmpty)
        let answered = h.feed(.receiverStatus(tvID, receiver(app: nil)))
        #expect(answered.events(eventTopic) == ["connected"])
        #expect(answered.texts("cast2mqtt/living_room_tv/availability") == ["online"])
        let started = h.feed(.receiverStatus(tvID, receiver()))
        #expect(started.events(eventTopic) == ["session_started"])
        let loaded = h.feed(.mediaStatus(tvID, [playing()]))
        #expect(loaded.events(eventTopic) == ["media_loaded"])
        let finished = h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 1, playerState: "IDLE", idleReason: "FINISHED")]))
        #expect(finished.events(eventTopic) == ["media_finished"])
        let failed = h.feed(.mediaStatus(tvID, [playing(session: 2), ]))
        #expect(failed.events(eventTopic) == ["media_loaded"])
        let error = h.feed(.mediaStatus(tvID, [MediaStatus(mediaSessionId: 2, playerState: "IDLE", idleReason: "ERROR")]))
        #expect(error.events(eventTopic) == ["error"])
        let ended = h.feed(.receiverStatus(tvID, receiver(app: nil)))
        #expect(ended.events(eventTopic) == ["session_ended"])
        #expect(ended.texts(stateTopic) == ["off"])
        let down = h.feed(.castDisconnected(tvID, reason: "heartbeat timeout"))
        #expect(down.events(eventTopic) == ["disconnected"])
        #expect(down.texts("cast2mqtt/living_room_tv/availability") == ["offline"])
        h.now = t0.addingTimeInterval(12.5)
        let reconnect = h.feed(.castConnected(tvID))
        #expect(reconnect.texts("cast2mqtt/living_room_tv/availability").isEmpty, "TCP/TLS up is not enough")
        let back = h.feed(.receiverStatus(tvID, receiver(app: nil)))
        #expect(back.texts("cast2mqtt/living_room_tv/availability") == ["online"])
        let event = back.on(eventTopic).first.flatMap(json)
        #expect(event?["type"] == .string("reconnected"))
        #expect(event?["downtime"] == .number(12.5))
        #expect(event?["at"] == .string(iso8601(h.now)))
    }

    @Test func reconnectJoinsRunningAppWithoutRelaunch() {
        var h = Harness()
        h.online()
        h.feed(.castDisconnected(tvID, reason: "network error"))
        #expect(h.feed(.castConnected(tvID)).operations.isEmpty)
        let back = h.feed(.receiverStatus(tvID, receiver()))
        // The client rejoins the running app and reads its media; the bridge launches nothing.
        #expect(back.operations.isEmpty)
        #expect(back.events(eventTopic) == ["reconnected"], "same session: no session events")
    }

    @Test func positionRepublish() {
        var h = Harness { $0.media.positionInterval = 5 }
        h.online()
        h.now = t0.addingTimeInterval(3)
        #expect(h.feed(.tick).on(mediaTopic).isEmpty)
        h.now = t0.addingTimeInterval(5)
        let out = h.feed(.tick)
        #expect(out.json(mediaTopic)?["position"] == .number(36.2))
        #expect(out.json(mediaTopic)?["position_updated_at"] == .string(iso8601(h.now)))
        var off = Harness()
        off.online()
        off.now = t0.addingTimeInterval(99)
        _ = off.feed(.tick)  // bridge/info and bridge/devices held back while the device came up
        off.now = t0.addingTimeInterval(100)
        #expect(off.feed(.tick).publications.isEmpty)
    }

    @Test func appMessages() {
        var h = Harness()
        h.online()
        let out = h.feed(.appMessage(tvID, namespace: "urn:x-cast:com.example.app", payload: .string(#"{"a":1}"#)))
        #expect(out.texts("cast2mqtt/living_room_tv/message/urn:x-cast:com.example.app") == [#"{"a":1}"#])
        #expect(out.publications.first?.retain == false)
        let bin = h.feed(.appMessage(tvID, namespace: "urn:x-cast:com.example.bin", payload: .binary([0, 1, 255])))
        #expect(bin.on("cast2mqtt/living_room_tv/message/urn:x-cast:com.example.bin").first?.payload == [0, 1, 255])
        #expect(h.feed(.appMessage(tvID, namespace: CastNamespace.media, payload: .string("{}"))).publications.isEmpty)
    }

    @Test func mqttReconnectRepublishesEverything() {
        var h = Harness()
        h.feed(.mqttConnected)
        h.online()
        let again = h.feed(.mqttConnected)
        let topics = Set(again.publications.map(\.topic))
        for t in ["cast2mqtt/bridge/state", "cast2mqtt/bridge/info", "cast2mqtt/bridge/devices", "cast2mqtt/living_room_tv/availability",
                  "cast2mqtt/living_room_tv/info", "cast2mqtt/living_room_tv/receiver", mediaTopic, stateTopic,
                  "homeassistant/device/cast2mqtt_\(tvID)/config", "homeassistant/device/cast2mqtt_bridge/config"] {
            #expect(topics.contains(t), "\(t)")
        }
        #expect(again.publications.first?.topic == "cast2mqtt/bridge/state")
        #expect(again.publications.allSatisfy { $0.retain })
    }

    @Test func bridgeTopicsAndRequests() throws {
        var h = Harness()
        let added = h.feed(.deviceDiscovered(tvDescriptor()))
        #expect(added.events("cast2mqtt/bridge/event") == ["device_added"])
        let devices = try #require(added.json("cast2mqtt/bridge/devices")?.arrayValue?.first)
        #expect(devices == .object(["id": .string(tvID), "name": .string("Living Room TV"), "topic": .string("living_room_tv"),
                                    "model": .string("Chromecast Ultra"), "cast_type": .string("video"), "address": .string("192.0.2.10"),
                                    "port": .number(8009), "online": .bool(false), "source": .string("mdns")]))
        #expect(added.json("cast2mqtt/living_room_tv/info")?["capabilities"] == .array([.string("video_out"), .string("audio_out")]))
        #expect(added.json("cast2mqtt/bridge/info")?["devices"] == .number(1))
        let renamed = h.feed(.deviceUpdated(tvDescriptor(name: "Lounge TV")))
        #expect(renamed.events("cast2mqtt/bridge/event") == ["device_updated"])
        #expect(renamed.json("cast2mqtt/living_room_tv/info")?["name"] == .string("Lounge TV"))
        #expect(renamed.json("cast2mqtt/living_room_tv/info")?["topic"] == .string("living_room_tv"))
        h.feed(.mqttConnected)
        h.feed(.mqttConnected)
        let health = h.publish("cast2mqtt/bridge/request/health_check", #"{"id": 1}"#)
        #expect(health.json("cast2mqtt/bridge/response/health_check")?["data"] == .object(["healthy": .bool(true), "devices": .number(1),
                                                                                           "online": .number(0), "mqtt_reconnects": .number(1),
                                                                                           "overload": .object(["busy_commands": .number(0)])]))
        let list = h.publish("cast2mqtt/bridge/request/devices", "")
        #expect(list.json("cast2mqtt/bridge/response/devices")?["data"]?.arrayValue?.count == 1)
        h.now = h.now.addingTimeInterval(2)
        let removed = h.feed(.deviceRemoved(tvID))
        #expect(removed.events("cast2mqtt/bridge/event") == ["device_removed"])
        #expect(removed.on("cast2mqtt/living_room_tv/info").first?.payload == [])
        #expect(removed.json("cast2mqtt/bridge/devices") == .array([]))
    }
}

@Suite struct SessionStoreTests {
    @Test func snapshotRoundTripAndSilentRejoin() throws {
        var h = Harness()
        let first = h.online()
        #expect(first.sessionsChanged)
        #expect(first.events("cast2mqtt/living_room_tv/event") == ["connected", "session_started", "media_loaded"])
        let snapshot = h.core.sessionSnapshot()
        #expect(snapshot.devices[tvID]?.sessionId == "session-1")
        #expect(snapshot.devices[tvID]?.mediaSessionId == 1)
        let data = try JSONEncoder().encode(snapshot)
        let decoded = try JSONDecoder().decode(SessionSnapshot.self, from: data)
        #expect(decoded == snapshot)

        var restarted = Harness()
        restarted.core.restore(decoded)
        let again = restarted.online()
        #expect(!again.events("cast2mqtt/living_room_tv/event").contains("session_started"))
        // The client joins and reads the media status; the bridge sends nothing, least of all a
        // LAUNCH or LOAD.
        #expect(again.operations.isEmpty)
    }
}

@Suite struct LifecycleTests {
    @Test func subscriptionsWillAndShutdown() {
        var h = Harness()
        #expect(h.core.subscriptions == ["cast2mqtt/+/command/#", "cast2mqtt/bridge/request/+", "homeassistant/status"])
        #expect(h.core.lastWill == Publication(topic: "cast2mqtt/bridge/state", text: "offline", retain: true))
        h.online()
        let out = h.core.shutdown()
        #expect(out.texts("cast2mqtt/living_room_tv/availability") == ["offline"])
        #expect(out.publications.last == Publication(topic: "cast2mqtt/bridge/state", text: "offline", retain: true))
    }

    @Test func bridgeDeviceListIsPublishedAtMostOnceASecond() {
        var h = Harness()
        // Three devices found within the same second: the first one goes out at once, the other
        // two with the next tick, in one publication.
        var first = h.feed(.deviceDiscovered(tvDescriptor()))
        #expect(first.json("cast2mqtt/bridge/devices")?.arrayValue?.count == 1)
        first = h.feed(.deviceDiscovered(speakerDescriptor()))
        #expect(first.on("cast2mqtt/bridge/devices").isEmpty)
        #expect(first.events("cast2mqtt/bridge/event") == ["device_added"])
        h.now = h.now.addingTimeInterval(0.5)
        #expect(h.feed(.tick).on("cast2mqtt/bridge/devices").isEmpty)
        h.now = h.now.addingTimeInterval(0.6)
        let flushed = h.feed(.tick)
        #expect(flushed.json("cast2mqtt/bridge/devices")?.arrayValue?.count == 2)
        #expect(flushed.json("cast2mqtt/bridge/info")?["devices"] == .number(2))
        h.now = h.now.addingTimeInterval(1)
        #expect(h.feed(.tick).on("cast2mqtt/bridge/devices").isEmpty)
    }

    @Test func shutdownAnswersCommandsStillWaiting() {
        var h = Harness()
        h.online()
        let out = h.publish("cast2mqtt/living_room_tv/command/pause", #"{"id": "x"}"#)
        #expect(out.operations.count == 1)
        let final = h.core.shutdown(now: h.now)
        let response = final.json("cast2mqtt/living_room_tv/response")
        #expect(response?["id"] == .string("x"))
        #expect(response?["error"]?["code"] == .string("internal"))
        #expect(final.operations.isEmpty)
        #expect(final.publications.last == Publication(topic: "cast2mqtt/bridge/state", text: "offline", retain: true))
    }

    @Test func firstMQTTConnectPublishesBridgeState() {
        var h = Harness()
        let out = h.feed(.mqttConnected)
        #expect(out.texts("cast2mqtt/bridge/state") == ["online"])
        #expect(out.json("cast2mqtt/bridge/info")?["started_at"] == .string(iso8601(t0)))
        #expect(out.json("cast2mqtt/bridge/info")?["version"] != nil)
        #expect(out.json("cast2mqtt/bridge/devices") == .array([]))
    }

    @Test func unknownTopicsAreIgnored() {
        var h = Harness()
        let out = h.publish("cast2mqtt/tv/state", "x")
        #expect(out.publications.isEmpty && out.operations.isEmpty)
    }
}
