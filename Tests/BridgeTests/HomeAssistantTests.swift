import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// Discovery configs as the bridge builds them. Tests/homeassistant checks the same configs
/// against a real Home Assistant.
@Suite struct HomeAssistantTests {
    static let deviceObjects: [(String, String)] = [
        ("sensor", "state"), ("sensor", "media_title"), ("sensor", "media_artist"), ("sensor", "media_album"),
        ("sensor", "media_duration"), ("sensor", "media_position"), ("image", "artwork"), ("sensor", "app"),
        ("number", "volume"), ("switch", "mute"), ("select", "playback_rate"), ("button", "play"), ("button", "pause"),
        ("button", "stop"), ("button", "next"), ("button", "previous"), ("text", "load_url"), ("event", "last_command"),
        ("select", "subtitles"), ("select", "audio_language"),
    ]
    /// Entities that are also unavailable while the media lacks something (a third availability topic).
    static let conditional: Set<String> = ["artwork", "subtitles", "audio_language"]
    static let bridgeObjects: [(String, String)] = [
        ("binary_sensor", "connection"), ("sensor", "devices"), ("sensor", "online_devices"), ("button", "refresh"),
    ]
    let deviceTopic = "homeassistant/device/cast2mqtt_\(tvID)/config"
    let bridgeTopic = "homeassistant/device/cast2mqtt_bridge/config"
    let availability: JSONValue = .array([.object(["topic": .string("cast2mqtt/bridge/state")]),
                                          .object(["topic": .string("cast2mqtt/living_room_tv/availability")])])

    /// The components of the device config.
    func components(_ out: BridgeOutput, _ topic: String? = nil) -> [String: JSONValue] {
        out.json(topic ?? deviceTopic)?["cmps"]?.objectValue ?? [:]
    }

    static func containsNull(_ value: JSONValue) -> Bool {
        switch value {
        case .null: return true
        case .object(let o): return o.values.contains(where: containsNull)
        case .array(let a): return a.contains(where: containsNull)
        default: return false
        }
    }

    @Test func oneDeviceConfigWithEveryComponent() throws {
        var h = Harness()
        let out = h.feed(.deviceDiscovered(tvDescriptor()))
        let doc = try #require(out.json(deviceTopic))
        #expect(out.on(deviceTopic).first?.retain == true)
        #expect(doc["device"] == .object(["identifiers": .array([.string("cast2mqtt_\(tvID)")]), "name": .string("Living Room TV"),
                                          "model": .string("Chromecast Ultra"), "manufacturer": .string("Google Inc."),
                                          "via_device": .string("cast2mqtt_bridge")]))
        #expect(doc["origin"]?["name"] == .string("cast2mqtt"))
        let cmps = components(out)
        #expect(Set(cmps.keys) == Set(Self.deviceObjects.map(\.1)))
        for (platform, object) in Self.deviceObjects {
            let c = try #require(cmps[object])
            #expect(c["platform"] == .string(platform))
            #expect(c["unique_id"] == .string("cast2mqtt_\(tvID)_\(object)"))
            #expect(c["object_id"] == .string("living_room_tv_\(object)"))
            #expect(c["default_entity_id"] == .string("\(platform).living_room_tv_\(object)"))
            if Self.conditional.contains(object) {
                // Also unavailable while there is no artwork (no tracks): a list of its own.
                let list = c["availability"]?.arrayValue ?? []
                #expect(Array(list.prefix(2)) == availability.arrayValue ?? [])
                #expect(list.last?["topic"] == .string("cast2mqtt/living_room_tv/media"))
                continue
            }
            // The rest follow the device's availability, said once at the device level (Home
            // Assistant gives it to every component that does not set its own).
            #expect(c["availability"] == nil && c["availability_mode"] == nil && c["payload_available"] == nil)
        }
        #expect(doc["availability"] == availability)
        #expect(doc["availability_mode"] == .string("all"))
        #expect(doc["payload_available"] == .string("online") && doc["payload_not_available"] == .string("offline"))
        // One retained config for the device, nothing per entity.
        #expect(out.publications.filter { $0.topic.hasPrefix("homeassistant/") }.map(\.topic) == [deviceTopic])
    }

    @Test func perEntityMode() throws {
        var h = Harness { $0.homeassistant.discovery = "per_entity" }
        let out = h.feed(.deviceDiscovered(tvDescriptor()))
        for (platform, object) in Self.deviceObjects {
            let topic = "homeassistant/\(platform)/cast2mqtt_\(tvID)/\(object)/config"
            let doc = try #require(out.json(topic), "\(topic)")
            #expect(doc["unique_id"] == .string("cast2mqtt_\(tvID)_\(object)"))
            #expect(doc["default_entity_id"] == .string("\(platform).living_room_tv_\(object)"))
            #expect(doc["device"]?["via_device"] == .string("cast2mqtt_bridge"))
            #expect(doc["origin"] != nil)
            #expect(doc["platform"] == nil)
            if !Self.conditional.contains(object) { #expect(doc["availability"] == availability) }
        }
        #expect(out.publications.filter { $0.topic.hasPrefix("homeassistant/") }.count == Self.deviceObjects.count)
    }

    @Test func noNullAnywhereAndModelAndManufacturerOnlyOnceKnown() throws {
        for mode in ["device", "per_entity"] {
            var h = Harness { $0.homeassistant.discovery = mode }
            var bare = speakerDescriptor()
            bare.model = nil
            bare.manufacturer = nil
            var out = h.feed(.mqttConnected)
            out.append(h.feed(.deviceDiscovered(bare)))
            let configs = out.publications.filter { $0.topic.hasPrefix("homeassistant/") && !$0.payload.isEmpty }
            #expect(!configs.isEmpty)
            for p in configs {
                let doc = try #require(JSONOutput.parse(p.payload))
                #expect(!Self.containsNull(doc), "\(p.topic)")
                if p.topic.contains(speakerID) {
                    let device = try #require(doc["device"]?.objectValue)
                    #expect(device["model"] == nil)
                    #expect(device["manufacturer"] == nil)
                    #expect(device["sw_version"] == nil)
                }
            }
            var known = bare
            known.model = "Google Home"
            known.manufacturer = "Google Inc."
            let updated = h.feed(.deviceUpdated(known))
            let doc = try #require(updated.publications.last { $0.topic.contains("cast2mqtt_\(speakerID)") }.flatMap { JSONOutput.parse($0.payload) })
            #expect(doc["device"]?["model"] == .string("Google Home"))
            #expect(doc["device"]?["manufacturer"] == .string("Google Inc."))
            // Another maker's Cast device is not called a Google one.
            var other = known
            other.model = "BRAVIA 4K GB"
            other.manufacturer = "Sony"
            let sony = h.feed(.deviceUpdated(other))
            let sonyDoc = try #require(sony.publications.last { $0.topic.contains("cast2mqtt_\(speakerID)") }.flatMap { JSONOutput.parse($0.payload) })
            #expect(sonyDoc["device"]?["manufacturer"] == .string("Sony"))
            #expect(sonyDoc["device"]?["model"] == .string("BRAVIA 4K GB"))
        }
    }

    /// Home Assistant logs a warning for every template that touches a missing key; the
    /// templates read keys with `.get` only.
    @Test func templatesNeverTouchAMissingKey() {
        for entity in HomeAssistantDiscovery.haEntities + HomeAssistantDiscovery.haBridgeEntities {
            let fields = entity.fields(TopicGrammar(base: "cast2mqtt", discoveryPrefix: "homeassistant"), "tv")
            for (key, value) in fields where key.hasSuffix("template") {
                let text = value.stringValue ?? ""
                let direct = text.components(separatedBy: "value_json.").dropFirst().filter { !$0.hasPrefix("get(") }
                #expect(direct.isEmpty, "\(entity.object).\(key): \(text)")
            }
        }
    }

    @Test func theBridgeIsADevice() throws {
        var h = Harness()
        let out = h.feed(.mqttConnected)
        let doc = try #require(out.json(bridgeTopic))
        let device = try #require(doc["device"]?.objectValue)
        #expect(device["identifiers"] == .array([.string("cast2mqtt_bridge")]))
        #expect(device["sw_version"] == .string(h.core.configuration.version))
        let cmps = components(out, bridgeTopic)
        #expect(Set(cmps.keys) == Set(Self.bridgeObjects.map(\.1)))
        #expect(cmps["connection"]?["state_topic"] == .string("cast2mqtt/bridge/state"))
        #expect(cmps["connection"]?["device_class"] == .string("connectivity"))
        #expect(cmps["connection"]?["availability"] == nil)
        // Its connectivity sensor follows no availability: none at the device level either.
        #expect(doc["availability"] == nil)
        #expect(cmps["devices"]?["availability"] == .array([.object(["topic": .string("cast2mqtt/bridge/state")])]))
        #expect(cmps["devices"]?["state_topic"] == .string("cast2mqtt/bridge/info"))
        #expect(cmps["refresh"]?["command_topic"] == .string("cast2mqtt/bridge/request/refresh"))
        // What the Refresh button sends is a valid request.
        if case .failure(let f) = CommandParser().parseBridgeRequest(name: "refresh", payload: Array("{}".utf8)) {
            Issue.record("refresh: \(f.error)")
        }
    }

    /// Two bridges on one Home Assistant (different base topics) are two bridge devices, and each
    /// bridge's Cast devices hang below its own.
    @Test func aSecondBridgeIsASecondDevice() throws {
        var h = Harness { $0.mqtt.baseTopic = "house/casts" }
        let out = h.feed(.mqttConnected)
        let topic = "homeassistant/device/cast2mqtt_bridge_house_casts/config"
        let device = try #require(out.json(topic)?["device"]?.objectValue)
        #expect(device["identifiers"] == .array([.string("cast2mqtt_bridge_house_casts")]))
        #expect(device["name"] == .string("cast2mqtt (house/casts)"))
        #expect(out.on(bridgeTopic).isEmpty)
        let added = h.feed(.deviceDiscovered(tvDescriptor()))
        #expect(added.json(deviceTopic)?["device"]?["via_device"] == .string("cast2mqtt_bridge_house_casts"))
    }

    @Test func entityWiring() throws {
        var h = Harness()
        let cmps = components(h.feed(.deviceDiscovered(tvDescriptor())))
        #expect(cmps["state"]?["state_topic"] == .string("cast2mqtt/living_room_tv/state"))
        #expect(cmps["media_title"]?["state_topic"] == .string("cast2mqtt/living_room_tv/media"))
        #expect(cmps["app"]?["state_topic"] == .string("cast2mqtt/living_room_tv/receiver"))
        #expect(cmps["volume"]?["command_topic"] == .string("cast2mqtt/living_room_tv/command/volume"))
        #expect(cmps["volume"]?["min"] == .number(0))
        #expect(cmps["volume"]?["max"] == .number(100))
        #expect(cmps["mute"]?["payload_on"] == .string("true"))
        #expect(cmps["playback_rate"]?["options"] == .array(["0.5", "0.75", "1", "1.25", "1.5", "2"].map(JSONValue.string)))
        #expect(cmps["artwork"]?["url_topic"] == .string("cast2mqtt/living_room_tv/media"))
        #expect(cmps["media_position"]?["json_attributes_topic"] == .string("cast2mqtt/living_room_tv/media"))
        #expect(cmps["last_command"]?["state_topic"] == .string("cast2mqtt/living_room_tv/response"))
        #expect(cmps["last_command"]?["event_types"] == .array([.string("ok"), .string("error")]))
        for button in ["play", "pause", "stop", "next", "previous"] {
            #expect(cmps[button]?["command_topic"] == .string("cast2mqtt/living_room_tv/command/\(button)"))
            #expect(cmps[button]?["payload_press"] == .string("{}"))
        }
        #expect(cmps["load_url"]?["command_topic"] == .string("cast2mqtt/living_room_tv/command/load"))
        // What HA sends is accepted by the command parser.
        let parser = CommandParser()
        for (name, payload) in [("mute", "true"), ("mute", "false"), ("rate", "0.75"), ("volume", "37"), ("play", "{}"), ("load", "http://x/a.mp3")] {
            if case .failure(let f) = parser.parse(name: name, payload: Array(payload.utf8)) { Issue.record("\(name): \(f.error)") }
        }
    }

    @Test func clearedOnRemovalAndRepublishedOnHAOnline() {
        var h = Harness()
        h.feed(.mqttConnected)
        h.feed(.deviceDiscovered(tvDescriptor()))
        let online = h.publish("homeassistant/status", "online")
        #expect(Set(online.publications.filter { $0.topic.hasPrefix("homeassistant/") }.map(\.topic)) == [deviceTopic, bridgeTopic])
        #expect(h.publish("homeassistant/status", "offline").publications.isEmpty)
        let removed = h.feed(.deviceRemoved(tvID))
        let cleared = removed.publications.filter { $0.payload.isEmpty }.map(\.topic)
        #expect(cleared.first == deviceTopic)
        #expect(cleared.count == 6)  // each once: Home Assistant warns about a second empty device config
        #expect(Set(cleared) == Set([deviceTopic] + ["availability", "info", "receiver", "media", "state"].map { "cast2mqtt/living_room_tv/\($0)" }))
        let allRetained = removed.publications.filter { $0.payload.isEmpty }.allSatisfy { $0.retain }
        #expect(allRetained)
        #expect(removed.publishedChanged)
        #expect(removed.forgotten == [tvID])
        #expect(h.core.publishedSnapshot.devices[tvID] == nil)
        #expect(h.feed(.homeAssistantOnline).publications.map(\.topic) == [bridgeTopic])
    }

    /// The configs are kept as a hash only (not the ~10 KiB document per device), are not
    /// published again while unchanged, and after a broker reconnect are rebuilt and published
    /// again byte for byte (a broker without persistence lost them).
    @Test func configsKeptAsAHashAndRebuiltAfterABrokerReconnect() throws {
        var h = Harness()
        h.feed(.mqttConnected)
        let first = h.feed(.deviceDiscovered(tvDescriptor()))
        let sent = try #require(first.on(deviceTopic).first?.payload)
        #expect(h.core.publisher.keepsPayload(deviceTopic) == false)
        #expect(h.core.publisher.keepsPayload(bridgeTopic) == false)
        #expect(h.feed(.deviceUpdated(tvDescriptor())).on(deviceTopic).isEmpty)
        #expect(h.feed(.homeAssistantOnline).on(deviceTopic).map(\.payload) == [sent])
        let reconnected = h.feed(.mqttConnected)
        #expect(reconnected.on(deviceTopic).map(\.payload) == [sent])
        #expect(reconnected.on(bridgeTopic).count == 1)
        #expect(reconnected.on("cast2mqtt/living_room_tv/availability").count == 1)
        #expect(h.feed(.deviceUpdated(tvDescriptor())).on(deviceTopic).isEmpty)
        let renamed = h.feed(.deviceUpdated(tvDescriptor(name: "Den TV")))
        #expect(renamed.publications.contains { $0.topic.hasPrefix("homeassistant/") && !$0.payload.isEmpty })
    }

    @Test func removeRequestForgetsADevice() {
        var h = Harness()
        h.feed(.mqttConnected)
        h.feed(.deviceDiscovered(tvDescriptor()))
        let out = h.publish("cast2mqtt/bridge/request/remove", #"{"device": "living_room_tv", "id": 3}"#)
        #expect(out.on(deviceTopic).first?.payload.isEmpty == true)
        #expect(out.json("cast2mqtt/bridge/response/remove")?["status"] == .string("ok"))
        #expect(out.json("cast2mqtt/bridge/response/remove")?["data"]?["id"] == .string(tvID))
        #expect(out.forgotten == [tvID])
        let again = h.publish("cast2mqtt/bridge/request/remove", "living_room_tv")
        #expect(again.json("cast2mqtt/bridge/response/remove")?["error"]?["code"] == .string("unknown_device"))
        let bad = h.publish("cast2mqtt/bridge/request/remove", "{}")
        #expect(bad.json("cast2mqtt/bridge/response/remove")?["error"]?["code"] == .string("invalid_payload"))
    }

    /// `remove` also forgets a device a previous run published that this run has not seen (an
    /// mDNS device that is switched off), by its topic name.
    @Test func removeRequestForARememberedDevice() {
        var first = Harness()
        first.feed(.mqttConnected)
        first.feed(.deviceDiscovered(tvDescriptor()))
        var h = Harness()
        h.core.restorePublished(first.core.publishedSnapshot, staticIDs: [])
        h.feed(.mqttConnected)
        let out = h.publish("cast2mqtt/bridge/request/remove", "living_room_tv")
        #expect(out.json("cast2mqtt/bridge/response/remove")?["status"] == .string("ok"))
        #expect(out.on(deviceTopic).first?.payload.isEmpty == true)
        #expect(out.on("cast2mqtt/living_room_tv/media").first?.payload.isEmpty == true)
        #expect(h.core.publishedSnapshot.devices.isEmpty)
    }

    /// A previous run published two devices; one is excluded now: the first connect clears it.
    @Test func goneSinceTheLastRunIsCleared() throws {
        var first = Harness()
        first.feed(.mqttConnected)
        first.feed(.deviceDiscovered(tvDescriptor()))
        first.feed(.deviceDiscovered(speakerDescriptor()))
        let snapshot = first.core.publishedSnapshot
        #expect(snapshot.devices.count == 2)
        let encoded = try JSONEncoder().encode(snapshot)
        let decoded = try JSONDecoder().decode(PublishedSnapshot.self, from: encoded)

        var second = Harness { $0.discovery.exclude = ["Kitchen Speaker"] }
        // Discovery's include/exclude rule, as the daemon hands it over.
        second.core.restorePublished(decoded, staticIDs: [speakerID], admitted: { _, name in name != "Kitchen Speaker" })
        let out = second.feed(.mqttConnected)
        let speakerConfig = "homeassistant/device/cast2mqtt_\(speakerID)/config"
        #expect(out.on(speakerConfig).first?.payload.isEmpty == true)
        #expect(out.on("cast2mqtt/kitchen_speaker/state").first?.payload.isEmpty == true)
        #expect(out.on(deviceTopic).isEmpty)  // not seen yet this run, but not gone
        #expect(out.publishedChanged)
        #expect(second.core.publishedSnapshot.devices[speakerID] == nil)
        #expect(second.core.publishedSnapshot.devices[tvID] != nil)
        // Once only.
        #expect(second.feed(.mqttConnected).on(speakerConfig).isEmpty)

        // A static device dropped from the configuration, with mDNS off, is gone too.
        var third = Harness { $0.discovery.mdns = false }
        third.core.restorePublished(decoded, staticIDs: [])
        #expect(third.feed(.mqttConnected).on(speakerConfig).first?.payload.isEmpty == true)
    }

    @Test func switchingModesClearsTheOtherModesConfigs() {
        var first = Harness { $0.homeassistant.discovery = "per_entity" }
        first.feed(.deviceDiscovered(tvDescriptor()))
        var second = Harness()
        second.core.restorePublished(first.core.publishedSnapshot, staticIDs: [])
        let out = second.feed(.deviceDiscovered(tvDescriptor()))
        let cleared = out.publications.filter { $0.payload.isEmpty }.map(\.topic)
        #expect(cleared.count == Self.deviceObjects.count)
        let perEntity = cleared.allSatisfy { $0.hasPrefix("homeassistant/") && $0.hasSuffix("/config") && !$0.contains("/device/") }
        #expect(perEntity)
        #expect(out.on(deviceTopic).last?.payload.isEmpty == false)
    }

    @Test func disabledPublishesNothingAndClearsWhatWasPublished() {
        var first = Harness()
        first.feed(.mqttConnected)
        first.feed(.deviceDiscovered(tvDescriptor()))
        var h = Harness { $0.homeassistant.enabled = false }
        h.core.restorePublished(first.core.publishedSnapshot, staticIDs: [])
        let out = h.feed(.mqttConnected)
        #expect(out.on(deviceTopic).first?.payload.isEmpty == true)
        #expect(out.on(bridgeTopic).first?.payload.isEmpty == true)
        let added = h.feed(.deviceDiscovered(tvDescriptor()))
        #expect(!added.publications.contains { $0.topic.hasPrefix("homeassistant/") })
        #expect(!h.core.subscriptions.contains("homeassistant/status"))
    }
}
