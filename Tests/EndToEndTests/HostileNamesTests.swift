import CastProtocol
import Foundation
import MQTT
import Testing
import TestSupport

/// Names of any length and content (a friendly name from mDNS `fn=` or the configuration, a
/// `topic:` override) give a valid, unique topic, and the bridge comes up and answers. These used
/// to hang the daemon at 100 % CPU, deaf to SIGTERM, past 128 bytes of slug.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndHostileNamesTests {
    static let longName = String(repeating: "Long Living Room Name ", count: 14)  // 308 characters
    static let germanName = String(repeating: "Küche Überwachung ", count: 11)   // 198 characters with umlauts
    static let longTopic = String(repeating: "t", count: 200)

    @Test func longNamesAndOverridesComeOnlineAndAnswer() async throws {
        try await withBridge(devices: [Self.longName, Self.germanName, "Kitchen"], topics: ["Kitchen": Self.longTopic]) { h in
            let state = await h.observer.wait("cast2mqtt/bridge/state") { $0 == "online" }
            try #require(state != nil, "bridge/state never online; log:\n\(h.log.suffix(3000))")
            let list = await h.observer.waitJSON("cast2mqtt/bridge/devices") { ($0.arrayValue?.count ?? 0) == 3 }
            let devices = try #require(list?.arrayValue, "bridge/devices; log:\n\(h.log.suffix(3000))")
            let topics = devices.compactMap { $0["topic"]?.stringValue }
            #expect(Set(topics).count == 3)
            for topic in topics {
                #expect(topic.utf8.count <= 128, "\(topic)")
                #expect(!topic.contains("/") && !topic.contains("+") && !topic.contains("#") && !topic.hasPrefix("$"))
            }
            #expect(topics.contains(String(repeating: "t", count: 96)), "\(topics)")
            try await h.waitOnline(topics)
            for topic in topics {
                let reply = try await h.command(topic, "volume", "30")
                #expect(reply.status == "ok", "\(topic): \(reply)")
            }
        }
    }
}
