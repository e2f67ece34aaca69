import CastProtocol
import Foundation
@testable import Bridge
import Testing

/// After a connect the devices' retained topics and discovery configs (on Home Assistant's birth,
/// the configs) go out in parts, each its own turn, so that a command in between is answered
/// without waiting for all of them; every topic still goes out exactly once (none that changed
/// meanwhile again), and the outputs say they are a republish.
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
        // The connect's own turn: the bridge's topics; the devices' follow in parts.
        #expect(out.publications.contains { $0.topic == "cast2mqtt/bridge/state" })
        #expect(out.publications.filter { $0.topic.hasSuffix("/availability") }.isEmpty)
        var parts = [Self.configs(out)]

        // A command between two parts is answered in its own turn, not behind the configs.
        let answer = h.core.handle(.mqttMessage(topic: "cast2mqtt/bridge/request/health_check", payload: Array(#"{"id": 1}"#.utf8),
                                                responseTopic: nil, correlationData: nil), now: h.now)
        #expect(answer.publications.map(\.topic) == ["cast2mqtt/bridge/response/health_check"])
        #expect(!answer.republish && !answer.moreWork)

        // A device forgotten meanwhile is skipped; the rest come in parts until none is left.
        let gone = String(format: "%032x", Self.count)
        let goneTopic = "cast2mqtt/\(h.core.registry.topicName(gone))/"
        _ = h.core.handle(.mqttMessage(topic: "cast2mqtt/bridge/request/remove", payload: Array(#"{"device": "\#(gone)"}"#.utf8),
                                   responseTopic: nil, correlationData: nil), now: h.now)
        var turns = 0
        var republished: [Publication] = []
        while out.moreWork, turns < 1000 {
            out = h.core.handle(.resume, now: h.now)
            #expect(out.republish)
            #expect(out.publications.count <= RetainedPublisher.republishPart)
            republished += out.publications
            parts.append(Self.configs(out))
            turns += 1
        }
        #expect(!out.moreWork)
        let all = parts.flatMap { $0 }
        #expect(parts.allSatisfy { $0.count <= DeviceBacklog.discoveryPart })
        #expect(all.count == Self.count - 1 && Set(all).count == all.count, "each config once, the forgotten one not")
        #expect(!all.contains("homeassistant/device/cast2mqtt_\(gone)/config"))
        // Every device's retained topics again, each once, the forgotten device's not.
        let availability = republished.map(\.topic).filter { $0.hasSuffix("/availability") }
        #expect(availability.count == Self.count - 1 && Set(availability).count == availability.count)
        #expect(!republished.contains { $0.topic.hasPrefix(goneTopic) })
        // Nothing left: another resume does nothing.
        #expect(h.core.handle(.resume, now: h.now).isEmpty)
    }

    /// A topic that changes while the republish is under way goes out at once; the part that
    /// owed it does not send it again (it would be the old value after the new).
    @Test func aTopicPublishedDuringTheRepublishIsNotSentAgainByItsPart() throws {
        var h = Self.fleet()
        let id = String(format: "%032x", Self.count - 10)
        let topic = "cast2mqtt/\(h.core.registry.topicName(id))/availability"
        var out = h.core.handle(.mqttConnected, now: h.now)
        // The device comes online before its part: published at once, in the snapshot's turn.
        let change = h.core.handle(.device(id, DeviceSnapshot(generation: 1, link: .online, receiver: receiver())), now: h.now)
        #expect(change.publications.filter { $0.topic == topic }.map(\.text) == ["online"])
        var later: [Publication] = []
        var turns = 0
        while out.moreWork, turns < 1000 {
            out = h.core.handle(.resume, now: h.now)
            later += out.publications
            turns += 1
        }
        #expect(!out.moreWork)
        #expect(!later.contains { $0.topic == topic }, "the part sent the device's availability again")
        // Its neighbours were republished.
        let other = "cast2mqtt/\(h.core.registry.topicName(String(format: "%032x", Self.count - 11)))/availability"
        #expect(later.filter { $0.topic == other }.count == 1)
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
