import CastProtocol

/// Home Assistant MQTT discovery (mqtt-api.md §7), driven by two entity tables: one for every
/// Cast device, one for the bridge itself (the device every Cast device names in `via_device`).
///
/// `homeassistant.discovery: device` (default): one retained `<prefix>/device/<node>/config` per
/// device with its entities in `cmps` (Home Assistant 2024.11+). `per_entity`: one retained
/// `<prefix>/<platform>/<node>/<object>/config` per entity. `<node>` is `cast2mqtt_<id>` for a
/// Cast device and `cast2mqtt_bridge` for the bridge.
///
/// Rules a real Home Assistant enforces (Tests/homeassistant checks them against one): no
/// `null` anywhere in a config (a key is left out instead), templates that never touch a missing
/// key (`value_json.get(...)`, so no "Template variable warning"), and a template result of
/// `None` for "unknown" (Home Assistant's MQTT platforms read the text `None` as no value).
struct HAEntity: Sendable {
    var platform: String
    var object: String
    var name: String
    /// Platform-specific keys, given the topics and the device's topic name.
    var fields: @Sendable (_ topics: TopicGrammar, _ dev: String) -> [String: JSONValue]
    /// Bridge entities: whether the entity follows `bridge/state` availability.
    var available = true
    /// One more availability entry besides the bridge's and the device's.
    var extraAvailability: (@Sendable (_ topics: TopicGrammar, _ dev: String) -> JSONValue)?

    init(platform: String, object: String, name: String,
         fields: @escaping @Sendable (_ topics: TopicGrammar, _ dev: String) -> [String: JSONValue],
         available: Bool = true, extraAvailability: (@Sendable (_ topics: TopicGrammar, _ dev: String) -> JSONValue)? = nil) {
        self.platform = platform
        self.object = object
        self.name = name
        self.fields = fields
        self.available = available
        self.extraAvailability = extraAvailability
    }
}

/// Home Assistant discovery as a part: given a device record (or nothing, for the bridge), the
/// discovery configs to publish, as (topic, document). It owns no state: a config is computed from
/// the record each time; `RetainedPublisher` publishes it change-only and remembers its topics.
struct HomeAssistantDiscovery: Sendable {
    let configuration: BridgeConfiguration
    let topics: TopicGrammar

    var enabled: Bool { configuration.homeassistant.enabled }

    static let rateOptions = ["0.5", "0.75", "1", "1.25", "1.5", "2"]
    /// The statuses of `<dev>/response`, the event types of the `last_command` event entity.
    static let responseStatuses = ["ok", "error"]

    /// Templates. Every one reads absent and `null` keys as "no value" without a warning.
    enum Template {
        /// A top-level key as text, `None` (unknown) when absent, null or empty.
        static func field(_ key: String) -> String { "{{ value_json.get('\(key)') or none }}" }
        /// A top-level number, `None` when absent or not a number.
        static func number(_ key: String) -> String {
            "{% set v = value_json.get('\(key)') %}{{ v if v is number else none }}"
        }
        static let volumePercent =
            "{% set v = (value_json.get('volume') or {}).get('level') %}{{ (v * 100) | round(0) | int if v is number else none }}"
        static let muted =
            "{% set m = (value_json.get('volume') or {}).get('muted') %}{{ 'ON' if m is sameas true else ('OFF' if m is sameas false else none) }}"
        static let rate = "{% set r = value_json.get('playback_rate') %}{{ '%g' % r if r is number else none }}"
        /// The first image's URL. Home Assistant logs an error for anything that is not an http(s)
        /// URL, so without artwork this renders a URL in the reserved `.invalid` domain that is
        /// never fetched: the entity is unavailable then (`hasArtwork`).
        static let artwork =
            "{% set i = value_json.get('images') or [] %}{% set u = i[0].get('url') if i and i[0] is mapping else none %}{{ u if u is string and (u.startswith('http://') or u.startswith('https://')) else 'https://no-artwork.invalid/' }}"
        static let hasArtwork =
            "{% set i = value_json.get('images') or [] %}{% set u = i[0].get('url') if i and i[0] is mapping else none %}{{ 'online' if u is string and (u.startswith('http://') or u.startswith('https://')) else 'offline' }}"
        static let positionAttributes =
            "{{ {'position_updated_at': value_json.get('position_updated_at'), 'playback_rate': value_json.get('playback_rate'), 'state': value_json.get('state')} | tojson }}"
        static let response =
            "{% set e = value_json.get('error') or {} %}{{ {'event_type': value_json.get('status'), 'command': value_json.get('command'), 'id': value_json.get('id'), 'error_code': e.get('code'), 'message': e.get('message')} | tojson }}"
    }

    /// The entity table: one row per entity of every Cast device.
    static var haEntities: [HAEntity] {
        func button(_ command: CommandName, _ name: String, _ icon: String) -> HAEntity {
            HAEntity(platform: "button", object: command.rawValue, name: name) { t, dev in
                ["command_topic": .string(t.command(dev, command)), "payload_press": .string("{}"), "icon": .string(icon)]
            }
        }
        func mediaText(_ object: String, _ name: String, _ key: String, _ icon: String) -> HAEntity {
            HAEntity(platform: "sensor", object: object, name: name) { t, dev in
                ["state_topic": .string(t.media(dev)), "value_template": .string(Template.field(key)), "icon": .string(icon)]
            }
        }
        return [
            HAEntity(platform: "sensor", object: "state", name: "State") { t, dev in
                ["state_topic": .string(t.state(dev)), "icon": .string("mdi:cast"),
                 "device_class": .string("enum"),
                 "options": .array(["off", "idle", "buffering", "playing", "paused"].map(JSONValue.string))]
            },
            mediaText("media_title", "Media title", "title", "mdi:music-note"),
            mediaText("media_artist", "Media artist", "artist", "mdi:account-music"),
            mediaText("media_album", "Media album", "album", "mdi:album"),
            HAEntity(platform: "sensor", object: "media_duration", name: "Media duration") { t, dev in
                ["state_topic": .string(t.media(dev)), "value_template": .string(Template.number("duration")),
                 "device_class": .string("duration"), "unit_of_measurement": .string("s"),
                 "suggested_display_precision": .int(0)]
            },
            HAEntity(platform: "sensor", object: "media_position", name: "Media position") { t, dev in
                ["state_topic": .string(t.media(dev)), "value_template": .string(Template.number("position")),
                 "device_class": .string("duration"), "unit_of_measurement": .string("s"),
                 "suggested_display_precision": .int(0),
                 "json_attributes_topic": .string(t.media(dev)),
                 "json_attributes_template": .string(Template.positionAttributes)]
            },
            HAEntity(platform: "image", object: "artwork", name: "Artwork", fields: { t, dev in
                ["url_topic": .string(t.media(dev)), "url_template": .string(Template.artwork)]
            }, extraAvailability: { t, dev in
                // Unavailable while there is no artwork.
                .object(["topic": .string(t.media(dev)), "value_template": .string(Template.hasArtwork)])
            }),
            HAEntity(platform: "sensor", object: "app", name: "App") { t, dev in
                ["state_topic": .string(t.receiver(dev)), "value_template": .string(Template.field("app_name")),
                 "icon": .string("mdi:application")]
            },
            HAEntity(platform: "number", object: "volume", name: "Volume") { t, dev in
                ["state_topic": .string(t.receiver(dev)), "value_template": .string(Template.volumePercent),
                 "command_topic": .string(t.command(dev, .volume)), "min": .int(0), "max": .int(100),
                 "step": .int(1), "mode": .string("slider"), "unit_of_measurement": .string("%"),
                 "icon": .string("mdi:volume-high")]
            },
            HAEntity(platform: "switch", object: "mute", name: "Mute") { t, dev in
                ["state_topic": .string(t.receiver(dev)), "value_template": .string(Template.muted),
                 "command_topic": .string(t.command(dev, .mute)), "payload_on": .string("true"),
                 "payload_off": .string("false"), "state_on": .string("ON"), "state_off": .string("OFF"),
                 "icon": .string("mdi:volume-off")]
            },
            HAEntity(platform: "select", object: "playback_rate", name: "Playback rate") { t, dev in
                ["state_topic": .string(t.media(dev)), "value_template": .string(Template.rate),
                 "command_topic": .string(t.command(dev, .rate)),
                 "options": .array(rateOptions.map(JSONValue.string)), "icon": .string("mdi:speedometer")]
            },
            button(.play, "Play", "mdi:play"),
            button(.pause, "Pause", "mdi:pause"),
            button(.stop, "Stop", "mdi:stop"),
            button(.next, "Next", "mdi:skip-next"),
            button(.previous, "Previous", "mdi:skip-previous"),
            HAEntity(platform: "text", object: "load_url", name: "Load URL") { t, dev in
                ["command_topic": .string(t.command(dev, .load)), "mode": .string("text"), "max": .int(255),
                 "icon": .string("mdi:link")]
            },
            HAEntity(platform: "event", object: "last_command", name: "Last command") { t, dev in
                ["state_topic": .string(t.response(dev)), "value_template": .string(Template.response),
                 "event_types": .array(responseStatuses.map(JSONValue.string)), "icon": .string("mdi:console-line")]
            },
        ]
    }

    /// The bridge's own entities.
    static var haBridgeEntities: [HAEntity] {
        [
            HAEntity(platform: "binary_sensor", object: "connection", name: "Connection", fields: { t, _ in
                ["state_topic": .string(t.bridgeState), "payload_on": .string("online"), "payload_off": .string("offline"),
                 "device_class": .string("connectivity"), "entity_category": .string("diagnostic")]
            }, available: false),
            HAEntity(platform: "sensor", object: "devices", name: "Devices") { t, _ in
                ["state_topic": .string(t.bridgeInfo), "value_template": .string(Template.number("devices")),
                 "state_class": .string("measurement"), "icon": .string("mdi:cast-variant")]
            },
            HAEntity(platform: "sensor", object: "online_devices", name: "Online devices") { t, _ in
                ["state_topic": .string(t.bridgeInfo), "value_template": .string(Template.number("online")),
                 "state_class": .string("measurement"), "icon": .string("mdi:cast-connected")]
            },
            HAEntity(platform: "button", object: "refresh", name: "Refresh") { t, _ in
                ["command_topic": .string(t.bridgeRequest(.refresh)), "payload_press": .string("{}"),
                 "icon": .string("mdi:refresh")]
            },
        ]
    }

    /// The bridge's own Home Assistant device: `cast2mqtt_bridge`, or with a base topic other
    /// than the default `cast2mqtt_bridge_<slug of the base topic>`, so that two bridges on one
    /// Home Assistant are two devices.
    ///
    /// In instance mode (mqtt-api.md §10) the bridge device is one per instance:
    /// `cast2mqtt_bridge[_<slug of the base topic>]_<instance>`, named after the instance; each
    /// Cast device names its owner's in `via_device`.
    var bridgeNode: String {
        let base = configuration.mqtt.baseTopic
        let node = base == "cast2mqtt" ? "cast2mqtt_bridge" : "cast2mqtt_bridge_" + TopicNameRegistry.slug(base)
        return configuration.instance.map { node + "_" + $0 } ?? node
    }

    /// The bridge's entities; in instance mode its connection follows the instance's own
    /// document (`online` while it is there and says so; its will clears it).
    var bridgeEntities: [HAEntity] {
        guard let instance = configuration.instance else { return Self.haBridgeEntities }
        let document = "\(configuration.mqtt.baseTopic)/bridge/instances/\(instance)"
        return Self.haBridgeEntities.map { entity in
            guard entity.object == "connection" else { return entity }
            var connection = entity
            connection.fields = { _, _ in
                ["state_topic": .string(document), "payload_on": .string("online"), "payload_off": .string("offline"),
                 "value_template": .string("{{ 'online' if value_json is mapping and value_json.get('state') == 'online' else 'offline' }}"),
                 "device_class": .string("connectivity"), "entity_category": .string("diagnostic")]
            }
            return connection
        }
    }

    static func node(_ id: DeviceID) -> String { "cast2mqtt_\(id)" }

    /// A Cast device's Home Assistant device. The integration's media player names the same
    /// device (identifier `cast2mqtt_<id>` under the MQTT domain) and gives the same name and
    /// model. Model and manufacturer are left out until the device (its mDNS record or its
    /// `eureka_info`) says them: never a guess, never null.
    func haDeviceBlock(_ d: DeviceRecord) -> JSONValue {
        var block: [String: JSONValue] = [
            "identifiers": .array([.string(Self.node(d.id))]),
            "name": .string(d.descriptor.friendlyName),
            "via_device": .string(bridgeNode),
        ]
        if let model = d.descriptor.model, !model.isEmpty { block["model"] = .string(model) }
        if let manufacturer = d.descriptor.manufacturer, !manufacturer.isEmpty {
            block["manufacturer"] = .string(manufacturer)
        }
        return .object(block)
    }

    var haBridgeDeviceBlock: JSONValue {
        .object([
            "identifiers": .array([.string(bridgeNode)]),
            "name": .string((configuration.mqtt.baseTopic == "cast2mqtt" ? "cast2mqtt" : "cast2mqtt (\(configuration.mqtt.baseTopic))")
                + (configuration.instance.map { " \($0)" } ?? "")),
            "manufacturer": .string("cast2mqtt"),
            "model": .string("Cast to MQTT bridge"),
            "sw_version": .string(configuration.version),
        ])
    }

    var haOrigin: JSONValue {
        .object(["name": .string("cast2mqtt"), "sw_version": .string(configuration.version)])
    }

    var bridgeAvailability: [String: JSONValue] {
        ["availability": .array([.object(["topic": .string(topics.bridgeState)])]),
         "payload_available": .string("online"), "payload_not_available": .string("offline")]
    }

    func haAvailability(_ d: DeviceRecord) -> [String: JSONValue] {
        ["availability": .array([.object(["topic": .string(topics.bridgeState)]),
                                 .object(["topic": .string(topics.availability(d.topic))])]),
         "availability_mode": .string("all"),
         "payload_available": .string("online"), "payload_not_available": .string("offline")]
    }

    var discoveryMode: BridgeConfiguration.HomeAssistant.DiscoveryMode { configuration.homeassistant.discoveryMode }

    func discoveryTopic(platform: String, node: String, object: String) -> String {
        "\(configuration.homeassistant.discoveryPrefix)/\(platform)/\(node)/\(object)/config"
    }

    func deviceDiscoveryTopic(node: String) -> String {
        "\(configuration.homeassistant.discoveryPrefix)/device/\(node)/config"
    }

    /// One entity's keys (without `device` and `origin`, which per_entity adds and device mode
    /// shares). `entityPrefix` makes the entity id: `<platform>.<entityPrefix>_<object>`.
    func componentConfig(_ entity: HAEntity, node: String, topicName: String, entityPrefix: String,
                         availability: [String: JSONValue]?) -> [String: JSONValue] {
        var doc = entity.fields(topics, topicName)
        if var availability, let extra = entity.extraAvailability?(topics, topicName),
           case .array(let list)? = availability["availability"] {
            availability["availability"] = .array(list + [extra])
            doc.merge(availability) { a, _ in a }
        }
        doc["unique_id"] = .string("\(node)_\(entity.object)")
        doc["object_id"] = .string("\(entityPrefix)_\(entity.object)")
        doc["default_entity_id"] = .string("\(entity.platform).\(entityPrefix)_\(entity.object)")
        doc["name"] = .string(entity.name)
        doc["qos"] = .int(configuration.mqtt.qos)
        if let availability { doc.merge(availability) { a, _ in a } }
        return doc
    }

    /// The configs of one node (a Cast device or the bridge) in the configured mode, as (topic, document).
    func nodeConfigs(node: String, topicName: String, entityPrefix: String, entities: [HAEntity], device: JSONValue,
                     availability: (HAEntity) -> [String: JSONValue]?) -> [(String, JSONValue)] {
        switch discoveryMode {
        case .perEntity:
            return entities.map { entity in
                var doc = componentConfig(entity, node: node, topicName: topicName, entityPrefix: entityPrefix,
                                          availability: availability(entity))
                doc["device"] = device
                doc["origin"] = haOrigin
                return (discoveryTopic(platform: entity.platform, node: node, object: entity.object), JSONValue.object(doc).withoutNulls)
            }
        case .device:
            // Availability said once for the device when every component follows it (Home
            // Assistant gives a component the device's availability keys it does not set
            // itself): a third of a Cast device's config, ~4 KB of ~12.5 KB, and 40 MB of retained
            // configs at 10 000 devices. A component with an extra availability topic keeps its
            // own list. Not when some component follows none (the bridge's connectivity sensor).
            let perEntity = entities.map(availability)
            let shared = perEntity.allSatisfy { $0 != nil } ? perEntity.first ?? nil : nil
            var components: [String: JSONValue] = [:]
            for (entity, own) in zip(entities, perEntity) {
                var doc = componentConfig(entity, node: node, topicName: topicName, entityPrefix: entityPrefix,
                                          availability: own)
                for (key, value) in shared ?? [:] where doc[key] == value { doc.removeValue(forKey: key) }
                doc["platform"] = .string(entity.platform)
                components[entity.object] = .object(doc)
            }
            var doc: [String: JSONValue] = ["device": device, "origin": haOrigin, "cmps": .object(components),
                                            "qos": .int(configuration.mqtt.qos)]
            doc.merge(shared ?? [:]) { own, _ in own }
            return [(deviceDiscoveryTopic(node: node), JSONValue.object(doc).withoutNulls)]
        }
    }

    /// Every discovery config of one Cast device, as (topic, document).
    func configs(_ d: DeviceRecord, keep: Bool = false) -> [(String, JSONValue)] {
        let availability = haAvailability(d)
        let entities = Self.haEntities + Self.haTrackEntities(TrackOptions(d.media)) + (keep ? Self.haKeepEntities : [])
        return nodeConfigs(node: Self.node(d.id), topicName: d.topic, entityPrefix: d.topic, entities: entities,
                           device: haDeviceBlock(d), availability: { _ in availability })
    }

    /// The bridge's own discovery configs.
    var bridgeConfigs: [(String, JSONValue)] {
        let availability = bridgeAvailability
        return nodeConfigs(node: bridgeNode, topicName: "bridge", entityPrefix: bridgeNode,
                           entities: bridgeEntities, device: haBridgeDeviceBlock,
                           availability: { $0.available ? availability : nil })
    }

    /// The config topics a device has now (for clearing it).
    func configTopics(_ d: DeviceRecord, keep: Bool = false) -> [String] { enabled ? configs(d, keep: keep).map(\.0) : [] }

    /// A device with a keep (mqtt-api.md §13): a switch that turns it on and off, and its state.
    static var haKeepEntities: [HAEntity] {
        [
            HAEntity(platform: "switch", object: "keep", name: "Keep page") { t, dev in
                // The template says ON/OFF, which are not the payloads: without state_on/state_off
                // Home Assistant matches neither and the switch stays `unknown`.
                ["command_topic": .string(t.command(dev, .keep)), "payload_on": .string("on"), "payload_off": .string("off"),
                 "state_on": .string("ON"), "state_off": .string("OFF"),
                 "state_topic": .string(t.keep(dev)),
                 "value_template": .string("{{ 'OFF' if value_json.get('state') in (none, 'off') else 'ON' }}"),
                 "icon": .string("mdi:monitor-dashboard")]
            },
            HAEntity(platform: "sensor", object: "keep_state", name: "Keep state") { t, dev in
                ["state_topic": .string(t.keep(dev)), "value_template": .string(Template.field("state")),
                 "device_class": .string("enum"),
                 "options": .array(KeepState.allCases.map { .string($0.rawValue) }),
                 "json_attributes_topic": .string(t.keep(dev)),
                 "json_attributes_template": .string(
                    "{{ {'reason': value_json.get('reason'), 'detail': value_json.get('detail'), 'app': value_json.get('app'), 'since': value_json.get('since'), 'launches': value_json.get('launches')} | tojson }}"),
                 "icon": .string("mdi:monitor-eye")]
            },
        ]
    }
}

extension JSONValue {
    /// The value with every `null` object member and array element left out, recursively.
    var withoutNulls: JSONValue {
        switch self {
        case .object(let o): return .object(o.compactMapValues { $0 == .null ? nil : $0.withoutNulls })
        case .array(let a): return .array(a.compactMap { $0 == .null ? nil : $0.withoutNulls })
        default: return self
        }
    }
}
