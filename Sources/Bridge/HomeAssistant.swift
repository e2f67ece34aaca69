import CastProtocol

/// Home Assistant MQTT discovery (mqtt-api.md §7), driven by the `entities` table.
/// Config topics: `<prefix>/<platform>/cast2mqtt_<id>/<object>/config`; with
/// `homeassistant.media_player` also `<prefix>/media_player/<id>/config`.
struct HAEntity: Sendable {
    var platform: String
    var object: String
    var name: String
    /// Platform-specific keys, given the device's topics.
    var fields: @Sendable (_ topics: TopicGrammar, _ dev: String) -> [String: JSONValue]
}

extension BridgeCore {
    static let rateOptions = ["0.5", "0.75", "1", "1.25", "1.5", "2"]

    /// The entity table: one row per entity of every device.
    static var haEntities: [HAEntity] {
        func button(_ command: String, _ name: String, _ icon: String) -> HAEntity {
            HAEntity(platform: "button", object: command, name: name) { t, dev in
                ["command_topic": .string(t.command(dev, command)), "payload_press": .string("{}"), "icon": .string(icon)]
            }
        }
        return [
            HAEntity(platform: "sensor", object: "state", name: "State") { t, dev in
                ["state_topic": .string(t.state(dev)), "icon": .string("mdi:cast"),
                 "device_class": .string("enum"),
                 "options": .array(["off", "idle", "buffering", "playing", "paused"].map(JSONValue.string))]
            },
            HAEntity(platform: "sensor", object: "media_title", name: "Media title") { t, dev in
                ["state_topic": .string(t.media(dev)), "value_template": .string("{{ value_json.title or '' }}"),
                 "icon": .string("mdi:music-note")]
            },
            HAEntity(platform: "sensor", object: "app", name: "App") { t, dev in
                ["state_topic": .string(t.receiver(dev)), "value_template": .string("{{ value_json.app_name or '' }}"),
                 "icon": .string("mdi:application")]
            },
            HAEntity(platform: "number", object: "volume", name: "Volume") { t, dev in
                ["state_topic": .string(t.receiver(dev)),
                 "value_template": .string("{{ ((value_json.volume.level or 0) * 100) | round(0) | int }}"),
                 "command_topic": .string(t.command(dev, "volume")), "min": .number(0), "max": .number(100),
                 "step": .number(1), "mode": .string("slider"), "unit_of_measurement": .string("%"),
                 "icon": .string("mdi:volume-high")]
            },
            HAEntity(platform: "switch", object: "mute", name: "Mute") { t, dev in
                ["state_topic": .string(t.receiver(dev)),
                 "value_template": .string("{{ 'ON' if value_json.volume.muted else 'OFF' }}"),
                 "command_topic": .string(t.command(dev, "mute")), "payload_on": .string("true"),
                 "payload_off": .string("false"), "state_on": .string("ON"), "state_off": .string("OFF"),
                 "icon": .string("mdi:volume-off")]
            },
            HAEntity(platform: "select", object: "playback_rate", name: "Playback rate") { t, dev in
                ["state_topic": .string(t.media(dev)),
                 "value_template": .string("{{ '%g' % (value_json.playback_rate or 1) }}"),
                 "command_topic": .string(t.command(dev, "rate")),
                 "options": .array(rateOptions.map(JSONValue.string)), "icon": .string("mdi:speedometer")]
            },
            button("play", "Play", "mdi:play"),
            button("pause", "Pause", "mdi:pause"),
            button("stop", "Stop", "mdi:stop"),
            button("next", "Next", "mdi:skip-next"),
            button("previous", "Previous", "mdi:skip-previous"),
            HAEntity(platform: "text", object: "load_url", name: "Load URL") { t, dev in
                ["command_topic": .string(t.command(dev, "load")), "mode": .string("text"), "max": .number(255),
                 "icon": .string("mdi:link")]
            },
        ]
    }

    static let bridgeIdentifier = "cast2mqtt_bridge"

    func haDeviceBlock(_ d: DeviceState) -> JSONValue {
        .object([
            "identifiers": .array([.string("cast2mqtt_\(d.id)")]),
            "name": .string(d.descriptor.friendlyName),
            "model": .str(d.descriptor.model),
            "manufacturer": .str(d.descriptor.manufacturer ?? "Google"),
            "via_device": .string(Self.bridgeIdentifier),
        ])
    }

    func haAvailability(_ d: DeviceState) -> [String: JSONValue] {
        ["availability": .array([.object(["topic": .string(topics.bridgeState)]),
                                 .object(["topic": .string(topics.availability(d.topic))])]),
         "availability_mode": .string("all"),
         "payload_available": .string("online"), "payload_not_available": .string("offline")]
    }

    func discoveryTopic(_ entity: HAEntity, _ d: DeviceState) -> String {
        "\(configuration.homeassistant.discoveryPrefix)/\(entity.platform)/cast2mqtt_\(d.id)/\(entity.object)/config"
    }

    func mediaPlayerTopic(_ d: DeviceState) -> String {
        "\(configuration.homeassistant.discoveryPrefix)/media_player/\(d.id)/config"
    }

    /// Every discovery config of one device, as (topic, document).
    func discoveryConfigs(_ id: DeviceID) -> [(String, JSONValue)] {
        guard let d = devices[id] else { return [] }
        var out: [(String, JSONValue)] = []
        for entity in Self.haEntities {
            var doc = entity.fields(topics, d.topic)
            doc["unique_id"] = .string("cast2mqtt_\(d.id)_\(entity.object)")
            doc["object_id"] = .string("\(d.topic)_\(entity.object)")
            doc["name"] = .string(entity.name)
            doc["device"] = haDeviceBlock(d)
            doc["qos"] = .int(configuration.mqtt.qos)
            doc["origin"] = .object(["name": .string("cast2mqtt"), "sw_version": .string(configuration.version)])
            doc.merge(haAvailability(d)) { a, _ in a }
            out.append((discoveryTopic(entity, d), .object(doc)))
        }
        if configuration.homeassistant.mediaPlayer {
            out.append((mediaPlayerTopic(d), mediaPlayerConfig(d)))
        }
        return out
    }

    /// The community `mqtt_media_player` schema: state and command topics plus value templates.
    func mediaPlayerConfig(_ d: DeviceState) -> JSONValue {
        var doc: [String: JSONValue] = [
            "name": .string(d.descriptor.friendlyName),
            "unique_id": .string("cast2mqtt_\(d.id)_media_player"),
            "device": haDeviceBlock(d),
            "state_state_topic": .string(topics.state(d.topic)),
            "state_title_topic": .string(topics.media(d.topic)),
            "state_title_template": .string("{{ value_json.title or '' }}"),
            "state_artist_topic": .string(topics.media(d.topic)),
            "state_artist_template": .string("{{ value_json.artist or '' }}"),
            "state_album_topic": .string(topics.media(d.topic)),
            "state_album_template": .string("{{ value_json.album or '' }}"),
            "state_duration_topic": .string(topics.media(d.topic)),
            "state_duration_template": .string("{{ value_json.duration or 0 }}"),
            "state_position_topic": .string(topics.media(d.topic)),
            "state_position_template": .string("{{ value_json.position or 0 }}"),
            "state_volume_topic": .string(topics.receiver(d.topic)),
            "state_volume_template": .string("{{ value_json.volume.level or 0 }}"),
            "state_albumart_topic": .string(topics.media(d.topic)),
            "state_albumart_template": .string("{{ (value_json.images or [{}])[0].url or '' }}"),
            "command_volume_topic": .string(topics.command(d.topic, "volume")),
            "command_volume_template": .string("{\"level\": {{ volume }}}"),
            "command_play_topic": .string(topics.command(d.topic, "play")),
            "command_play_payload": .string("{}"),
            "command_pause_topic": .string(topics.command(d.topic, "pause")),
            "command_pause_payload": .string("{}"),
            "command_next_topic": .string(topics.command(d.topic, "next")),
            "command_next_payload": .string("{}"),
            "command_previous_topic": .string(topics.command(d.topic, "previous")),
            "command_previous_payload": .string("{}"),
            "command_playmedia_topic": .string(topics.command(d.topic, "load")),
        ]
        doc.merge(haAvailability(d)) { a, _ in a }
        return .object(doc)
    }

    mutating func publishDiscovery(_ id: DeviceID, _ out: inout BridgeOutput) {
        guard configuration.homeassistant.enabled else { return }
        for (topic, doc) in discoveryConfigs(id) { publishRetained(topic, doc, &out) }
    }

    /// Home Assistant announced itself: every config again, changed or not.
    mutating func republishDiscovery(_ out: inout BridgeOutput) {
        guard configuration.homeassistant.enabled else { return }
        for id in devices.keys.sorted() {
            for (topic, doc) in discoveryConfigs(id) { publishRetained(topic, doc, force: true, &out) }
        }
    }

    /// A removed device: every config cleared with an empty retained payload.
    mutating func clearDiscovery(_ d: DeviceState, _ out: inout BridgeOutput) {
        guard configuration.homeassistant.enabled else { return }
        for entity in Self.haEntities { clearRetained(discoveryTopic(entity, d), &out) }
        if configuration.homeassistant.mediaPlayer || retained[mediaPlayerTopic(d)] != nil {
            clearRetained(mediaPlayerTopic(d), &out)
        }
    }
}
