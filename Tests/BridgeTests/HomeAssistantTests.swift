import CastProtocol
import Foundation
import Testing
@testable import Bridge

@Suite struct HomeAssistantTests {
    func config(_ out: BridgeOutput, _ platform: String, _ object: String) -> JSONValue? {
        out.json("homeassistant/\(platform)/cast2mqtt_\(tvID)/\(object)/config")
    }

    let availability: JSONValue = .array([.object(["topic": .string("cast2mqtt/bridge/state")]),
                                          .object(["topic": .string("cast2mqtt/living_room_tv/availability")])])

    @Test func everyEntityHasCommonFields() throws {
        var h = Harness()
        let out = h.feed(.deviceDiscovered(tvDescriptor()))
        let expected: [(String, String)] = [("sensor", "state"), ("sensor", "media_title"), ("sensor", "app"), ("number", "volume"),
                                            ("switch", "mute"), ("select", "playback_rate"), ("button", "play"), ("button", "pause"),
                                            ("button", "stop"), ("button", "next"), ("button", "previous"), ("text", "load_url")]
        for (platform, object) in expected {
            let doc = try #require(config(out, platform, object), "\(platform)/\(object)")
            #expect(doc["unique_id"] == .string("cast2mqtt_\(tvID)_\(object)"))
            #expect(doc["availability"] == availability)
            #expect(doc["availability_mode"] == .string("all"))
            #expect(doc["device"] == .object(["identifiers": .array([.string("cast2mqtt_\(tvID)")]), "name": .string("Living Room TV"),
                                              "model": .string("Chromecast Ultra"), "manufacturer": .string("Google Inc."),
                                              "via_device": .string("cast2mqtt_bridge")]))
            #expect(out.on("homeassistant/\(platform)/cast2mqtt_\(tvID)/\(object)/config").first?.retain == true)
        }
        let count = out.publications.filter { $0.topic.hasPrefix("homeassistant/") }.count
        #expect(count == expected.count)
    }

    @Test func entityWiring() throws {
        var h = Harness()
        let out = h.feed(.deviceDiscovered(tvDescriptor()))
        let state = try #require(config(out, "sensor", "state"))
        #expect(state["state_topic"] == .string("cast2mqtt/living_room_tv/state"))
        let title = try #require(config(out, "sensor", "media_title"))
        #expect(title["state_topic"] == .string("cast2mqtt/living_room_tv/media"))
        #expect(title["value_template"]?.stringValue?.contains("value_json.title") == true)
        let app = try #require(config(out, "sensor", "app"))
        #expect(app["state_topic"] == .string("cast2mqtt/living_room_tv/receiver"))
        #expect(app["value_template"]?.stringValue?.contains("app_name") == true)
        let volume = try #require(config(out, "number", "volume"))
        #expect(volume["command_topic"] == .string("cast2mqtt/living_room_tv/command/volume"))
        #expect(volume["state_topic"] == .string("cast2mqtt/living_room_tv/receiver"))
        #expect(volume["min"] == .number(0))
        #expect(volume["max"] == .number(100))
        let mute = try #require(config(out, "switch", "mute"))
        #expect(mute["command_topic"] == .string("cast2mqtt/living_room_tv/command/mute"))
        #expect(mute["payload_on"] == .string("true"))
        #expect(mute["payload_off"] == .string("false"))
        let rate = try #require(config(out, "select", "playback_rate"))
        #expect(rate["options"] == .array(["0.5", "0.75", "1", "1.25", "1.5", "2"].map(JSONValue.string)))
        #expect(rate["command_topic"] == .string("cast2mqtt/living_room_tv/command/rate"))
        #expect(rate["state_topic"] == .string("cast2mqtt/living_room_tv/media"))
        for button in ["play", "pause", "stop", "next", "previous"] {
            let doc = try #require(config(out, "button", button))
            #expect(doc["command_topic"] == .string("cast2mqtt/living_room_tv/command/\(button)"))
            #expect(doc["payload_press"] == .string("{}"))
        }
        let load = try #require(config(out, "text", "load_url"))
        #expect(load["command_topic"] == .string("cast2mqtt/living_room_tv/command/load"))
        // What HA sends is accepted by the command parser.
        let parser = CommandParser()
        for (name, payload) in [("mute", "true"), ("mute", "false"), ("rate", "0.75"), ("volume", "37"), ("play", "{}"), ("load", "http://x/a.mp3")] {
            if case .failure(let f) = parser.parse(name: name, payload: Array(payload.utf8)) { Issue.record("\(name): \(f.error)") }
        }
    }

    @Test func clearedOnRemovalAndRepublishedOnHAOnline() {
        var h = Harness()
        h.feed(.deviceDiscovered(tvDescriptor()))
        let online = h.publish("homeassistant/status", "online")
        #expect(online.publications.filter { $0.topic.hasPrefix("homeassistant/") }.count == 12)
        #expect(h.feed(.homeAssistantOnline).publications.count == 12)
        #expect(h.publish("homeassistant/status", "offline").publications.isEmpty)
        let removed = h.feed(.deviceRemoved(tvID))
        let cleared = removed.publications.filter { $0.topic.hasPrefix("homeassistant/") }
        #expect(cleared.count == 12)
        #expect(cleared.allSatisfy { $0.payload.isEmpty && $0.retain })
        #expect(h.feed(.homeAssistantOnline).publications.isEmpty)
    }

    @Test func disabledPublishesNothing() {
        var h = Harness { $0.homeassistant.enabled = false }
        let out = h.feed(.deviceDiscovered(tvDescriptor()))
        #expect(!out.publications.contains { $0.topic.hasPrefix("homeassistant/") })
        #expect(!h.core.subscriptions.contains("homeassistant/status"))
    }

    @Test func mediaPlayerConfig() throws {
        var h = Harness { $0.homeassistant.mediaPlayer = true; $0.homeassistant.discoveryPrefix = "ha" }
        let out = h.feed(.deviceDiscovered(tvDescriptor()))
        let doc = try #require(out.json("ha/media_player/\(tvID)/config"))
        #expect(doc["state_state_topic"] == .string("cast2mqtt/living_room_tv/state"))
        #expect(doc["command_play_topic"] == .string("cast2mqtt/living_room_tv/command/play"))
        #expect(doc["command_playmedia_topic"] == .string("cast2mqtt/living_room_tv/command/load"))
        #expect(doc["unique_id"] == .string("cast2mqtt_\(tvID)_media_player"))
        #expect(doc["availability_mode"] == .string("all"))
    }
}
