import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndRecoveryTests {
    @Test func brokerRestartRepublishesRetainedState() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            _ = try await h.command("living_room_tv", "volume", "35")
            // The broker loses everything (no persistence), then comes back on the same port.
            h.broker.stop()
            try h.broker.start()
            // The bridge reconnects and republishes every retained topic with the current state;
            // the observer reconnects too and sees them.
            #expect(await waitUntil {
                h.observer.messages(on: "cast2mqtt/bridge/state").filter { String(decoding: $0.payload, as: UTF8.self) == "online" }.count >= 2
            }, "bridge state not republished; log:\n\(h.log.suffix(3000))")
            #expect(await waitUntil { h.observer.messages(on: "cast2mqtt/living_room_tv/availability").count >= 2 })
            let receiver = await h.observer.waitJSON("cast2mqtt/living_room_tv/receiver") {
                abs(($0["volume"]?["level"]?.doubleValue ?? 0) - 0.35) < 0.01
            }
            #expect(receiver != nil)
            // Commands work after the broker came back.
            let reply1 = try await h.command("living_room_tv", "volume", "20")
            #expect(reply1.status == "ok")
        }
    }

    @Test func homeAssistantOnlineRepublishesDiscovery() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            func configs() -> [MQTTMessage] {
                h.observer.messages.filter { $0.topic.hasPrefix("homeassistant/") && $0.topic.hasSuffix("/config") }
            }
            // The device's and the bridge's configs.
            #expect(await waitUntil { Set(configs().map(\.topic)).count >= 2 }, "\(configs().map(\.topic))")
            let topics = Set(configs().map(\.topic))
            try h.client.publish(MQTTMessage(topic: "homeassistant/status", payload: Array("online".utf8), qos: .atLeastOnce))
            // Each is published again (a second time: a late first one counts once).
            #expect(await waitUntil {
                let all = configs()
                return topics.allSatisfy { topic in all.filter { $0.topic == topic }.count >= 2 }
            }, "\(configs().map(\.topic)); log:\n\(h.log.suffix(3000))")
        }
    }

    @Test func deviceRestartRejoinsAndPublishesFreshState() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            _ = try await h.command("living_room_tv", "load", "http://127.0.0.1/media/song.mp3")
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state") { $0 == "playing" } != nil)
            // A drop: the bridge rejoins the running session without relaunching or reloading.
            await h.devices[0].dropConnections()
            #expect(await waitUntil {
                h.observer.messages(on: "cast2mqtt/living_room_tv/event").contains {
                    String(decoding: $0.payload, as: UTF8.self).contains("reconnected")
                }
            })
            #expect(h.devices[0].counters.launches == 1)
            #expect(h.devices[0].counters.loads == 1)
            #expect(h.observer.last("cast2mqtt/living_room_tv/state") == "playing")
            // A reboot: the app is gone; the bridge must not keep stale "playing" state.
            try await h.devices[0].restart(refuseFor: .seconds(1))
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state", timeout: .seconds(20)) { $0 == "off" } != nil)
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/availability", timeout: .seconds(20)) { $0 == "online" } != nil)
        }
    }

    @Test func bridgeRestartJoinsTheRunningSessionQuietly() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            _ = try await h.command("living_room_tv", "load", "http://127.0.0.1/media/song.mp3")
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state") { $0 == "playing" } != nil)
            // Written within a second of the change (SavePacer).
            #expect(await waitUntil {
                FileManager.default.fileExists(atPath: h.directory + "/state/sessions.json")
            })
            h.stopDaemon()
            #expect(await h.observer.wait("cast2mqtt/bridge/state") { $0 == "offline" } != nil)
            let eventsBefore = h.observer.messages(on: "cast2mqtt/living_room_tv/event").count
            try h.startDaemon()
            #expect(await h.observer.wait("cast2mqtt/bridge/state") { $0 == "online" } != nil)
            try await h.waitOnline(["living_room_tv"])
            #expect(await h.observer.wait("cast2mqtt/living_room_tv/state") { $0 == "playing" } != nil)
            // A command after the join is carried out after it: a relaunch, reload or event
            // decided on joining has happened by its answer.
            let reply2 = try await h.command("living_room_tv", "pause", "")
            #expect(reply2.status == "ok")
            // Joined: no relaunch, no reload, and no new session_started for a session it already knew.
            #expect(h.devices[0].counters.launches == 1)
            #expect(h.devices[0].counters.loads == 1)
            let newEvents = h.observer.messages(on: "cast2mqtt/living_room_tv/event").dropFirst(eventsBefore)
                .map { String(decoding: $0.payload, as: UTF8.self) }
            #expect(!newEvents.contains { $0.contains("session_started") }, "\(newEvents)")
        }
    }

    @Test func commandSentWhileTheBridgeWasDownIsCarriedOut() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            h.stopDaemon()
            #expect(await h.observer.wait("cast2mqtt/bridge/state") { $0 == "offline" } != nil)
            // The broker keeps the bridge's persistent session and queues this QoS 1 command.
            try h.client.publish(MQTTMessage(topic: "cast2mqtt/living_room_tv/command/volume",
                                             payload: Array(#"{"id": "while-down", "percent": 15}"#.utf8), qos: .atLeastOnce))
            // The broker has it (and queued it for the bridge's session) once the observer got it.
            #expect(await waitUntil {
                h.observer.messages(on: "cast2mqtt/living_room_tv/command/volume").contains {
                    String(decoding: $0.payload, as: UTF8.self).contains("while-down")
                }
            }, "the observer never saw the command")
            try h.startDaemon()
            // Delivered before the device is even connected; held until it is online, then done.
            let answered = await waitUntil {
                h.observer.messages(on: "cast2mqtt/living_room_tv/response").contains {
                    String(decoding: $0.payload, as: UTF8.self).contains("while-down")
                }
            }
            #expect(answered, "no response; log:\n\(h.log.suffix(3000))")
            let response = h.observer.messages(on: "cast2mqtt/living_room_tv/response").last {
                String(decoding: $0.payload, as: UTF8.self).contains("while-down")
            }.flatMap { try? CastJSON.decode(JSONValue.self, from: $0.payload) }
            #expect(response?.status == "ok", "\(String(describing: response))")
            let level = h.devices[0].received(namespace: CastNamespace.receiver, type: "SET_VOLUME").last?.json?["volume"]?["level"]?.doubleValue
            #expect(level.map { abs($0 - 0.15) < 0.001 } == true)
        }
    }

    @Test func garbageFromTheDeviceIsSurvived() async throws {
        try await withBridge(devices: ["Living Room TV"]) { h in
            try await h.waitOnline(["living_room_tv"])
            await h.devices[0].sendGarbageFrame()
            #expect(await waitUntil {
                h.observer.messages(on: "cast2mqtt/living_room_tv/event").contains {
                    String(decoding: $0.payload, as: UTF8.self).contains("reconnected")
                }
            })
            let reply3 = try await h.command("living_room_tv", "volume", "10")
            #expect(reply3.status == "ok")
            #expect(h.daemon?.isRunning == true)
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct CommandLineTests {
    private func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("cast2mqtt"))
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    private func configFile(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "cast2mqtt-cli-\(UUID().uuidString.prefix(8)).yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func checkConfigMasksSecretsAndAppliesEnvironment() throws {
        let path = try configFile("mqtt:\n  url: mqtt://127.0.0.1:1883\n  username: me\n  password: hunter2\n")
        let (status, output) = try run(["check-config", "--config", path], environment: ["CAST2MQTT_MQTT_BASE_TOPIC": "casts"])
        #expect(status == 0, "\(output)")
        #expect(!output.contains("hunter2"))
        #expect(output.contains("casts"))
    }

    @Test func checkConfigRejectsUnknownKeysWithTheirPath() throws {
        let path = try configFile("mqtt:\n  urll: mqtt://x\n")
        let (status, output) = try run(["check-config", "--config", path])
        #expect(status != 0)
        #expect(output.contains("mqtt.urll"), "\(output)")
        let typed = try configFile("cast:\n  heartbeat_interval: often\n")
        let (status2, output2) = try run(["check-config", "--config", typed])
        #expect(status2 != 0)
        #expect(output2.contains("cast.heartbeat_interval"), "\(output2)")
    }

    @Test func checkConfigReadsTheDeviceAuthRoots() throws {
        let missing = NSTemporaryDirectory() + "cast2mqtt-no-such-root-\(UUID().uuidString.prefix(8)).pem"
        let (status, output) = try run(["check-config", "--config", try configFile("cast:\n  device_auth_roots: [\(missing)]\n")])
        #expect(status == 2, "\(output)")
        #expect(output.contains("cast.device_auth_roots") && output.contains(missing), "\(output)")
        let garbage = try configFile("not a certificate\n")
        let (status2, output2) = try run(["check-config", "--config", try configFile("cast:\n  device_auth_roots: [\(garbage)]\n")])
        #expect(status2 == 2, "\(output2)")
        #expect(output2.contains("cast.device_auth_roots"), "\(output2)")
    }

    @Test func checkConfigRejectsOutOfRangeValuesWithExitCode2() throws {
        for (yaml, path, range) in [("cast:\n  request_timeout: 1e300\n", "cast.request_timeout", "0.1-3600"),
                                    ("cast:\n  heartbeat_interval: -1\n", "cast.heartbeat_interval", "0.1-3600"),
                                    ("cast:\n  reconnect: {initial: 0.5, max: 1e19}\n", "cast.reconnect.max", "0.01-86400"),
                                    ("media:\n  position_interval: .inf\n", "media.position_interval", "a number"),
                                    ("mqtt:\n  keepalive: 99999999999999999999\n", "mqtt.keepalive", "out of range")] {
            let file = try configFile(yaml)
            let (status, output) = try run(["check-config", "--config", file])
            #expect(status == 2, "\(yaml): \(output)")
            #expect(output.contains(path) && output.contains(range), "\(yaml): \(output)")
            #expect(!output.contains("Fatal error"), "\(output)")
        }
    }

    /// deploy/cast2mqtt.service passes `systemd-analyze verify` without a single warning (it
    /// exits 0 even on unparsable lines, so its output must be empty), with ExecStart pointing at
    /// the built binary. Skipped only where systemd-analyze does not exist.
    @Test func systemdUnitVerifies() throws {
        guard let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        }) else { return }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let unit = try String(contentsOfFile: root.path + "/deploy/cast2mqtt.service", encoding: .utf8)
        #expect(unit.contains("Type=notify") && unit.contains("WatchdogSec="))
        let dir = NSTemporaryDirectory() + "cast2mqtt-unit-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/cast2mqtt.service"
        // The man page it names comes with the Debian package; `verify` would look for it here.
        let checked = unit.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("Documentation=man:") }.joined(separator: "\n")
        try checked.replacingOccurrences(of: "/usr/local/bin/cast2mqtt", with: try builtExecutable("cast2mqtt"))
            .write(toFile: path, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: analyze)
        process.arguments = ["verify", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(output)")
    }

    @Test func versionAndDevicesTable() throws {
        let (status, output) = try run(["--version"])
        #expect(status == 0)
        #expect(output.contains("."))
        let path = try configFile("discovery:\n  mdns: false\n  devices:\n    - {host: 127.0.0.1, port: 9, name: \"Static TV\"}\n")
        let (status2, table) = try run(["devices", "--config", path, "--seconds", "0.5"])
        #expect(status2 == 0, "\(table)")
        #expect(table.contains("Static TV"))
        #expect(table.contains("static"))
    }
}
