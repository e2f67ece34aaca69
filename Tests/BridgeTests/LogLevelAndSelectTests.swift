import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// `bridge/request/log_level` and the log configuration; the Home Assistant selects for subtitles
/// and audio language.
@Suite struct LogLevelTests {
    let responseTopic = "cast2mqtt/bridge/response/log_level"

    @Test func requestChangesLevelsAndAnswersWithThoseInForce() throws {
        var h = Harness { $0.log.levels = ["mqtt": "warning"]; $0.log.devices = ["Kitchen Speaker"] }
        #expect(h.core.logLevels.deviceIDs.isEmpty, "a device named before it is known")
        let added = h.feed(.deviceDiscovered(speakerDescriptor()))
        #expect(added.logLevels?.deviceIDs == [speakerID], "resolved once it appears")
        h.feed(.deviceDiscovered(tvDescriptor()))

        var out = h.publish("cast2mqtt/bridge/request/log_level", "")
        var doc = try #require(out.json(responseTopic))
        #expect(doc["status"] == .string("ok"))
        #expect(doc["data"]?["level"] == .string("info"))
        #expect(doc["data"]?["levels"]?["mqtt"] == .string("warning"))
        #expect(doc["data"]?["levels"]?["cast"] == .string("info"))
        #expect(doc["data"]?["devices"] == .array([.string("kitchen_speaker")]))
        #expect(out.logLevels == nil, "a question changes nothing")

        out = h.publish("cast2mqtt/bridge/request/log_level", #"{"component": "cast", "level": "debug", "id": 3}"#)
        #expect(out.logLevels?.level(of: "cast") == "debug")
        #expect(out.logLevels?.level(of: "web") == "info")
        #expect(out.json(responseTopic)?["id"] == .number(3))
        out = h.publish("cast2mqtt/bridge/request/log_level", #"{"device": "living_room_tv"}"#)
        #expect(out.logLevels?.deviceIDs == [speakerID, tvID])
        doc = try #require(out.json(responseTopic))
        #expect(doc["data"]?["devices"] == .array([.string("kitchen_speaker"), .string("living_room_tv")]))
        out = h.publish("cast2mqtt/bridge/request/log_level", #"{"device": "Kitchen Speaker", "level": "default"}"#)
        #expect(out.logLevels?.deviceIDs == [tvID])
        out = h.publish("cast2mqtt/bridge/request/log_level", "warning")
        #expect(out.logLevels?.level == "warning")
        #expect(out.logLevels?.level(of: "cast") == "debug", "a component's own level stays")
        out = h.publish("cast2mqtt/bridge/request/log_level", #"{"component": "cast", "level": "default"}"#)
        #expect(out.logLevels?.level(of: "cast") == "warning")
        #expect(out.logs.contains { $0.hasPrefix("log levels:") })
    }

    @Test func badRequestsAreRefused() {
        var h = Harness()
        h.feed(.deviceDiscovered(tvDescriptor()))
        let cases: [(String, String)] = [
            (#"{"component": "radio", "level": "debug"}"#, "invalid_payload"),
            (#"{"level": "loud"}"#, "invalid_payload"),
            (#"{"component": "cast"}"#, "invalid_payload"),
            (#"{"level": "default"}"#, "invalid_payload"),
            (#"{"device": "tv", "component": "cast", "level": "trace"}"#, "invalid_payload"),
            (#"{"device": "living_room_tv", "level": "debug"}"#, "invalid_payload"),
            (#"{"device": "nowhere"}"#, "unknown_device"),
            (#"{"devices": []}"#, "invalid_payload"),
        ]
        for (payload, code) in cases {
            let out = h.publish("cast2mqtt/bridge/request/log_level", payload)
            #expect(out.json(responseTopic)?["error"]?["code"] == .string(code), "\(payload)")
            #expect(out.logLevels == nil)
        }
    }

    @Test func configurationKeys() throws {
        let c = try ConfigurationLoader.load(yaml: "log:\n  levels: {cast: debug, mqtt: error}\n  devices: [kitchen]\n  format: json\n")
        #expect(c.log.levels == ["cast": "debug", "mqtt": "error"])
        #expect(c.log.devices == ["kitchen"])
        #expect(c.log.format == "json")
        let env = try ConfigurationLoader.load(yaml: "", environment: ["CAST2MQTT_LOG_LEVELS": "web=trace, bridge=debug",
                                                                        "CAST2MQTT_LOG_DEVICES": "a,b", "CAST2MQTT_LOG_FORMAT": "json"])
        #expect(env.log.levels == ["web": "trace", "bridge": "debug"])
        #expect(env.log.devices == ["a", "b"])
        for bad in ["log:\n  levels: {radio: debug}\n", "log:\n  levels: {cast: loud}\n", "log:\n  levels: [cast]\n",
                    "log:\n  format: xml\n", "log:\n  devices: [\"\"]\n", "log:\n  levels: {cast: 3}\n"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ConfigurationLoader.load(yaml: bad) }
        }
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(yaml: "", environment: ["CAST2MQTT_LOG_LEVELS": "cast"]) }
        #expect(ConfigurationLoader.printable(c).contains("levels: {cast: \"debug\", mqtt: \"error\"}"))
    }
}

@Suite struct TrackSelectTests {
    let configTopic = "homeassistant/device/cast2mqtt_\(tvID)/config"

    func movie(_ tracks: [(Int, String, String?)], active: [Int]) -> MediaStatus {
        var status = playing()
        status.media?.tracks = .array(tracks.map { id, type, language in
            var o: [String: JSONValue] = ["trackId": .number(Double(id)), "type": .string(type)]
            if let language { o["language"] = .string(language) }
            return .object(o)
        })
        status.activeTrackIds = active
        return status
    }

    @Test func optionsFollowTheMediasLanguages() throws {
        var h = Harness()
        var out = h.online(media: [playing()])
        var cmps = try #require(out.json(configTopic)?["cmps"])
        #expect(cmps["subtitles"]?["options"] == .array([.string("off")]))
        #expect(cmps["audio_language"]?["options"] == .array([]))
        #expect(cmps["subtitles"]?["command_topic"] == .string("cast2mqtt/living_room_tv/command/tracks"))
        #expect(cmps["subtitles"]?["command_template"] == .string(#"{"subtitles": "{{ value }}"}"#))
        #expect(cmps["audio_language"]?["command_template"] == .string(#"{"audio": "{{ value }}"}"#))
        // Unavailable without tracks: a third availability entry on the media document.
        #expect(cmps["subtitles"]?["availability"]?.arrayValue?.last?["topic"] == .string("cast2mqtt/living_room_tv/media"))

        // A movie with subtitles and two audio languages: the config goes out again, before the media.
        out = h.feed(CastEvent.mediaStatus(tvID, [movie([(1, "TEXT", "en"), (2, "TEXT", "de"), (3, "TEXT", "en"), (4, "AUDIO", "en"),
                                                         (5, "AUDIO", "fr"), (6, "AUDIO", nil), (7, "TEXT", "x\"y")], active: [4])]))
        cmps = try #require(out.json(configTopic)?["cmps"])
        #expect(cmps["subtitles"]?["options"] == .array(["off", "en", "de"].map(JSONValue.string)), "each language once; no unsafe tag")
        #expect(cmps["audio_language"]?["options"] == .array(["en", "fr"].map(JSONValue.string)))
        let topics = out.publications.map(\.topic)
        #expect((topics.firstIndex(of: configTopic) ?? .max) < (topics.firstIndex(of: "cast2mqtt/living_room_tv/media") ?? -1))

        // The same languages again (a position update, another active track): no new config.
        out = h.feed(CastEvent.mediaStatus(tvID, [movie([(1, "TEXT", "en"), (2, "TEXT", "de"), (3, "TEXT", "en"), (4, "AUDIO", "en"),
                                                         (5, "AUDIO", "fr"), (6, "AUDIO", nil), (7, "TEXT", "x\"y")], active: [5, 2])]))
        #expect(out.on(configTopic).isEmpty)
        #expect(out.json("cast2mqtt/living_room_tv/media")?["active_tracks"] == .array([.number(5), .number(2)]))
    }

    @Test func templatesCarryTheirOptions() {
        let state = HomeAssistantDiscovery.TrackTemplate.state(type: "text", options: ["off", "en"], none: "'off'")
        #expect(state.contains("['off', 'en']"))
        #expect(state.contains("value_json.get('tracks')"), "absent keys read without a warning")
        #expect(HomeAssistantDiscovery.TrackTemplate.available(type: "audio").contains("'online'"))
    }
}
