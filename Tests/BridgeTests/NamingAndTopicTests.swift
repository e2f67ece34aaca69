import Testing
@testable import Bridge

@Suite struct NamingTests {
    @Test func slugs() {
        #expect(TopicNameRegistry.slug("Living Room TV") == "living_room_tv")
        #expect(TopicNameRegistry.slug("  Küche -- Speaker!! ") == "k_che_speaker")
        #expect(TopicNameRegistry.slug("___") == "")
        #expect(TopicNameRegistry.slug("A+B#C/D$E") == "a_b_c_d_e")
        #expect(TopicNameRegistry.slug("Nest Hub (2)") == "nest_hub_2")
    }

    @Test func collisionsGetIdSuffix() {
        var r = TopicNameRegistry()
        #expect(r.assign(id: "aaaa1111bbbb2222cccc3333dddd4444", friendlyName: "Kitchen") == "kitchen")
        #expect(r.assign(id: "beef1111bbbb2222cccc3333dddd4444", friendlyName: "kitchen!") == "kitchen_beef")
        #expect(r.name(for: "aaaa1111bbbb2222cccc3333dddd4444") == "kitchen")
        #expect(r.device(named: "kitchen_beef") == "beef1111bbbb2222cccc3333dddd4444")
    }

    @Test func namesNeverChange() {
        var r = TopicNameRegistry()
        #expect(r.assign(id: "aaaa", friendlyName: "Kitchen") == "kitchen")
        #expect(r.assign(id: "aaaa", friendlyName: "Renamed") == "kitchen")
    }

    @Test func reservedAndEmpty() {
        var r = TopicNameRegistry()
        #expect(r.assign(id: "c0ffee00", friendlyName: "Bridge") == "bridge_c0ff")
        #expect(r.assign(id: "dead0000", friendlyName: "!!!") == "device_dead")
        #expect(r.assign(id: "1234abcd", friendlyName: "x", override: "bridge") == "bridge_1234")
    }

    @Test func overrides() {
        var r = TopicNameRegistry()
        #expect(r.assign(id: "a1", friendlyName: "Living Room TV", override: "tv") == "tv")
        #expect(r.assign(id: "b2", friendlyName: "x", override: "My TV/2") == "my_tv_2")
        #expect(r.assign(id: "c3", friendlyName: "x", override: "$sys") == "sys")
        #expect(!TopicNameRegistry.isValidTopicName("a+b"))
        #expect(!TopicNameRegistry.isValidTopicName("a#"))
        #expect(!TopicNameRegistry.isValidTopicName("$x"))
        #expect(TopicNameRegistry.isValidTopicName("Living-Room"))
    }
}

@Suite struct TopicGrammarTests {
    let g = TopicGrammar(base: "cast2mqtt", discoveryPrefix: "homeassistant")

    @Test func validTopics() {
        #expect(g.parse("cast2mqtt/tv/command/play") == .deviceCommand(device: "tv", name: "play"))
        #expect(g.parse("cast2mqtt/tv/command/send/urn:x-cast:com.example.app") == .deviceSend(device: "tv", namespace: "urn:x-cast:com.example.app"))
        #expect(g.parse("cast2mqtt/tv/command/send/urn:x-cast:a/b") == .deviceSend(device: "tv", namespace: "urn:x-cast:a/b"))
        #expect(g.parse("cast2mqtt/tv/command/send") == .deviceCommand(device: "tv", name: "send"))
        #expect(g.parse("cast2mqtt/bridge/request/health_check") == .bridgeRequest(name: "health_check"))
        #expect(g.parse("homeassistant/status") == .homeAssistantStatus)
    }

    @Test func invalidTopics() {
        // Everything `command/#` delivers is a command (an unknown one gets `unknown_command`).
        #expect(g.parse("cast2mqtt/tv/command/play/extra") == .deviceCommand(device: "tv", name: "play/extra"))
        #expect(g.parse("cast2mqtt/tv/command/") == .deviceCommand(device: "tv", name: ""))
        #expect(g.parse("cast2mqtt/tv/command") == .deviceCommand(device: "tv", name: ""))
        for t in ["cast2mqtt/tv/state",
                  "other/tv/command/play", "cast2mqtt//command/play", "cast2mqtt/bridge/request", "cast2mqtt/bridge/request/a/b",
                  "cast2mqtt/bridge/state", "cast2mqtt", "cast2mqttx/tv/command/play", "cast2mqtt/tv/response"] {
            #expect(g.parse(t) == nil, "\(t)")
        }
    }

    /// The one-pass parser against the level-splitting one it replaced (kept here as the
    /// reference): every topic built from the grammar's own words, empty levels and non-ASCII
    /// text, up to six levels, under bases with and without `/` and non-ASCII.
    @Test func parseAgreesWithTheLevelSplittingReference() {
        let words = ["cast2mqtt", "home", "cast", "bridge", "request", "command", "send", "status", "homeassistant",
                     "tv", "", "play", "é", "urn:x-cast:a", String(repeating: "n", count: 64), String(repeating: "n", count: 65),
                     "bridgé", "commandx", "x"]
        var random = SystemRandomNumberGenerator()
        var checked = 0
        for (base, prefix) in [("cast2mqtt", "homeassistant"), ("home/cast", "ha/x"), ("cäst", "homeassistant")] {
            let grammar = TopicGrammar(base: base, discoveryPrefix: prefix)
            var topics = ["\(prefix)/status", "\(prefix)/status/x", prefix, base, "\(base)/", "\(base)//", "\(base)x/tv/command/play"]
            for _ in 0..<4000 {
                let levels = (0..<Int.random(in: 0...5, using: &random)).map { _ in words.randomElement(using: &random)! }
                topics.append(([base] + levels).joined(separator: "/"))
            }
            for topic in topics {
                #expect(grammar.parse(topic) == Self.reference(grammar, topic), "\(topic)")
                checked += 1
            }
        }
        #expect(checked > 12000)
    }

    /// The parser before it went one-pass (split into levels, then matched).
    static func reference(_ g: TopicGrammar, _ topic: String) -> IncomingTopic? {
        if topic == "\(g.discoveryPrefix)/status" { return .homeAssistantStatus }
        let prefix = g.base + "/"
        guard topic.hasPrefix(prefix) else { return nil }
        let levels = topic.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard levels.count >= 2, !levels[0].isEmpty else { return nil }
        if levels[0] == "bridge" {
            guard levels.count == 3, levels[1] == "request", !levels[2].isEmpty, levels[2].utf8.count <= 64 else { return nil }
            return .bridgeRequest(name: levels[2])
        }
        guard levels[1] == "command" else { return nil }
        if levels.count >= 3, levels[2] == "send" {
            guard levels.count >= 4 else { return .deviceCommand(device: levels[0], name: "send") }
            return .deviceSend(device: levels[0], namespace: levels[3...].joined(separator: "/"))
        }
        return .deviceCommand(device: levels[0], name: levels.dropFirst(2).joined(separator: "/"))
    }

    @Test func subscriptions() {
        #expect(g.subscriptions(homeAssistant: true) == ["cast2mqtt/+/command/#", "cast2mqtt/bridge/request/+", "homeassistant/status"])
        #expect(g.subscriptions(homeAssistant: false).count == 2)
    }

    @Test func isoTimes() {
        #expect(iso8601(t0) == "2027-01-15T08:00:00.000Z")
        #expect(iso8601(t0.addingTimeInterval(0.1234)) == "2027-01-15T08:00:00.123Z")
        #expect(iso8601(.init(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(iso8601(.init(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000Z")
    }
}
