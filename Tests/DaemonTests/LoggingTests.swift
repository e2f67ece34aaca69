import Bridge
import CastProtocol
import Logging
import Testing

@testable import cast2mqtt

/// Logs by component (issue #18): a level per component over `log.level`, one device's Cast
/// traffic at trace while the others stay at their level, changes at run time, text and JSON.
@Suite struct LoggingTests {
    func levels(_ configure: (inout BridgeConfiguration.Log) -> Void) -> LogLevels {
        var log = BridgeConfiguration.Log()
        configure(&log)
        return LogLevels(log)
    }

    func logger(_ label: String, _ control: LogControl) -> Logger {
        Logger(label: label) { ComponentLogHandler(label: $0, control: control, tail: nil) }
    }

    @Test func labelsNameComponentsAndDevices() {
        #expect(LogLabel.parse("cast2mqtt.mqtt") == ("mqtt", nil))
        #expect(LogLabel.parse(LogLabel.device("0123")) == ("cast", "0123"))
        #expect(LogLabel.parse("cast2mqtt") == ("bridge", nil))
        #expect(LogLabel.parse("cast2mqtt.nonsense") == ("bridge", nil))
        #expect(LogLabel.parse("somebody.else") == ("bridge", nil))
    }

    @Test func oneTracedDeviceLeavesTheOthersAtTheirLevel() {
        let control = LogControl()
        var config = levels { $0.level = "info"; $0.levels = ["mqtt": "warning"] }
        config.deviceIDs = ["tv"]
        control.apply(config)
        let tv = logger(LogLabel.device("tv"), control)
        let kitchen = logger(LogLabel.device("kitchen"), control)
        #expect(tv.logLevel == .trace)
        #expect(kitchen.logLevel == .info, "another device stays at the cast component's level")
        #expect(logger(LogLabel.component("cast"), control).logLevel == .info)
        #expect(logger(LogLabel.component("mqtt"), control).logLevel == .warning)
        #expect(logger(LogLabel.component("web"), control).logLevel == .info)

        // At run time: the loggers the components already hold follow.
        config.components["cast"] = "debug"
        config.deviceIDs = ["kitchen"]
        control.apply(config)
        #expect(tv.logLevel == .debug)
        #expect(kitchen.logLevel == .trace)
        // A level set on a logger itself wins (the `devices` subcommand's quiet logger).
        var quiet = logger(LogLabel.component("discovery"), control)
        quiet.logLevel = .warning
        #expect(quiet.logLevel == .warning)
    }

    @Test func textAndJSONLines() throws {
        let text = LogFormat.text(time: "2026-01-01T00:00:00.000Z", level: .info, label: "cast2mqtt.cast",
                                  metadata: ["cast.device": "TV", "a": "1"], message: "connected")
        #expect(text == "2026-01-01T00:00:00.000Z info cast2mqtt.cast: a=1 cast.device=TV connected")
        let line = LogFormat.json(time: "2026-01-01T00:00:00.000Z", level: .debug, label: "cast2mqtt.mqtt",
                                  metadata: ["mqtt.topic": "x/y", "message": "shadow", "list": .array(["1"])], message: "say \"hi\"\n")
        #expect(!line.contains("\n"), "one line")
        let doc = try CastJSON.decode(JSONValue.self, from: line)
        #expect(doc["time"] == .string("2026-01-01T00:00:00.000Z"))
        #expect(doc["level"] == .string("debug"))
        #expect(doc["logger"] == .string("cast2mqtt.mqtt"))
        #expect(doc["message"] == .string("say \"hi\"\n"))
        #expect(doc["mqtt.topic"] == .string("x/y"))
        #expect(doc["metadata.message"] == .string("shadow"), "metadata never replaces a field")
        #expect(doc["list"] == .array([.string("1")]))
    }

    @Test func theCoreHandsOutTheLevelsInForce() {
        var config = BridgeConfiguration()
        config.log.format = "json"
        let core = BridgeCore(configuration: config, startedAt: .now)
        let control = LogControl()
        control.apply(core.logLevels)
        #expect(control.json)
    }
}
