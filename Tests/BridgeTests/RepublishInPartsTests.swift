import CastProtocol
import Foundation
@testable import Bridge
import Testing

/// After a connect (and on Home Assistant's birth) the devices' discovery configs go out in
/// parts, each its own turn, so that a command in between is answered without waiting for all of
/// them; every config still goes out exactly once, and the outputs say they are a republish.
@Suite struct RepublishInPartsTests {
    static let count = 600

    static func fleet() -> Harness {
        var h = Harness()
        for i in 0..<count {
            let d = DeviceDescriptor(id: String(format: "%032x", i + 1), friendlyName: "Room \(i)", model: "Chromecast",
                                     manufacturer: "Google Inc.", castType: .video, host: "192.0.2.\(i % 250 + 1)",
                                     port: 8009, capabilities: ["video_out"], source: .static)
            h.feed(.deviceDiscovered(d))
        }
        return h
    }

    static func configs(_ out: BridgeOutput) -> [String] {
        out.publications.map(\.topic).filter { $0.hasPrefix("homeassistant/device/cast2mqtt_") && !$0.contains("bridge") }
    }

    @Test func aConnectPublishesTheConfigsInPartsWithACommandBetween() throws {
        var h = Self.fleet()
        var out = h.core.handle(.mqttConnected, now: h.now)
        #expect(out.republish && out.moreWork)
        var parts = [Self.configs(out)]
        #expect(parts[0].count == DiscoveryBacklog.part)
        // Everything else is in the first part: every device's availability, the bridge's topics.
        #expect(out.publications.filter { $0.topic.hasSuffix("/availability") }.count == Self.count)
        #expect(out.publications.contains { $0.topic == "cast2mqtt/bridge/state" })

        // A command between two parts is answered in its own turn, not behind the configs.
        let answer = h.core.handle(.mqttMessage(topic: "cast2mqtt/bridge/request/health_check", payload: Array(#"{"id": 1}"#.utf8),
                                                responseTopic: nil, correlationData: nil), now: h.now)
        #expect(answer.publications.map(\.topic) == ["cast2mqtt/bridge/response/health_check"])
        #expect(!answer.republish && !answer.moreWork)

        // A device forgotten meanwhile is skipped; the rest come in parts until none is left.
        let gone = String(format: "%032x", Self.count)
        _ = h.core.handle(.mqttMessage(topic: "cast2mqtt/bridge/request/remove", payload: Array(#"{"device": "\#(gone)"}"#.utf8),
                                   responseTopic: nil, correlationData: nil), now: h.now)
        var turns = 0
        while out.moreWork, turns < 100 {
            out = h.core.handle(.resume, now: h.now)
            #expect(out.republish)
            parts.append(Self.configs(out))
            turns += 1
        }
        #expect(!out.moreWork)
        let all = parts.flatMap { $0 }
        #expect(parts.allSatisfy { $0.count <= DiscoveryBacklog.part })
        #expect(all.count == Self.count - 1 && Set(all).count == all.count, "each config once, the forgotten one not")
        #expect(!all.contains("homeassistant/device/cast2mqtt_\(gone)/config"))
        // Nothing left: another resume does nothing.
        #expect(h.core.handle(.resume, now: h.now).isEmpty)
    }

    @Test func homeAssistantsBirthRepublishesUnchangedConfigsInParts() {
        var h = Self.fleet()
        _ = h.feed(.mqttConnected)
        var out = h.core.handle(.homeAssistantOnline, now: h.now)
        #expect(out.republish && out.moreWork)
        var all = Self.configs(out)
        var turns = 0
        while out.moreWork, turns < 100 {
            out = h.core.handle(.resume, now: h.now)
            all += Self.configs(out)
            turns += 1
        }
        #expect(all.count == Self.count && Set(all).count == Self.count, "every config again, unchanged as they are")
    }
}
