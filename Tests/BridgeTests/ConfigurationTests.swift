import Foundation
import Testing
@testable import Bridge

@Suite struct ConfigurationTests {
    func error(_ yaml: String, env: [String: String] = [:]) -> ConfigurationError? {
        do {
            _ = try ConfigurationLoader.load(yaml: yaml, environment: env)
            return nil
        } catch let e as ConfigurationError {
            return e
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func defaults() throws {
        let c = try ConfigurationLoader.load(yaml: "")
        #expect(c == BridgeConfiguration())
        #expect(c.mqtt.url == "mqtt://localhost:1883")
        #expect(c.mqtt.baseTopic == "cast2mqtt")
        #expect(c.mqtt.qos == 1)
        #expect(c.mqtt.maxPayload == 65_536)
        #expect(c.mqtt.protocolVersion == "5")
        #expect(c.cast.heartbeatInterval == 5)
        #expect(c.cast.heartbeatTimeout == 15)
        #expect(c.cast.requestTimeout == 10)
        #expect(c.cast.reconnectInitial == 0.5)
        #expect(c.cast.reconnectMax == 60)
        #expect(c.cast.transferWindow == 15)
        #expect(c.cast.allowedNamespaces == ["urn:x-cast:*"])
        #expect(c.media.positionInterval == 0)
        #expect(c.homeassistant.enabled)
        #expect(c.homeassistant.discoveryPrefix == "homeassistant")
        #expect(c.homeassistant.discoveryMode == .device)
        #expect(c.stateDir == "/var/lib/cast2mqtt")
        #expect(c.log.level == "info")
        #expect(c.discovery.mdns)
    }

    static let full = """
    mqtt:
      url: mqtts://broker.example:8883
      base_topic: home/cast
      client_id: cast-bridge
      username: bridge
      password: s3cret
      password_file: null
      ca_file: /etc/ssl/ca.pem
      cert_file: null
      key_file: null
      insecure: false
      protocol: "3.1.1"
      qos: 2
      keepalive: 60
      max_payload: 32768
    discovery:
      mdns: false
      interfaces: [eth0]
      devices:
        - {host: 192.0.2.10, port: 8009, name: "Living Room TV", id: null, topic: tv}
        - host: 192.0.2.20
      include: []
      exclude: ["Bedroom"]
    cast:
      heartbeat_interval: 4
      heartbeat_timeout: 12.5
      request_timeout: 8
      reconnect: {initial: 1, max: 30}
      transfer_window: 20
      allowed_namespaces: ["urn:x-cast:com.example.*"]
    media:
      position_interval: 5
    homeassistant:
      enabled: true
      discovery_prefix: ha
      discovery: per_entity
    state_dir: /tmp/cast2mqtt
    log:
      level: debug
    """

    @Test func fullFile() throws {
        let c = try ConfigurationLoader.load(yaml: Self.full)
        #expect(c.mqtt.url == "mqtts://broker.example:8883")
        #expect(c.mqtt.baseTopic == "home/cast")
        #expect(c.mqtt.password == "s3cret")
        #expect(c.mqtt.caFile == "/etc/ssl/ca.pem")
        #expect(c.mqtt.protocolVersion == "3.1.1")
        #expect(c.mqtt.qos == 2)
        #expect(c.mqtt.maxPayload == 32768)
        #expect(!c.discovery.mdns)
        #expect(c.discovery.interfaces == ["eth0"])
        #expect(c.discovery.devices == [.init(host: "192.0.2.10", port: 8009, name: "Living Room TV", id: nil, topic: "tv"),
                                        .init(host: "192.0.2.20")])
        #expect(c.discovery.exclude == ["Bedroom"])
        #expect(c.cast.heartbeatTimeout == 12.5)
        #expect(c.cast.reconnectInitial == 1)
        #expect(c.cast.reconnectMax == 30)
        #expect(c.cast.allowedNamespaces == ["urn:x-cast:com.example.*"])
        #expect(c.media.positionInterval == 5)
        #expect(c.homeassistant.discoveryPrefix == "ha")
        #expect(c.homeassistant.discoveryMode == .perEntity)
        #expect(c.stateDir == "/tmp/cast2mqtt")
        #expect(c.log.level == "debug")
    }

    @Test func environmentOverrides() throws {
        let env = ["CAST2MQTT_MQTT_URL": "mqtt://other:1884", "CAST2MQTT_CAST_HEARTBEAT_INTERVAL": "3",
                   "CAST2MQTT_MQTT_BASE_TOPIC": "x", "CAST2MQTT_HOMEASSISTANT_ENABLED": "false",
                   "CAST2MQTT_CAST_RECONNECT_MAX": "90", "CAST2MQTT_CAST_ALLOWED_NAMESPACES": "urn:x-cast:a.*, urn:x-cast:b",
                   "CAST2MQTT_MQTT_PASSWORD": "pw", "CAST2MQTT_STATE_DIR": "/srv/state", "CAST2MQTT_MQTT_USERNAME": ""]
        let c = try ConfigurationLoader.load(yaml: Self.full, environment: env)
        #expect(c.mqtt.url == "mqtt://other:1884")
        #expect(c.cast.heartbeatInterval == 3)
        #expect(c.mqtt.baseTopic == "x")
        #expect(!c.homeassistant.enabled)
        #expect(c.cast.reconnectMax == 90)
        #expect(c.cast.allowedNamespaces == ["urn:x-cast:a.*", "urn:x-cast:b"])
        #expect(c.mqtt.password == "pw")
        #expect(c.stateDir == "/srv/state")
        #expect(c.mqtt.username == nil)
        #expect(ConfigurationLoader.environmentVariables["CAST2MQTT_CAST_RECONNECT_INITIAL"] == "cast.reconnect.initial")
        #expect(error("", env: ["CAST2MQTT_MQTT_QOS": "high"])?.path == "mqtt.qos")
        #expect(error("", env: ["CAST2MQTT_MQTT_INSECURE": "maybe"])?.path == "mqtt.insecure")
    }

    @Test func unknownKeysNameThePath() {
        #expect(error("mqtt:\n  urll: x\n")?.path == "mqtt.urll")
        #expect(error("colour: red\n")?.path == "colour")
        #expect(error("cast:\n  reconnect:\n    initial: 1\n    maximum: 3\n")?.path == "cast.reconnect.maximum")
        #expect(error("discovery:\n  devices:\n    - {host: a, prot: 1}\n")?.path == "discovery.devices[0].prot")
        #expect(error("mqtt:\n  url: x\n")?.description.contains("mqtt.url") == true)
    }

    @Test func wrongTypesNameThePath() {
        #expect(error("mqtt:\n  qos: high\n")?.path == "mqtt.qos")
        #expect(error("mqtt:\n  qos: \"1\"\n")?.path == "mqtt.qos")
        #expect(error("mqtt:\n  base_topic: 5\n")?.path == "mqtt.base_topic")
        #expect(error("cast:\n  heartbeat_interval: soon\n")?.path == "cast.heartbeat_interval")
        #expect(error("homeassistant:\n  enabled: 1\n")?.path == "homeassistant.enabled")
        #expect(error("homeassistant:\n  discovery: entity\n")?.path == "homeassistant.discovery")
        #expect(error("homeassistant:\n  media_player: true\n")?.path == "homeassistant.media_player")
        #expect(error("cast:\n  allowed_namespaces: urn:x-cast:*\n")?.path == "cast.allowed_namespaces")
        #expect(error("cast:\n  allowed_namespaces: [1]\n")?.path == "cast.allowed_namespaces[0]")
        #expect(error("mqtt: 5\n")?.path == "mqtt")
        #expect(error("- a\n- b\n")?.path == "")
        #expect(error("mqtt: [\n")?.path == "")
    }

    @Test func validation() {
        #expect(error("mqtt:\n  qos: 3\n")?.path == "mqtt.qos")
        #expect(error("mqtt:\n  url: http://x\n")?.path == "mqtt.url")
        #expect(error("mqtt:\n  protocol: 4\n")?.path == "mqtt.protocol")
        #expect(error("mqtt:\n  base_topic: a/+/b\n")?.path == "mqtt.base_topic")
        #expect(error("mqtt:\n  base_topic: $SYS/x\n")?.path == "mqtt.base_topic")
        #expect(error("homeassistant:\n  discovery_prefix: /ha\n")?.path == "homeassistant.discovery_prefix")
        // Credentials belong in username/password: the MQTT layer would refuse them at run time.
        #expect(error("mqtt:\n  url: mqtt://user:pw@broker:1883\n")?.path == "mqtt.url")
        #expect(error("mqtt:\n  url: mqtts://user@broker\n")?.path == "mqtt.url")
        #expect(error("mqtt:\n  url: mqtts://broker:8883\n") == nil)
        #expect(error("cast:\n  heartbeat_timeout: 2\n")?.path == "cast.heartbeat_timeout")
        #expect(error("cast:\n  allowed_namespaces: [\"com.x\"]\n")?.path == "cast.allowed_namespaces[0]")
        #expect(error("log:\n  level: chatty\n")?.path == "log.level")
    }

    @Test func brokerListsAndWillDelay() throws {
        let c = try ConfigurationLoader.load(yaml: "mqtt:\n  url: [mqtt://a:1883, mqtt://b:1884]\n  will_delay: 4\n")
        #expect(c.mqtt.urls == ["mqtt://a:1883", "mqtt://b:1884"])
        #expect(c.mqtt.url == "mqtt://a:1883")
        #expect(c.mqtt.willDelay == 4)
        #expect(try ConfigurationLoader.load(yaml: "").mqtt.willDelay == 10)
        #expect(try ConfigurationLoader.load(yaml: "mqtt:\n  url: mqtt://one:1\n").mqtt.urls == ["mqtt://one:1"])
        let env = try ConfigurationLoader.load(yaml: "", environment: ["CAST2MQTT_MQTT_URL": "mqtt://x:1, mqtt://y:2"])
        #expect(env.mqtt.urls == ["mqtt://x:1", "mqtt://y:2"])
        #expect(ConfigurationLoader.printable(c).contains("url: [\"mqtt://a:1883\", \"mqtt://b:1884\"]"))
        #expect(ConfigurationLoader.printable(try ConfigurationLoader.load(yaml: "")).contains("url: \"mqtt://localhost:1883\""))
        #expect(error("mqtt:\n  url: []\n")?.path == "mqtt.url")
        #expect(error("mqtt:\n  url: [mqtt://a, 5]\n")?.path == "mqtt.url[1]")
        #expect(error("mqtt:\n  url: [mqtt://a, http://b]\n")?.path == "mqtt.url[1]")
        #expect(error("mqtt:\n  url: [mqtt://a, mqtts://b]\n")?.path == "mqtt.url[1]")
        #expect(error("mqtt:\n  url: [mqtt://a, \"mqtt://u:p@b\"]\n")?.path == "mqtt.url[1]")
        #expect(error("mqtt:\n  url: [supervisor, mqtt://b]\n")?.path == "mqtt.url[0]")
        #expect(error("mqtt:\n  will_delay: -1\n")?.path == "mqtt.will_delay")
        #expect(error("mqtt:\n  will_delay: 3601\n")?.path == "mqtt.will_delay")
    }

    @Test func secretsMasked() throws {
        var c = try ConfigurationLoader.load(yaml: Self.full)
        c.mqtt.url = "mqtt://user:hunter2@broker:1883"
        let text = ConfigurationLoader.printable(c)
        #expect(!text.contains("s3cret"))
        #expect(!text.contains("hunter2"))
        #expect(text.contains("password: \"***\""))
        #expect(text.contains("mqtt://user:***@broker:1883"))
        #expect(text.contains("  qos: 2"))
        #expect(text.contains("reconnect.initial: 1.0"))
        #expect(text.contains("state_dir: \"/tmp/cast2mqtt\""))
    }

    @Test func globs() {
        #expect(globMatches("urn:x-cast:*", "urn:x-cast:com.example"))
        #expect(globMatches("urn:x-cast:com.?xample", "urn:x-cast:com.example"))
        #expect(!globMatches("urn:x-cast:com.example.*", "urn:x-cast:org.example.a"))
        #expect(globMatches("*", ""))
        #expect(!globMatches("a*b", "acc"))
    }
}

@Suite struct ExampleFileTests {
    @Test func exampleConfigParsesToDefaults() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("example-config.yaml")
        let c = try ConfigurationLoader.load(path: url.path, environment: [:])
        #expect(c == BridgeConfiguration())
    }

    @Test func everyKeyIsDocumented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let docs = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let example = try String(contentsOf: root.appendingPathComponent("example-config.yaml"), encoding: .utf8)
        for (env, path) in ConfigurationLoader.environmentVariables {
            #expect(docs.contains(env), "\(env)")
            #expect(docs.contains("`\(path)`"), "\(path)")
            #expect(example.contains(env), "\(env)")
        }
    }
}
