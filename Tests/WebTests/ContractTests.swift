import Foundation
import Testing
@testable import Bridge
@testable import Web

/// Walks every name of the contract (the Contract module) through everything that must know it:
/// the topic grammar (built and parsed back), the parser (no `unknown_command`), the metrics
/// labels (its own label, not `other`), Home Assistant discovery where mqtt-api.md §7 maps it to
/// an entity, and docs/topics.md (a row or a section). A name added to the contract and missed
/// by any of them fails here.
@Suite struct ContractTests {
    static let topics = TopicGrammar(base: "cast2mqtt", discoveryPrefix: "homeassistant")
    static let parser = CommandParser()

    static let docs: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("docs/topics.md"), encoding: .utf8)) ?? ""
    }()

    /// mqtt-api.md §7: the commands Home Assistant entities send (platform per command).
    static let homeAssistantMapping: [CommandName: String] = [
        .volume: "number", .mute: "switch", .rate: "select", .load: "text",
        .play: "button", .pause: "button", .stop: "button", .next: "button", .previous: "button",
        // Beyond §7: the subtitle and audio-language selects.
        .tracks: "select",
        // §13: the keep's switch (on a device with a keep).
        .keep: "switch",
    ]

    @Test func theDocsAreThere() {
        #expect(Self.docs.contains("### Responses"), "docs/topics.md was not read")
    }

    @Test(arguments: CommandName.allCases)
    func everyCommandHasATopicAParserALabelAndADocSection(_ name: CommandName) {
        let topic = Self.topics.command("kitchen", name)
        #expect(topic == "cast2mqtt/kitchen/command/\(name.rawValue)")
        #expect(Self.topics.parse(topic) == .deviceCommand(device: "kitchen", name: name.rawValue))
        if case .failure(let failure) = Self.parser.parse(name: name.rawValue, payload: []) {
            #expect(failure.error.code != .unknownCommand, "the parser does not know \(name.rawValue)")
        }
        #expect(BridgeMetrics.commandLabel(name.rawValue) == name.rawValue)
        let headings = Self.docs.split(separator: "\n").filter { $0.hasPrefix("### ") }
        #expect(headings.contains { heading in
            heading.dropFirst(4).split(whereSeparator: { $0 == "," || $0 == " " }).contains { $0 == name.rawValue }
        }, "docs/topics.md has no section for \(name.rawValue)")
    }

    @Test(arguments: CommandName.allCases)
    func homeAssistantSendsTheCommandsTheContractMaps(_ name: CommandName) {
        let entities = HomeAssistantDiscovery.haEntities + HomeAssistantDiscovery.haTrackEntities(TrackOptions(nil))
            + HomeAssistantDiscovery.haKeepEntities
        let sending = entities.filter { $0.fields(Self.topics, "kitchen")["command_topic"] == .string(Self.topics.command("kitchen", name)) }
        if let platform = Self.homeAssistantMapping[name] {
            #expect(sending.contains { $0.platform == platform }, "no Home Assistant \(platform) sends \(name.rawValue)")
        } else {
            #expect(sending.isEmpty, "\(name.rawValue) has a Home Assistant entity the contract does not name")
        }
    }

    @Test(arguments: RequestName.allCases)
    func everyRequestHasATopicAParserALabelAndADocRow(_ name: RequestName) {
        let topic = Self.topics.bridgeRequest(name)
        #expect(Self.topics.parse(topic) == .bridgeRequest(name: name.rawValue))
        if case .failure(let failure) = Self.parser.parseBridgeRequest(name: name.rawValue, payload: []) {
            #expect(failure.error.code != .unknownCommand, "the parser does not know \(name.rawValue)")
        }
        #expect(BridgeMetrics.commandLabel(name.rawValue) == name.rawValue)
        #expect(Self.docs.contains("bridge/request/\(name.rawValue)"), "docs/topics.md does not show bridge/request/\(name.rawValue)")
    }

    @Test(arguments: ErrorCode.allCases)
    func everyErrorCodeHasALabelAndADocRow(_ code: ErrorCode) {
        var seen = Set<String>()
        #expect(BridgeMetrics.codeLabel(code.rawValue, seen: &seen) == code.rawValue)
        #expect(seen.isEmpty, "\(code.rawValue) is not one of the metrics' known codes")
        let rows = Self.docs.split(separator: "\n").filter { $0.hasPrefix("| `") }
        #expect(rows.contains { $0.split(separator: "|").first?.contains("`\(code.rawValue)`") == true },
                "docs/topics.md's error table has no row for \(code.rawValue)")
    }

    @Test(arguments: DeviceLeaf.allCases)
    func everyDeviceTopicIsDocumented(_ leaf: DeviceLeaf) {
        #expect(Self.docs.contains("/\(leaf.rawValue)"), "docs/topics.md does not show the \(leaf.rawValue) topic")
    }

    @Test(arguments: BridgeLeaf.allCases)
    func everyBridgeTopicIsDocumented(_ leaf: BridgeLeaf) {
        #expect(Self.docs.contains("bridge/\(leaf.rawValue)"), "docs/topics.md does not show bridge/\(leaf.rawValue)")
    }

    /// The retained leaves the bridge clears for a removed device are the contract's retained ones.
    @Test func removedDevicesLoseEveryRetainedTopic() {
        let cleared = Set(PublishedSnapshot.retainedDeviceLeaves + PublishedSnapshot.retainedGroupLeaves
                          + PublishedSnapshot.retainedKeepLeaves)
        #expect(cleared == Set(DeviceLeaf.allCases.filter(\.isRetained)))
    }
}
