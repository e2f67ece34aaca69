import Foundation
import Testing
@testable import Bridge

/// The Home Assistant add-on's inputs: the Supervisor's services answer and /data/options.json.
@Suite struct SupervisorTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func serviceError(_ s: String) -> SupervisorError? {
        do {
            _ = try SupervisorMQTTService.parse(bytes(s))
            return nil
        } catch {
            return error
        }
    }

    @Test func theServicesAnswerNamesTheBroker() throws {
        let answer = #"{"result": "ok", "data": {"addon": "core_mosquitto", "host": "core-mosquitto", "port": 1883, "ssl": false, "protocol": "3.1.1", "username": "addons", "password": "s3cret"}}"#
        let broker = try SupervisorMQTTService.parse(bytes(answer))
        #expect(broker == SupervisorMQTTService(host: "core-mosquitto", port: 1883, username: "addons", password: "s3cret", ssl: false))
        #expect(broker.url == "mqtt://core-mosquitto:1883")
        #expect(!broker.description.contains("s3cret"))
        var config = BridgeConfiguration()
        config.mqtt.url = Supervisor.brokerFromSupervisor
        config.mqtt.passwordFile = "/somewhere"
        broker.apply(to: &config)
        #expect(config.mqtt.url == "mqtt://core-mosquitto:1883")
        #expect(config.mqtt.username == "addons")
        #expect(config.mqtt.password == "s3cret")
        #expect(config.mqtt.passwordFile == nil)
        #expect(!ConfigurationLoader.printable(config).contains("s3cret"))
    }

    @Test func tlsAStringPortAnIPv6HostAndNoCredentials() throws {
        let tls = try SupervisorMQTTService.parse(bytes(#"{"result":"ok","data":{"host":"10.0.0.2","port":"8883","ssl":true}}"#))
        #expect(tls.url == "mqtts://10.0.0.2:8883")
        #expect(tls.username == nil && tls.password == nil)
        let v6 = try SupervisorMQTTService.parse(bytes(#"{"result":"ok","data":{"host":"fd00::2","ssl":false,"username":"","password":""}}"#))
        #expect(v6.url == "mqtt://[fd00::2]:1883")
        #expect(v6.username == nil && v6.password == nil)
    }

    @Test func badAnswersAreTypedErrors() {
        #expect(serviceError(#"{"result":"error","message":"No access to mqtt service!"}"#) == .refused("No access to mqtt service!"))
        #expect(serviceError(#"{"result":"ok"}"#) == .missing(field: "data"))
        #expect(serviceError(#"{"result":"ok","data":{"port":1883}}"#) == .missing(field: "data.host"))
        #expect(serviceError(#"{"result":"ok","data":{"host":"a b"}}"#) == .invalid(field: "data.host", reason: "must be a host name or an IP address"))
        #expect(serviceError(#"{"result":"ok","data":{"host":"x/y@z"}}"#) == .invalid(field: "data.host", reason: "must be a host name or an IP address"))
        #expect(serviceError(#"{"result":"ok","data":{"host":"h","port":70000}}"#) == .invalid(field: "data.port", reason: "must be 1-65535"))
        #expect(serviceError(#"{"result":"ok","data":{"host":"h","port":true}}"#) == .invalid(field: "data.port", reason: "wrong type"))
        #expect(serviceError(#"{"result":"ok","data":{"host":"h","ssl":"yes"}}"#) == .invalid(field: "data.ssl", reason: "wrong type"))
        #expect(serviceError(#"{"result":"ok","data":{"host":"h","password":"a\nb"}}"#) == .invalid(field: "data.password", reason: "contains control characters"))
        #expect(serviceError("not json") == .notJSON(what: "the services answer"))
        #expect(serviceError("[1, 2]") == .notJSON(what: "the services answer"))
        #expect(serviceError("") == .notJSON(what: "the services answer"))
        let huge = #"{"result":"ok","data":{"host":"h","password":""# + String(repeating: "x", count: 70_000) + #""}}"#
        #expect(serviceError(huge) == .tooLarge(what: "the services answer", limit: SupervisorMQTTService.maximumBytes))
        let long = #"{"result":"ok","data":{"host":"h","password":""# + String(repeating: "x", count: 2000) + #""}}"#
        #expect(serviceError(long) == .invalid(field: "data.password", reason: "longer than 1024 bytes"))
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        #expect(serviceError(deep) != nil)
        // No error message carries the password.
        if let e = serviceError(#"{"result":"ok","data":{"host":"h","port":0,"password":"s3cret"}}"#) {
            #expect(!"\(e)".contains("s3cret"))
        }
    }

    @Test func randomBytesNeverCrashTheParsers() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,0123456789.eE+-truefalsnl \abc"#.utf8)
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<200, using: &generator)
            let input = (0..<length).map { _ in alphabet.randomElement(using: &generator) ?? 0 }
            _ = try? SupervisorMQTTService.parse(input)
            _ = try? AddonOptions.parse(input)
        }
    }

    @Test func theOptionsFile() throws {
        let text = #"{"log_level": "debug", "base_topic": "home/cast", "web_token": "", "devices": [{"host": "192.168.1.20", "port": 8009, "name": "Kitchen"}, {"host": "tv.lan"}], "future_option": 3}"#
        let options = try AddonOptions.parse(bytes(text))
        #expect(options.logLevel == "debug")
        #expect(options.baseTopic == "home/cast")
        #expect(options.webToken == nil, "an empty token is no token")
        #expect(options.devices == [.init(host: "192.168.1.20", port: 8009, name: "Kitchen"), .init(host: "tv.lan", port: 8009)])
        #expect(try AddonOptions.parse(bytes("{}")) == AddonOptions())
    }

    @Test func badOptionsAreTypedErrors() {
        func error(_ s: String) -> SupervisorError? {
            do { _ = try AddonOptions.parse(bytes(s)); return nil } catch { return error }
        }
        #expect(error(#"{"log_level": "loud"}"#) == .invalid(field: "log_level", reason: "must be trace, debug, info, notice, warning, error or critical"))
        #expect(error(#"{"base_topic": "a/#"}"#) == .invalid(field: "base_topic", reason: ConfigurationLoader.topicPrefixRule))
        #expect(error(#"{"devices": [{"port": 8009}]}"#) == .missing(field: "devices[0].host"))
        #expect(error(#"{"devices": [{"host": "a", "port": 0}]}"#) == .invalid(field: "devices[0].port", reason: "must be 1-65535"))
        #expect(error(#"{"devices": "tv"}"#) == .invalid(field: "devices", reason: "wrong type"))
        #expect(error(#"{"devices": [{"host": "ok"}, {"host": "no way"}]}"#) == .invalid(field: "devices[1].host", reason: "must be a host name or an IP address"))
        let many = #"{"devices": ["# + Array(repeating: #"{"host":"a"}"#, count: 300).joined(separator: ",") + "]}"
        #expect(error(many) == .invalid(field: "devices", reason: "more than 256 devices"))
        #expect(error(String(repeating: " ", count: AddonOptions.maximumBytes + 1)) == .tooLarge(what: "the options file", limit: AddonOptions.maximumBytes))
    }

    @Test func optionsBecomeTheEnvironmentAndTheBrokerIsTheSupervisors() throws {
        let options = AddonOptions(logLevel: "debug", baseTopic: "home/cast", webToken: "tok")
        let env = Supervisor.environment(["SUPERVISOR_TOKEN": "x", "CAST2MQTT_WEB_LISTEN": "0.0.0.0:8199"], options: options,
                                         yaml: nil, generatedToken: "generated")
        #expect(env["CAST2MQTT_LOG_LEVEL"] == "debug")
        #expect(env["CAST2MQTT_MQTT_BASE_TOPIC"] == "home/cast")
        #expect(env["CAST2MQTT_WEB_TOKEN"] == "tok")
        #expect(env["CAST2MQTT_MQTT_URL"] == "supervisor")
        #expect(env["CAST2MQTT_WEB_INGRESS_ADDRESS"] == "172.30.32.2")
        let c = try ConfigurationLoader.load(yaml: "", environment: env)
        #expect(c.mqtt.url == "supervisor")
        #expect(c.log.level == "debug")
        #expect(c.mqtt.baseTopic == "home/cast")
        #expect(c.web.token == "tok")
        #expect(c.web.ingressAddress == "172.30.32.2")
    }

    @Test func aPageBeyondLoopbackWithoutATokenGetsAGeneratedOne() throws {
        let env = Supervisor.environment(["SUPERVISOR_TOKEN": "x", "CAST2MQTT_WEB_LISTEN": "0.0.0.0:8199"], options: AddonOptions(),
                                         yaml: nil, generatedToken: "generated")
        #expect(env["CAST2MQTT_WEB_TOKEN"] == "generated")
        #expect(throws: Never.self) { try ConfigurationLoader.load(yaml: "", environment: env) }
        let loopback = Supervisor.environment(["SUPERVISOR_TOKEN": "x", "CAST2MQTT_WEB_LISTEN": "127.0.0.1:8199"], options: AddonOptions(),
                                              yaml: nil, generatedToken: "generated")
        #expect(loopback["CAST2MQTT_WEB_TOKEN"] == nil)
        let withFile = Supervisor.environment(["CAST2MQTT_WEB_LISTEN": "0.0.0.0:8199", "CAST2MQTT_WEB_PASSWORD_FILE": "/run/t"],
                                              options: AddonOptions(), yaml: nil, generatedToken: "generated")
        #expect(withFile["CAST2MQTT_WEB_TOKEN"] == nil)
    }

    @Test func anExplicitBrokerURLIsKept() {
        #expect(Supervisor.mqttURLChosen(yaml: nil, environment: ["CAST2MQTT_MQTT_URL": "mqtt://broker:1883"]))
        #expect(!Supervisor.mqttURLChosen(yaml: nil, environment: ["CAST2MQTT_MQTT_URL": "supervisor"]))
        #expect(!Supervisor.mqttURLChosen(yaml: nil, environment: [:]))
        #expect(Supervisor.mqttURLChosen(yaml: "mqtt:\n  url: mqtt://b:1883\n", environment: [:]))
        #expect(!Supervisor.mqttURLChosen(yaml: "mqtt:\n  url: supervisor\n", environment: [:]))
        #expect(!Supervisor.mqttURLChosen(yaml: "mqtt:\n  base_topic: x\n", environment: [:]))
        #expect(!Supervisor.mqttURLChosen(yaml: "[not: yaml", environment: [:]))
        let env = Supervisor.environment(["CAST2MQTT_MQTT_URL": "mqtt://b:1883"], options: AddonOptions(), yaml: nil, generatedToken: "")
        #expect(env["CAST2MQTT_MQTT_URL"] == "mqtt://b:1883")
    }

    @Test func theSupervisorURLAndTheIngressAddressAreChecked() throws {
        let plain = try Supervisor.Endpoint("http://supervisor")
        #expect(plain == Supervisor.Endpoint(host: "supervisor", port: 80, prefix: ""))
        let test = try Supervisor.Endpoint("http://127.0.0.5:8123/core/")
        #expect(test.host == "127.0.0.5" && test.port == 8123 && test.prefix == "/core")
        #expect(try Supervisor.Endpoint("http://[::1]:99").host == "::1")
        for bad in ["https://supervisor", "supervisor", "http://:80", "http://h:0", "http://h:x", "http://a b"] {
            #expect(throws: SupervisorError.self, "\(bad)") { try Supervisor.Endpoint(bad) }
        }
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(yaml: "web:\n  ingress_address: not-an-ip\n") }
        #expect(try ConfigurationLoader.load(yaml: "web:\n  ingress_address: 127.0.0.7\n").web.ingressAddress == "127.0.0.7")
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(yaml: "mqtt:\n  url: superviser\n") }
    }
}
