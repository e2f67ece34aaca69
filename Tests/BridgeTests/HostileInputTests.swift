import CastProtocol
import CastSimulator
import Foundation
import Testing

@testable import Bridge

/// Inputs that used to hang or crash the bridge (names of any length, numbers a device makes
/// up, namespaces that are not one topic level, JSON nested deeper than a device can echo).
@Suite struct HostileInputTests {
    static let longNames = [
        String(repeating: "a", count: 129), String(repeating: "b", count: 130), String(repeating: "Long Name ", count: 30),
        String(repeating: "Küche Wohnzimmer ", count: 12), String(repeating: "ü", count: 300), String(repeating: "_", count: 500),
    ]

    @Test(.timeLimit(.minutes(1)), arguments: longNames)
    func namesOfAnyLengthGetAValidUniqueTopic(_ name: String) {
        var r = TopicNameRegistry()
        var seen = Set<String>()
        for n in 0..<20 {
            let id = String(format: "%032x", n + 0xabcd)
            let topic = r.assign(id: id, friendlyName: name)
            #expect(TopicNameRegistry.isValidTopicName(topic), "\(topic)")
            #expect(topic.utf8.count <= 128)
            #expect(seen.insert(topic).inserted, "\(topic) given twice")
        }
    }

    @Test(.timeLimit(.minutes(1))) func longOverridesAreCappedNotLooped() {
        var r = TopicNameRegistry()
        let a = r.assign(id: "a1", friendlyName: "x", override: String(repeating: "t", count: 200))
        let b = r.assign(id: "b2", friendlyName: "x", override: String(repeating: "t", count: 200))
        let c = r.assign(id: "c3", friendlyName: "x", override: String(repeating: "ö", count: 200))
        #expect(a == String(repeating: "t", count: TopicNameRegistry.maxBaseBytes))
        #expect(b == a + "_b2")
        #expect(c.utf8.count <= TopicNameRegistry.maxBaseBytes)
        #expect(TopicNameRegistry.isValidTopicName(c))
    }

    @Test func formatSecondsTakesAnyValue() {
        #expect(formatSeconds(10) == "10")
        #expect(formatSeconds(2.5) == "2.5")
        #expect(formatSeconds(1e19) == "1e+19")
        #expect(formatSeconds(-1e308) == "-1e+308")
    }

    @Test func skipAdWithAMadeUpSkippableTimeAnswers() throws {
        var h = Harness()
        let commands = MediaCommands.allBasicMedia.union(.skipAd).rawValue
        h.online(media: [playing(commands: commands)])
        var media = playing(commands: commands)
        media.breakStatus = BreakStatus(breakId: "b", breakClipId: "c", currentBreakTime: 1, currentBreakClipTime: 1,
                                        whenSkippable: 1e19)
        h.feed(.mediaStatus(tvID, [media]))
        let out = h.publish("cast2mqtt/living_room_tv/command/skip_ad", "")
        let response = try #require(out.publications.first { $0.topic == "cast2mqtt/living_room_tv/response" })
        #expect(response.text.contains("invalid_player_state"))
        #expect(response.text.contains("1e+19"))
    }

    @Test func namespacesArePublishedOnOneTopicLevel() {
        var h = Harness()
        h.online()
        for (namespace, level) in [("urn:x-cast:com.example/a/b", "urn:x-cast:com.example%2Fa%2Fb"),
                                   ("urn:x-cast:a+b#c", "urn:x-cast:a%2Bb%23c"),
                                   ("urn:x-cast:tab\there\u{0}", "urn:x-cast:tab%09here%00"),
                                   ("urn:x-cast:50%", "urn:x-cast:50%25"),
                                   ("urn:x-cast:com.example.plain", "urn:x-cast:com.example.plain")] {
            let out = h.feed(.appMessage(tvID, namespace: namespace, payload: .string("{}")))
            #expect(out.publications.map(\.topic) == ["cast2mqtt/living_room_tv/message/\(level)"])
        }
        let dropped = h.feed(.appMessage(tvID, namespace: "urn:x-cast:" + String(repeating: "n", count: 300), payload: .string("{}")))
        #expect(dropped.publications.isEmpty)
        #expect(dropped.logs.isEmpty && dropped.debugLogs.count == 1)
    }

    @Test func commandJSONNestedTooDeepIsRefused() throws {
        var h = Harness()
        h.online()
        var nested = "1"
        for _ in 0..<40 { nested = "{\"a\":\(nested)}" }
        let payload = #"{"id":"deep","url":"http://192.0.2.5/a.mp3","custom_data":\#(nested)}"#
        let out = h.publish("cast2mqtt/living_room_tv/command/load", payload)
        #expect(out.operations.isEmpty)
        let response = try #require(out.publications.first { $0.topic == "cast2mqtt/living_room_tv/response" })
        #expect(response.text.contains("invalid_payload"))
        #expect(response.text.contains("32 levels"))
    }
}

@Suite struct BoundedHoldTests {
    /// Commands delivered at startup are held for their device, but an oversized one is answered
    /// at once and never stored.
    @Test func oversizedCommandsAreNotHeldAtStartup() {
        var h = Harness()
        h.feed(.deviceDiscovered(tvDescriptor()))
        let big = "{\"id\":\"big\",\"url\":\"http://x/\(String(repeating: "a", count: 70_000))\"}"
        let out = h.publish("cast2mqtt/living_room_tv/command/load", big)
        #expect(out.json("cast2mqtt/living_room_tv/response")?["error"]?["code"] == .string("payload_too_large"))
        #expect(h.core.scheduler.heldCount == 0)
        let small = h.publish("cast2mqtt/living_room_tv/command/volume", "20")
        #expect(small.publications.isEmpty)
        #expect(h.core.scheduler.heldCount == 1)
    }

    func code(_ out: BridgeOutput, _ device: String) -> String? {
        out.json("cast2mqtt/\(device)/response")?["error"]?["code"]?.stringValue
    }

    /// A device discovered at start and not online yet keeps the window open past its minimum:
    /// its command, and one that arrives later for another connecting device, are held, and run
    /// when their device comes online.
    @Test func heldPastTheMinimumWhileDevicesAreConnecting() throws {
        var h = Harness()
        h.feed(.deviceDiscovered(tvDescriptor()))
        h.feed(.deviceDiscovered(speakerDescriptor()))
        h.now = t0.addingTimeInterval(1)
        #expect(h.publish("cast2mqtt/living_room_tv/command/volume", "20").publications.isEmpty)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 20)
        let tick = h.feed(.tick)
        #expect(code(tick, "living_room_tv") == nil, "both devices are still on their first connect")
        #expect(h.publish("cast2mqtt/kitchen_speaker/command/volume", "30").publications.isEmpty)
        #expect(h.core.scheduler.heldCount == 2)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds + 30)
        let tv = h.online()
        #expect(tv.operations.contains { $0.kind == .setVolume(level: 0.2) })
        let speaker = h.online(speakerDescriptor())
        #expect(speaker.operations.contains { $0.deviceID == speakerID && $0.kind == .setVolume(level: 0.3) })
        #expect(h.core.scheduler.heldCount == 0)
    }

    /// The window closes at the first tick after the last device's first connect ended (online,
    /// or offline with a reason): what is still held is answered then, and later commands are
    /// not held.
    @Test func releasedWhenTheLastFirstConnectEnds() {
        var h = Harness()
        h.feed(.deviceDiscovered(tvDescriptor()))
        h.feed(.deviceDiscovered(speakerDescriptor()))
        #expect(h.publish("cast2mqtt/attic/command/play", "").publications.isEmpty)
        h.now = t0.addingTimeInterval(15)
        #expect(code(h.feed(.tick), "attic") == nil)
        h.online()
        h.now = t0.addingTimeInterval(16)
        #expect(code(h.feed(.tick), "attic") == nil, "the speaker is still on its first connect")
        h.feed(CastEvent.castConnected(speakerID))
        h.feed(CastEvent.castDisconnected(speakerID, reason: "heartbeat timeout"))
        h.now = t0.addingTimeInterval(17)
        let tick = h.feed(.tick)
        #expect(code(tick, "attic") == "unknown_device")
        #expect(tick.logs.contains { $0.contains("the start-up hold ended after 17 s") })
        #expect(code(h.publish("cast2mqtt/attic/command/play", ""), "attic") == "unknown_device")
        // Closed for good: a device discovered now does not open it again.
        h.feed(.deviceDiscovered(DeviceDescriptor(id: "00000000000000000000000000000001", friendlyName: "Late", host: "192.0.2.30")))
        #expect(code(h.publish("cast2mqtt/late/command/play", ""), "late") == "device_offline")
    }

    /// With no device known at the minimum (discovery found nothing yet), the window closes then.
    @Test func closesAtTheMinimumWhenNoDeviceIsConnecting() {
        var h = Harness()
        #expect(h.publish("cast2mqtt/attic/command/play", "").publications.isEmpty)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds - 0.5)
        #expect(code(h.feed(.tick), "attic") == nil)
        h.now = t0.addingTimeInterval(StartupHold.minimumSeconds)
        #expect(code(h.feed(.tick), "attic") == "unknown_device")
    }

    /// A device that never ends its first connect (unreachable: its client reports nothing)
    /// keeps the window open only up to its limit.
    @Test func theWindowEndsAtItsLimit() {
        var h = Harness()
        h.feed(.deviceDiscovered(tvDescriptor()))
        #expect(h.publish("cast2mqtt/living_room_tv/command/play", "").publications.isEmpty)
        h.now = t0.addingTimeInterval(StartupHold.maximumSeconds - 1)
        #expect(code(h.feed(.tick), "living_room_tv") == nil)
        #expect(h.publish("cast2mqtt/attic/command/play", "").publications.isEmpty)
        h.now = t0.addingTimeInterval(StartupHold.maximumSeconds)
        // Without a tick first: a command at the limit is not held, and what was held runs before it.
        let late = h.publish("cast2mqtt/living_room_tv/command/pause", #"{"id":"late"}"#)
        #expect(late.on("cast2mqtt/living_room_tv/response").count == 2)
        #expect(code(late, "attic") == "unknown_device")
        #expect(late.logs.contains { $0.contains("limit of 120 s with 1 devices still on their first connect; 2 held") })
        #expect(h.core.scheduler.heldCount == 0)
    }

    /// The hold's bound is the number of devices the bridge knows, at least 256, at most 20 000.
    @Test func theBoundGrowsWithTheDevices() {
        #expect(StartupHold.maxHeld(devices: 0) == 256)
        #expect(StartupHold.maxHeld(devices: 10_000) == 10_000)
        #expect(StartupHold.maxHeld(devices: 1_000_000) == 20_000)
        var h = Harness()
        let devices = 300
        for i in 0..<devices {
            h.feed(.deviceDiscovered(DeviceDescriptor(id: String(format: "%032x", i + 1), friendlyName: "TV \(i)",
                                                      host: "192.0.2.\(i % 200 + 1)")))
        }
        for _ in 0..<devices { #expect(h.publish("cast2mqtt/tv_0/command/play", "").publications.isEmpty) }
        #expect(h.core.scheduler.heldCount == devices)
        #expect(code(h.publish("cast2mqtt/tv_0/command/play", ""), "tv_0") == "device_offline", "one past the bound runs at once")
    }

    /// However many devices, the held payloads stay under `maxHeldBytes` in all.
    @Test func theHeldBytesAreBounded() {
        var h = Harness { $0.mqtt.maxPayload = 1 << 20 }
        for i in 0..<100 {
            h.feed(.deviceDiscovered(DeviceDescriptor(id: String(format: "%032x", i + 1), friendlyName: "TV \(i)",
                                                      host: "192.0.2.\(i % 200 + 1)")))
        }
        let big = "{\"url\":\"http://x/\(String(repeating: "a", count: 1_000_000))\"}"
        let fit = StartupHold.maxHeldBytes / big.utf8.count
        for _ in 0..<fit { #expect(h.publish("cast2mqtt/tv_0/command/load", big).publications.isEmpty) }
        #expect(h.core.scheduler.heldCount == fit)
        #expect(code(h.publish("cast2mqtt/tv_0/command/load", big), "tv_0") != nil, "past the budget it is answered at once")
        #expect(h.publish("cast2mqtt/tv_1/command/volume", "20").publications.isEmpty, "a small one still fits")
    }
}

/// The nesting look before decoding says what the decoded value's depth says, for any JSON.
@Suite struct NestingScanTests {
    @Test func agreesWithTheDecodedDepth() {
        var random = SeededRandom(seed: 11)
        func value(_ depth: Int) -> String {
            guard depth > 0 else { return ["1", "\"[{\\\"}\"", "null", "\"\\\\\""][Int(random.next() % 4)] }
            // A chain with a few shallow siblings: deep, and small.
            let inner = (0..<Int(random.next() % 3)).map { _ in value(Int(random.next() % UInt64(min(depth, 3)))) }
            if random.next() % 2 == 0 { return "[" + (inner + [value(depth - 1)]).joined(separator: ",") + "]" }
            return "{" + (inner + [value(depth - 1)]).enumerated().map { "\"k\($0.offset)\":\($0.element)" }.joined(separator: ",") + "}"
        }
        for _ in 0..<400 {
            let text = value(Int(random.next() % 40))
            let bytes = Array(text.utf8)
            guard let decoded = JSONOutput.parse(bytes) else { Issue.record("not JSON: \(text.prefix(80))"); continue }
            #expect(JSONOutput.nestsDeeper(bytes, than: 32) == (decoded.depth > 32), "\(text.prefix(80))")
        }
    }
}
