import Foundation
import Testing
@testable import Web

/// `name{labels} value` lines of an exposition, by series.
func samples(_ metrics: BridgeMetrics) -> [String: Double] {
    var out: [String: Double] = [:]
    for line in String(decoding: metrics.exposition(), as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
        out[String(line[..<space])] = value
    }
    return out
}

@Suite struct MetricsTests {
    @Test func commandsAreCountedByCommandAndCodeWithTheirLatency() {
        let metrics = BridgeMetrics(version: "9.9")
        for _ in 0..<3 { metrics.commandAnswered(command: "pause", code: "ok", latency: .milliseconds(3)) }
        metrics.commandAnswered(command: "seek", code: "no_media_session", latency: .milliseconds(20))
        metrics.commandAnswered(command: "no-such-command", code: "unknown_command", latency: .zero)
        metrics.commandAnswered(command: "send/urn:x-cast:com.example", code: "ok", latency: .zero)
        let s = samples(metrics)
        #expect(s[#"cast2mqtt_commands_total{command="pause",code="ok"}"#] == 3)
        #expect(s[#"cast2mqtt_commands_total{command="seek",code="no_media_session"}"#] == 1)
        #expect(s[#"cast2mqtt_commands_total{command="other",code="unknown_command"}"#] == 1, "names from topics are bounded")
        #expect(s[#"cast2mqtt_commands_total{command="send",code="ok"}"#] == 1)
        #expect(s[#"cast2mqtt_command_duration_seconds_count{command="pause",code="ok"}"#] == 3)
        #expect(s[#"cast2mqtt_command_duration_seconds_bucket{command="pause",code="ok",le="0.0025"}"#] == 0)
        #expect(s[#"cast2mqtt_command_duration_seconds_bucket{command="pause",code="ok",le="0.005"}"#] == 3)
        #expect(s[#"cast2mqtt_command_duration_seconds_bucket{command="seek",code="no_media_session",le="0.01"}"#] == 0)
        #expect(s[#"cast2mqtt_command_duration_seconds_bucket{command="seek",code="no_media_session",le="0.025"}"#] == 1)
        #expect(s[#"cast2mqtt_info{version="9.9"}"#] == 1)
    }

    @Test func unknownCodesAreCappedAt16() {
        let metrics = BridgeMetrics()
        for n in 0..<20 { metrics.commandAnswered(command: "play", code: "new_code_\(Character(UnicodeScalar(97 + n)!))", latency: .zero) }
        metrics.commandAnswered(command: "play", code: "Not A Code", latency: .zero)
        let codes = samples(metrics).keys.filter { $0.hasPrefix("cast2mqtt_commands_total{") }
        #expect(codes.count == 17)
        #expect(samples(metrics)[#"cast2mqtt_commands_total{command="play",code="other"}"#] == 5)
    }

    @Test func connectionsMQTTAndTheQueueAreCounted() {
        let metrics = BridgeMetrics()
        metrics.deviceEvent(type: "connected", reason: nil)
        metrics.deviceEvent(type: "disconnected", reason: "heartbeat timeout")
        metrics.deviceEvent(type: "disconnected", reason: "connect failed: refused")
        metrics.deviceEvent(type: "disconnected", reason: "something new")
        metrics.deviceEvent(type: "reconnected", reason: nil)
        metrics.deviceEvent(type: "media_loaded", reason: nil)
        metrics.mqttConnection(up: true)
        metrics.mqttConnection(up: false)
        metrics.mqttConnection(up: true)
        metrics.mqttMessage(incoming: true, bytes: 10)
        metrics.mqttMessage(incoming: true, bytes: 5)
        metrics.mqttMessage(incoming: false, bytes: 7)
        metrics.inputQueue(depth: 12, totals: [.coalescedStatus: 4, .overloadedCommand: 0, .droppedAppMessage: 1])
        metrics.inputQueue(depth: 3, totals: [.coalescedStatus: 6, .overloadedCommand: 2, .droppedAppMessage: 1])
        metrics.core(devices: 5, online: 4, waiting: 2, inFlight: 1)
        metrics.castRequest(operation: "set_volume", ok: true, duration: .milliseconds(1))
        metrics.castRequest(operation: "get_receiver_status", ok: false, duration: .seconds(10))
        let s = samples(metrics)
        #expect(s[#"cast2mqtt_cast_connects_total{kind="connected"}"#] == 1)
        #expect(s[#"cast2mqtt_cast_connects_total{kind="reconnected"}"#] == 1)
        #expect(s[#"cast2mqtt_cast_disconnects_total{reason="heartbeat_timeout"}"#] == 1)
        #expect(s[#"cast2mqtt_cast_disconnects_total{reason="connect_failed"}"#] == 1)
        #expect(s[#"cast2mqtt_cast_disconnects_total{reason="other"}"#] == 1)
        #expect(s["cast2mqtt_mqtt_connected"] == 1)
        #expect(s["cast2mqtt_mqtt_reconnects_total"] == 1)
        #expect(s[#"cast2mqtt_mqtt_messages_total{direction="in"}"#] == 2)
        #expect(s[#"cast2mqtt_mqtt_bytes_total{direction="in"}"#] == 15)
        #expect(s[#"cast2mqtt_mqtt_messages_total{direction="out"}"#] == 1)
        #expect(s["cast2mqtt_input_queue_depth"] == 3)
        #expect(s[#"cast2mqtt_input_overload_total{kind="coalesced_status"}"#] == 6)
        #expect(s[#"cast2mqtt_input_overload_total{kind="overloaded_command"}"#] == 2)
        #expect(s[#"cast2mqtt_input_overload_total{kind="dropped_app_message"}"#] == 1)
        #expect(s["cast2mqtt_devices"] == 5 && s["cast2mqtt_devices_online"] == 4)
        #expect(s["cast2mqtt_commands_waiting"] == 2 && s["cast2mqtt_operations_in_flight"] == 1)
        #expect(s[#"cast2mqtt_cast_request_duration_seconds_count{operation="set_volume",result="ok"}"#] == 1)
        #expect(s[#"cast2mqtt_cast_request_duration_seconds_count{operation="get_receiver_status",result="error"}"#] == 1)
        #expect((s["process_resident_memory_bytes"] ?? 0) > 0 && (s["process_open_fds"] ?? 0) > 0)
    }

    @Test func everyMetricHasHelpAndAType() {
        let metrics = BridgeMetrics()
        metrics.commandAnswered(command: "play", code: "ok", latency: .zero)
        metrics.deviceEvent(type: "connected", reason: nil)
        metrics.deviceEvent(type: "disconnected", reason: "shutdown")
        metrics.castRequest(operation: "load", ok: true, duration: .zero)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        let types = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) }
        let helps = Set(text.split(separator: "\n").filter { $0.hasPrefix("# HELP ") }.map { String($0.split(separator: " ")[2]) })
        #expect(types.count >= 20)
        for name in types { #expect(helps.contains(name), "\(name) has no # HELP") }
        // The Cast client's counters come from the global MetricsSystem; their help is listed too.
        #expect(BridgeMetrics.help["cast2mqtt_cast_messages_total"] != nil && BridgeMetrics.help["cast2mqtt_cast_bytes_total"] != nil)
    }

    @Test func healthNeedsTheBrokerAndATurningLoop() {
        let metrics = BridgeMetrics()
        let t0 = ContinuousClock.now
        #expect(!metrics.health(now: t0).healthy, "nothing happened yet")
        metrics.consumerTurned(now: t0)
        #expect(!metrics.health(now: t0).healthy, "no broker")
        metrics.mqttConnection(up: true)
        #expect(metrics.health(now: t0 + .seconds(1)).healthy)
        #expect(metrics.health(now: t0 + .seconds(1)).loopAge == 1)
        #expect(!metrics.health(now: t0 + BridgeMetrics.stuckAfter).healthy, "a loop that stopped turning")
        metrics.mqttConnection(up: false)
        metrics.consumerTurned(now: t0 + .seconds(10))
        #expect(!metrics.health(now: t0 + .seconds(10)).healthy, "the broker is away")
    }
}
