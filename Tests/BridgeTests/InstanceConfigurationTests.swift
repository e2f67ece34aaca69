import Foundation
import Testing
@testable import Bridge

/// `instance`, `primary`, `prefer` (mqtt-api.md §10).
@Suite struct InstanceConfigurationTests {
    @Test func unsetIsSingleMode() throws {
        let c = try ConfigurationLoader.load(yaml: "")
        #expect(c.instance == nil)
        #expect(c.mqtt.clientID == "cast2mqtt")
    }

    @Test func anInstanceGetsItsOwnClientIdUnlessOneIsSet() throws {
        let c = try ConfigurationLoader.load(yaml: "instance: upstairs\n")
        #expect(c.instance == "upstairs")
        #expect(c.mqtt.clientID == "cast2mqtt-upstairs")
        let d = try ConfigurationLoader.load(yaml: "instance: upstairs\nmqtt: {client_id: mine}\n")
        #expect(d.mqtt.clientID == "mine")
        let e = try ConfigurationLoader.load(yaml: "", environment: ["CAST2MQTT_INSTANCE": "b-2"])
        #expect(e.instance == "b-2")
    }

    @Test func autoIsTheHostName() throws {
        let c = try ConfigurationLoader.load(yaml: "instance: auto\n", environment: ["CAST2MQTT_HOSTNAME": "nas.home.lan"])
        #expect(c.instance == "nas")
        let d = try ConfigurationLoader.load(yaml: "instance: auto\n", environment: ["CAST2MQTT_HOSTNAME": "my box"])
        #expect(d.instance == "my-box")
    }

    @Test func preferAndPrimary() throws {
        let c = try ConfigurationLoader.load(yaml: """
            instance: a
            primary: b
            prefer:
              living_room_tv: [b, a]
              Kitchen: c
            """)
        #expect(c.primary == "b")
        #expect(c.prefer == ["living_room_tv": ["b", "a"], "Kitchen": ["c"]])
        #expect(ConfigurationLoader.printable(c).contains("\"living_room_tv\": [\"b\", \"a\"]"))
        #expect(try ConfigurationLoader.load(yaml: ConfigurationLoader.printable(c)) == c)
    }

    @Test func badValuesNameTheirKey() {
        func error(_ yaml: String) -> String? {
            do { _ = try ConfigurationLoader.load(yaml: yaml); return nil } catch { return (error as? ConfigurationError)?.path }
        }
        #expect(error("instance: a/b\n") == "instance")
        #expect(error("instance: \"\"\n") == "instance")
        #expect(error("instance: a\nprimary: \"x y\"\n") == "primary")
        #expect(error("instance: a\nprefer: {tv: [\"+\"]}\n") == "prefer.tv")
        #expect(error("instance: a\nprefer: [tv]\n") == "prefer")
        #expect(error("primary: a\n") == "primary")
        #expect(error("prefer: {tv: [a]}\n") == "prefer")
    }
}
