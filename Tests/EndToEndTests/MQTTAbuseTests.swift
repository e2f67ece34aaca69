import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

private let tv = "living_room_tv"
private let kitchen = "kitchen"

/// Every command topic of the contract (§5), plus unknown and malformed command names.
private let commandTopics = [
    "load", "play", "pause", "toggle", "stop", "seek", "rate", "volume", "mute", "next", "previous", "launch", "quit",
    "send", "send/\(SimulatedAppID.echoNamespace)", "transfer", "refresh", "announce", "skip_ad",
]

/// Command names that are not in the contract: each still gets one (error) response. (A `+` or
/// `#` cannot be published at all, so those are not here.)
private let oddCommandNames = ["dance", "VOLUME", "volume/extra", "play/", "send/", "send/urn:x-cast:a/b"]

/// Random and binary payloads from a seeded generator (the same every run).
private func randomPayloads(seed: UInt64) -> [[UInt8]] {
    var random = SeededRandom(seed: seed)
    func bytes(_ n: Int, _ range: ClosedRange<UInt8>) -> [UInt8] {
        (0..<n).map { _ in range.lowerBound &+ UInt8(truncatingIfNeeded: random.next() % UInt64(Int(range.upperBound - range.lowerBound) + 1)) }
    }
    return [
        bytes(64, 0...255),                                   // binary
        Array("{".utf8) + bytes(30, 0...255),                 // looks like JSON, is not UTF-8
        bytes(40, 0x21...0x7E),                               // printable noise
        [0, 0, 0, 0],                                         // NULs
        Array(#"{"id":"wrong-types","url":5,"level":"loud","percent":[],"position":{},"relative":true,"rate":"fast","muted":"yes","app_id":7,"to":[],"namespace":1,"data":null,"reply":"no","timeout":"soon","queue":"x","custom_data":1e400}"#.utf8),
        Array("[1,2,3]".utf8),
        Array(#"{"id":1e400}"#.utf8),
    ]
}

extension BridgeHarness {
    /// Publishes and waits for the next response on the device's response topic (nil: none).
    func rawCommand(_ device: String, _ name: String, _ payload: [UInt8], timeout: Duration = .seconds(12)) async -> JSONValue? {
        await commandOrNil(device, name, payload, timeout: timeout)
    }

    /// The bridge answers a command on another device in time.
    func expectResponsive(_ context: String) async {
        #expect(daemonAlive, "\(context): the daemon died; log:\n\(log.suffix(3000))")
        let r = await rawCommand(kitchen, "volume", Array(#"{"id":"alive","percent":33}"#.utf8), timeout: .seconds(30))
        #expect(r?.status == "ok", "\(context): the bridge did not answer the other device in time: \(String(describing: r))")
    }
}

/// MQTT abuse end to end: the daemon as a process, a real broker, simulated devices.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct MQTTAbuseTests {
    @Test func abusiveCommandsGetExactlyOneAnswerEach() async throws {
        try await withBridge(environment: noBacktrace) { h in
            try await h.waitOnline([tv, kitchen])
            let r = try await h.command(tv, "load", "http://127.0.0.1/media/abuse.mp3")
            #expect(r.status == "ok", "\(r)")
            let responses = h.topic(tv, "response")
            var sent = 0
            let baseline = h.observer.messages(on: responses).count

            // 1. Random and binary payloads on every command topic.
            for (i, topic) in commandTopics.enumerated() {
                for payload in randomPayloads(seed: UInt64(100 + i)) {
                    sent += 1
                    let answer = await h.rawCommand(tv, topic, payload)
                    #expect(answer != nil, "no response to command/\(topic) with \(payload.prefix(16))")
                    guard h.daemonAlive else { break }
                }
                guard h.daemonAlive else { break }
            }
            for name in oddCommandNames {
                sent += 1
                let answer = await h.rawCommand(tv, name, [0xFF, 0x00, 0x7B], timeout: .seconds(30))
                #expect(answer?.status == "error", "command/\(name): \(String(describing: answer))")
            }
            await h.expectResponsive("random payloads")

            // 2. Payloads at and above mqtt.max_payload (65 536).
            let pad = { (n: Int) in [UInt8](repeating: 0x61, count: n) }
            for (topic, payload) in [
                ("load", pad(65_536)), ("load", pad(65_537)), ("load", pad(1 << 20)),
                ("send/\(SimulatedAppID.echoNamespace)", pad(65_536)), ("send/\(SimulatedAppID.echoNamespace)", pad(65_537)),
                ("volume", Array(#"{"id":"big","level":0.5,"x":""#.utf8) + pad(65_536) + Array(#""}"#.utf8)),
            ] {
                sent += 1
                let answer = await h.rawCommand(tv, topic, payload)
                #expect(answer?.status == "error", "\(topic) with \(payload.count) bytes: \(String(describing: answer))")
                #expect(["payload_too_large", "invalid_payload"].contains(answer?.errorCode ?? ""),
                        "\(topic) with \(payload.count) bytes: \(String(describing: answer))")
            }
            await h.expectResponsive("max_payload")

            // 3. Deep JSON: a clear answer (ok or invalid_payload), never a timeout.
            let arrays = { (n: Int) in String(repeating: "[", count: n) + String(repeating: "]", count: n) }
            let objects = { (n: Int) in String(repeating: #"{"a":"#, count: n) + "1" + String(repeating: "}", count: n) }
            for (topic, text) in [
                ("load", #"{"id":"deep-509","url":"http://127.0.0.1/a.mp3","custom_data":\#(arrays(509))}"#),
                ("load", #"{"id":"deep-10000","url":"http://127.0.0.1/a.mp3","custom_data":\#(arrays(10_000))}"#),
                ("send", #"{"id":"deep-send","namespace":"\#(SimulatedAppID.echoNamespace)","data":\#(objects(10_000))}"#),
                ("volume", #"{"id":"deep-volume","level":\#(arrays(10_000))}"#),
                ("volume", arrays(10_000)),
                ("play", "{" + String(repeating: #""a":{"#, count: 10_000)),
            ] {
                sent += 1
                let answer = await h.rawCommand(tv, topic, Array(text.utf8))
                let clear = answer?.status == "ok" || answer?.errorCode == "invalid_payload"
                #expect(clear, "\(topic) nested 10 000 deep (\(text.prefix(30))…): \(String(describing: answer))")
            }
            await h.expectResponsive("deep JSON")

            // 4. Out-of-range numbers in every numeric field; weird and very long ids.
            let device = h.devices[0]
            let numbers: [(String, String, Bool)] = [   // (command, payload, must be refused)
                ("volume", #"{"id":"v1","level":1e308}"#, true), ("volume", #"{"id":"v2","level":-1e19}"#, true),
                ("volume", #"{"id":"v3","level":1e400}"#, true), ("volume", #"{"id":"v4","percent":1e19}"#, true),
                ("volume", #"{"id":"v5","percent":-1e308}"#, true), ("volume", #"{"id":"v6","level":1e-320}"#, false),
                ("volume", "1e19", true), ("volume", "99999999999999999999", true), ("volume", "+1e308", true),
                ("volume", "NaN", true), ("volume", "inf", true), ("volume", "-0", false),
                ("seek", #"{"id":"s1","position":1e308}"#, false), ("seek", #"{"id":"s2","position":-1e19}"#, true),
                ("seek", #"{"id":"s3","position":1e400}"#, true), ("seek", #"{"id":"s4","relative":-1e308}"#, false),
                ("seek", "1e19", false), ("seek", "+1e308", false), ("seek", "NaN", true), ("seek", "-inf", true),
                ("rate", #"{"id":"r1","rate":1e19}"#, true), ("rate", #"{"id":"r2","rate":0}"#, true),
                ("rate", #"{"id":"r3","rate":-1}"#, true), ("rate", #"{"id":"r4","rate":1e-320}"#, true),
                ("rate", #"{"id":"r5","rate":1e400}"#, true), ("rate", "NaN", true), ("rate", "2.0000001", true),
                ("load", #"{"id":"l1","url":"http://127.0.0.1/a.mp3","position":1e19,"rate":1e19}"#, true),
                ("load", #"{"id":"l2","url":"http://127.0.0.1/a.mp3","position":-1e308}"#, true),
                ("announce", #"{"id":"a1","url":"http://127.0.0.1/a.mp3","volume":1e19}"#, true),
                ("send", #"{"id":"t1","namespace":"\#(SimulatedAppID.echoNamespace)","data":"x","reply":true,"timeout":1e19}"#, false),
                ("send", #"{"id":"t2","namespace":"\#(SimulatedAppID.echoNamespace)","data":"x","reply":true,"timeout":-1}"#, true),
                ("play", #"{"id":1e19}"#, false), ("play", #"{"id":-1e19}"#, false), ("play", #"{"id":1.5}"#, false),
                ("play", #"{"id":99999999999999999999}"#, false), ("play", #"{"id":1e400}"#, false),
                ("play", #"{"id":[1]}"#, true), ("play", #"{"id":{"a":1}}"#, true), ("play", #"{"id":null}"#, false),
                ("play", #"{"id":"\#(String(repeating: "i", count: 60_000))"}"#, false),
                ("pause", #"{"id":"\#(String(repeating: "é", count: 30_000))"}"#, false),
            ]
            for (command, payload, mustFail) in numbers {
                sent += 1
                let beforeVolume = device.received(namespace: CastNamespace.receiver, type: "SET_VOLUME").count
                let answer = await h.rawCommand(tv, command, Array(payload.utf8))
                let what = "\(command) \(payload.prefix(60))"
                #expect(answer != nil, "\(what): no response")
                if mustFail {
                    #expect(answer?.status == "error", "\(what): accepted: \(String(describing: answer))")
                }
                if command == "volume", answer?.status == "ok" {
                    let sentVolume = device.received(namespace: CastNamespace.receiver, type: "SET_VOLUME").dropFirst(beforeVolume).last
                    let level = sentVolume?.json?["volume"]?["level"]?.doubleValue
                    #expect(level.map { $0.isFinite && $0 >= 0 && $0 <= 1 } == true, "\(what): sent level \(String(describing: level))")
                }
                guard h.daemonAlive else { break }
            }
            await h.expectResponsive("out-of-range numbers and ids")

            // Every command above got exactly one response (none lost, none twice): a later command
            // on the same device is answered after all of them, duplicates included.
            let marker = await h.rawCommand(tv, "volume", Array(#"{"id":"marker","percent":33}"#.utf8), timeout: .seconds(30))
            #expect(marker?.status == "ok", "\(String(describing: marker))")
            let answered = h.observer.messages(on: responses).count - baseline - (marker == nil ? 0 : 1)
            #expect(answered == sent, "\(sent) commands, \(answered) responses")

            // 5. Unknown devices, including absurd topic names: answered on their own response topic.
            for name in ["no_such_device", String(repeating: "x", count: 10_000), "ü-gerät", "$dollar", "bridge_"] {
                let answer = await h.rawCommand(name, "volume", Array("40".utf8), timeout: .seconds(30))
                #expect(answer?.errorCode == "unknown_device", "\(name.prefix(20)): \(String(describing: answer))")
            }
            await h.expectResponsive("unknown devices")
            h.checkPublishedTopics()
        }
    }

    /// 5 000 valid commands in one burst on one device: every one gets exactly one response
    /// (`ok`, or `busy` past the device's queue of 64), and the bridge stays responsive. (Its
    /// memory and latency under a burst are `scripts/bench e2e`'s numbers, not a test.)
    @Test func burstOf5000Commands() async throws {
        // The device's replies and pings may come late on a busy machine (the simulator runs in
        // the test process): a generous request timeout and heartbeat timeout keep `timeout` and
        // `device_offline` out of a test of exactly one answer each.
        try await withBridge(environment: noBacktrace, broker: MosquittoBroker.Options(maxQueuedMessages: 100_000),
                             requestTimeout: 60, heartbeatTimeout: 60) { h in
            try await h.waitOnline([tv, kitchen])
            for i in 0..<5 { _ = try await h.command(tv, "volume", "\(30 + i)") }  // warm up
            let responses = h.topic(tv, "response")
            let baseline = h.observer.messages(on: responses).count
            let count = 5_000
            let clock = ContinuousClock()
            let start = clock.now
            for i in 0..<count {
                let payload = #"{"id":"burst-\#(i)","level":\#(Double(i % 100) / 100)}"#
                try h.client.publish(MQTTMessage(topic: h.topic(tv, "command/volume"), payload: Array(payload.utf8), qos: .atLeastOnce))
            }
            let done = await waitUntil(timeout: .seconds(120)) {
                h.observer.messages(on: responses).count - baseline >= count || !h.daemonAlive
            }
            let elapsed = clock.now - start
            #expect(done && h.daemonAlive, "responses: \(h.observer.messages(on: responses).count - baseline) of \(count)")
            // A command after the burst on the same device is answered after every burst
            // response, so a duplicate would have arrived by then.
            let answer = try await h.command(tv, "volume", #"{"id":"after-burst","percent":50}"#)
            #expect(answer.status == "ok", "\(answer)")
            var seen: [String: Int] = [:]
            var statuses: [String: Int] = [:]
            for message in h.observer.messages(on: responses).dropFirst(baseline) {
                guard let json = try? CastJSON.decode(JSONValue.self, from: message.payload) else { continue }
                if let id = json["id"]?.stringValue { seen[id, default: 0] += 1 }
                let key = json.status == "ok" ? "ok" : (json.errorCode ?? "?")
                statuses[key, default: 0] += 1
            }
            let missing = (0..<count).filter { seen["burst-\($0)"] == nil }
            let twice = seen.filter { $0.value > 1 }.map(\.key)
            #expect(missing.isEmpty, "\(missing.count) commands got no response, e.g. \(missing.prefix(5))")
            #expect(twice.isEmpty, "\(twice.count) commands got two responses, e.g. \(twice.prefix(5))")
            #expect(seen.keys.filter { $0.hasPrefix("burst-") }.count == count, "\(seen.count) distinct ids answered")
            #expect(statuses.keys.allSatisfy { $0 == "ok" || $0 == "busy" }, "statuses: \(statuses)")
            await h.expectResponsive("after the burst")
            print("burst of \(count): \(elapsed) for all responses; statuses \(statuses)")
        }
    }
}
