import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

private let tv = "living_room_tv"
private let kitchen = "kitchen"

/// The daemon end to end: a real mosquitto, simulated devices, an MQTT client driving it.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndCommandTests {
    @Test func startupPublishesBridgeDevicesAndDiscovery() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv, kitchen])
            #expect(await h.observer.wait("cast2mqtt/bridge/state") { $0 == "online" } != nil)
            let devices = await h.observer.waitJSON("cast2mqtt/bridge/devices") { ($0.arrayValue?.count ?? 0) == 2 }
            let tvEntry = devices?.arrayValue?.first { $0["topic"]?.stringValue == tv }
            #expect(tvEntry?["id"]?.stringValue == h.devices[0].id)
            #expect(tvEntry?["source"]?.stringValue == "static")
            #expect(tvEntry?["port"]?.intValue == h.devices[0].port)
            let info = await h.observer.waitJSON(h.topic(tv, "info")) { $0["name"]?.stringValue == "Living Room TV" }
            #expect(info?["id"]?.stringValue == h.devices[0].id)
            #expect(await h.observer.wait(h.topic(tv, "state")) { $0 == "off" } != nil)
            let receiver = await h.observer.waitJSON(h.topic(tv, "receiver")) { $0["volume"] != nil }
            #expect(receiver?["app_id"]?.isNull == true)
            // Home Assistant discovery: one device config with every entity in `cmps`.
            let id = h.devices[0].id
            let config = await h.observer.waitJSON("homeassistant/device/cast2mqtt_\(id)/config") { _ in true }
            let state = config?["cmps"]?["state"]
            #expect(state?["unique_id"]?.stringValue == "cast2mqtt_\(id)_state")
            // The device's availability is said once for all its components.
            #expect(config?["availability_mode"]?.stringValue == "all" && state?["availability"] == nil)
            #expect((config?["cmps"]?.objectValue?.count ?? 0) >= 12, "discovery config: \(String(describing: config))")
        }
    }

    @Test func loadPlaybackAndMediaDocument() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv])
            let device = h.devices[0]

            var r = try await h.command(tv, "load", "http://127.0.0.1/media/song.mp3")
            #expect(r.status == "ok", "\(r)")
            #expect(r["command"]?.stringValue == "load")
            #expect(device.received(namespace: CastNamespace.receiver, type: "LAUNCH").count == 1)
            let load = try #require(device.received(namespace: CastNamespace.media, type: "LOAD").last?.json)
            #expect(load["media"]?["contentId"]?.stringValue == "http://127.0.0.1/media/song.mp3")
            #expect(load["media"]?["contentType"]?.stringValue == "audio/mpeg")
            #expect(await h.observer.wait(h.topic(tv, "state")) { $0 == "playing" } != nil)
            let media = await h.observer.waitJSON(h.topic(tv, "media")) { $0["state"]?.stringValue == "playing" }
            #expect(media?["content_id"]?.stringValue == "http://127.0.0.1/media/song.mp3")
            #expect(media?["app_id"]?.stringValue == CastAppID.defaultMediaReceiver)
            #expect(media?["supported_commands"]?.arrayValue?.contains(.string("playback_rate")) == true)

            r = try await h.command(tv, "pause", "")
            #expect(r.status == "ok")
            #expect(await h.observer.wait(h.topic(tv, "state")) { $0 == "paused" } != nil)
            r = try await h.command(tv, "play", "")
            #expect(r.status == "ok")
            r = try await h.command(tv, "toggle", "")
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.media, type: "PAUSE").count == 2)

            r = try await h.command(tv, "seek", "42")
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.media, type: "SEEK").last?.json?["currentTime"]?.doubleValue == 42)
            r = try await h.command(tv, "seek", "-10")
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.media, type: "SEEK").last?.json?["relativeTime"]?.doubleValue == -10)
            r = try await h.jsonCommand(tv, "seek", ["position": .number(5), "resume": .string("pause")])
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.media, type: "SEEK").last?.json?["resumeState"]?.stringValue == "PLAYBACK_PAUSE")

            r = try await h.command(tv, "rate", "1.5")
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.media, type: "SET_PLAYBACK_RATE").last?.json?["playbackRate"]?.doubleValue == 1.5)
            #expect(await h.observer.waitJSON(h.topic(tv, "media")) { $0["playback_rate"]?.doubleValue == 1.5 } != nil)

            r = try await h.command(tv, "stop", "")
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.media, type: "STOP").count == 1)
            r = try await h.command(tv, "quit", "")
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.receiver, type: "STOP").count == 1)
            #expect(await h.observer.wait(h.topic(tv, "state")) { $0 == "off" } != nil)
        }
    }

    @Test func volumeMuteLaunchRefreshAndQueue() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv])
            let device = h.devices[0]
            func lastVolume() -> JSONValue? { device.received(namespace: CastNamespace.receiver, type: "SET_VOLUME").last?.json?["volume"] }

            var r = try await h.command(tv, "volume", "40")
            #expect(r.status == "ok", "\(r)")
            #expect(abs((lastVolume()?["level"]?.doubleValue ?? 0) - 0.4) < 0.001)
            #expect(await h.observer.waitJSON(h.topic(tv, "receiver")) { abs(($0["volume"]?["level"]?.doubleValue ?? 0) - 0.4) < 0.01 } != nil)
            r = try await h.command(tv, "volume", "+5")
            #expect(r.status == "ok")
            #expect(abs((lastVolume()?["level"]?.doubleValue ?? 0) - 0.45) < 0.001)
            r = try await h.jsonCommand(tv, "volume", ["level": .number(0.2)])
            #expect(r.status == "ok")
            r = try await h.command(tv, "mute", "on")
            #expect(r.status == "ok")
            #expect(lastVolume()?["muted"]?.boolValue == true)
            r = try await h.command(tv, "mute", "toggle")
            #expect(r.status == "ok")
            #expect(lastVolume()?["muted"]?.boolValue == false)

            r = try await h.command(tv, "launch", SimulatedAppID.echo)
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.receiver, type: "LAUNCH").last?.json?["appId"]?.stringValue == SimulatedAppID.echo)
            #expect(await h.observer.wait(h.topic(tv, "state")) { $0 == "idle" } != nil)

            let before = device.received(namespace: CastNamespace.receiver, type: "GET_STATUS").count
            r = try await h.command(tv, "refresh", "")
            #expect(r.status == "ok")
            #expect(device.received(namespace: CastNamespace.receiver, type: "GET_STATUS").count > before)

            r = try await h.jsonCommand(tv, "load", ["queue": .array([
                .object(["url": .string("http://127.0.0.1/q/1.mp3")]),
                .object(["url": .string("http://127.0.0.1/q/2.mp3")]),
            ])])
            #expect(r.status == "ok", "\(r)")
            #expect(device.received(namespace: CastNamespace.media, type: "QUEUE_LOAD").count == 1)
            r = try await h.command(tv, "next", "")
            #expect(r.status == "ok", "\(r)")
            r = try await h.command(tv, "previous", "")
            #expect(r.status == "ok", "\(r)")
            let queueTypes = device.received(namespace: CastNamespace.media).compactMap(\.type)
            #expect(queueTypes.contains("QUEUE_NEXT") || queueTypes.contains("QUEUE_UPDATE"))
        }
    }

    @Test func customNamespacesBothWays() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv])
            let device = h.devices[0]
            let ns = SimulatedAppID.echoNamespace

            var r = try await h.jsonCommand(tv, "send", ["namespace": .string(ns), "data": .object(["hello": .string("world")]),
                                                        "app_id": .string(SimulatedAppID.echo), "reply": .bool(true)])
            #expect(r.status == "ok", "\(r)")
            #expect(r["data"]?["hello"]?.stringValue == "world" || r["data"]?["data"]?["hello"]?.stringValue == "world", "\(r)")
            // The short form: topic command/send/<namespace>, payload as is; the echo comes back on message/<ns>.
            r = try await h.command(tv, "send/\(ns)", "plain text body")
            #expect(r.status == "ok", "\(r)")
            #expect(device.received(namespace: ns).last?.payload == .string("plain text body"))
            #expect(await h.observer.wait(h.topic(tv, "message/\(ns)")) { $0 == "plain text body" } != nil)
            // Unsolicited app messages are published too.
            _ = await device.pushAppMessage(payload: .string(#"{"pushed":1}"#))
            #expect(await h.observer.wait(h.topic(tv, "message/\(ns)")) { $0.contains("pushed") } != nil)
        }
    }

    @Test func badInputIsRefusedWithoutTouchingTheDevice() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv])
            let device = h.devices[0]
            _ = try await h.command(tv, "load", "http://127.0.0.1/media/song.mp3")
            func sent() -> Int {
                device.received().filter { $0.namespace != CastNamespace.heartbeat && $0.type != "GET_STATUS" }.count
            }
            let baseline = sent()
            let cases: [(String, [UInt8], String)] = [
                ("volume", Array("{not json".utf8), "invalid_payload"),
                ("volume", [0xff, 0xfe, 0x41], "invalid_payload"),
                ("volume", Array("150".utf8), "invalid_payload"),
                ("rate", Array("3".utf8), "invalid_payload"),
                ("rate", Array("fast".utf8), "invalid_payload"),
                ("seek", Array("soon".utf8), "invalid_payload"),
                ("mute", Array("maybe".utf8), "invalid_payload"),
                ("dance", Array("".utf8), "unknown_command"),
                ("send/urn:x-cast:com.google.cast.tp.heartbeat", Array(#"{"type":"PING"}"#.utf8), "namespace_not_allowed"),
                ("send/not-a-namespace", Array("x".utf8), "invalid_payload"),
                ("load", Array(repeating: 0x61, count: 70_000), "payload_too_large"),
            ]
            for (command, payload, code) in cases {
                let r = try await h.command(tv, command, payload)
                #expect(r.status == "error", "\(command) with \(payload.prefix(20)) was accepted: \(r)")
                #expect(r.errorCode == code, "\(command): expected \(code), got \(r)")
                #expect((r["error"]?["message"]?.stringValue ?? "").count > 10)
            }
            #expect(sent() == baseline, "bad commands reached the device")
            // Unknown device: answered on that device's response topic.
            let r = try await h.command("no_such_device", "play", "")
            #expect(r.errorCode == "unknown_device")
            // The bridge still works.
            let reply1 = try await h.command(tv, "pause", "")
            #expect(reply1.status == "ok")
        }
    }

    @Test func mqtt5ResponseTopicAndCorrelationData() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv])
            let correlation: [UInt8] = [1, 2, 3, 250]
            try h.client.publish(MQTTMessage(topic: h.topic(tv, "command/volume"), payload: Array("30".utf8), qos: .atLeastOnce,
                                             responseTopic: "e2e/reply/1", correlationData: correlation))
            #expect(await waitUntil { !h.observer.messages(on: "e2e/reply/1").isEmpty })
            let reply = try #require(h.observer.messages(on: "e2e/reply/1").first)
            #expect(reply.correlationData == correlation)
            let json = try CastJSON.decode(JSONValue.self, from: reply.payload)
            #expect(json.status == "ok")
            #expect(json["command"]?.stringValue == "volume")
        }
    }

    @Test func offlineDeviceFailsAtOnceAndRecovers() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv, kitchen])
            try await h.devices[1].restart(refuseFor: .seconds(4))
            #expect(await h.observer.wait(h.topic(kitchen, "availability")) { $0 == "offline" } != nil)
            let clock = ContinuousClock()
            let start = clock.now
            let r = try await h.command(kitchen, "play", "")
            #expect(r.errorCode == "device_offline")
            // At once: answered while the device is still away (it refuses for 4 s), not after.
            #expect(h.observer.last(h.topic(kitchen, "availability")) == "offline", "answered only once the device was back")
            print("device_offline answered after \(clock.now - start)")
            #expect(await h.observer.wait(h.topic(kitchen, "availability"), timeout: .seconds(20)) { $0 == "online" } != nil)
            let events = h.observer.messages(on: h.topic(kitchen, "event")).compactMap { try? CastJSON.decode(JSONValue.self, from: $0.payload) }
            #expect(events.contains { $0["type"]?.stringValue == "disconnected" })
            #expect(await waitUntil {
                h.observer.messages(on: h.topic(kitchen, "event")).contains { String(decoding: $0.payload, as: UTF8.self).contains("reconnected") }
            })
            // The other device never went offline once it was online.
            let tvAvailability = h.observer.messages(on: h.topic(tv, "availability")).map { String(decoding: $0.payload, as: UTF8.self) }
            let firstOnline = tvAvailability.firstIndex(of: "online") ?? 0
            #expect(!tvAvailability[firstOnline...].contains("offline"), "\(tvAvailability)")
        }
    }

    @Test func bridgeRequestsAndShutdown() async throws {
        try await withBridge() { h in
            try await h.waitOnline([tv, kitchen])
            try h.client.publish(MQTTMessage(topic: "cast2mqtt/bridge/request/health_check", payload: [], qos: .atLeastOnce))
            let health = await h.observer.waitJSON("cast2mqtt/bridge/response/health_check") { _ in true }
            #expect(health?["status"]?.stringValue == "ok", "\(String(describing: health))")
            #expect(health?["data"]?["healthy"]?.boolValue == true)
            #expect(health?["data"]?["online"]?.intValue == 2)
            try h.client.publish(MQTTMessage(topic: "cast2mqtt/bridge/request/devices", payload: [], qos: .atLeastOnce))
            let devices = await h.observer.waitJSON("cast2mqtt/bridge/response/devices") { _ in true }
            #expect(devices?["data"]?.arrayValue?.count == 2 || devices?["data"]?["devices"]?.arrayValue?.count == 2,
                    "\(String(describing: devices))")
            // SIGTERM: the bridge says offline and closes its Cast virtual connections politely.
            h.stopDaemon()
            #expect(await h.observer.wait("cast2mqtt/bridge/state") { $0 == "offline" } != nil)
            #expect(!h.devices[0].received(namespace: CastNamespace.connection, type: "CLOSE").isEmpty)
        }
    }
}
