import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Testing
import TestSupport
@testable import Discovery

/// Devices and groups on addresses of their own, as a real LAN shows them over mDNS (each
/// device's service points at a host name of its own with an address record; a group at its
/// leader's host name on another port), against the real avahi-daemon that scripts/test starts
/// on `lo`. Addresses are random in 127.100.0.0 – 127.250.255.255 and ids random, so parallel
/// runs do not meet.
@Suite(.serialized) struct OwnAddressDiscoveryTests {
    init() throws {
        try AvahiTestDaemon.requireRunning()
    }

    private func discovery() -> (DeviceDiscovery, EventRecorder) {
        let (logger, _) = RecordingLogHandler.logger()
        let discovery = DeviceDiscovery(configuration: DiscoveryConfiguration(interfaces: ["lo"]), logger: logger)
        let recorder = EventRecorder(discovery)
        discovery.start()
        return (discovery, recorder)
    }

    private func address() -> String {
        "127.\(Int.random(in: 100...250)).\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
    }

    private func dashed(_ id: String) -> String {
        let hex = Array(id)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }.joined(separator: "-")
    }

    @Test func devicesAtTheirAddressesAndAGroupAtItsLeaders() async throws {
        let (kitchenID, denID, groupID, pairID) = (randomID(), randomID(), randomID(), randomID())
        let (kitchenAddress, denAddress) = (address(), address())
        let publisher = try MDNSPublisher()
        defer { publisher.stop() }
        let kitchenHost = "\(dashed(kitchenID)).local"
        let denHost = "\(dashed(denID)).local"
        try publisher.publish(PublishedService(
            name: "Google-Home-\(kitchenID)", port: 8009,
            txt: ServicePublisher.castTXT(id: kitchenID, name: "Kitchen", model: "Google Home", capabilities: [.audioOut, .masterVolume]),
            hostName: kitchenHost, address: kitchenAddress), key: kitchenID)
        try publisher.publish(PublishedService(
            name: "Google-Home-\(denID)", port: 8009,
            txt: ServicePublisher.castTXT(id: denID, name: "Den", model: "Google Home", capabilities: [.audioOut, .masterVolume]),
            hostName: denHost, address: denAddress), key: denID)
        // A group as real ones are announced: dashed id (also as cd), ca with bit 32, at the
        // leader's host name on a port of its own.
        var groupTXT = ServicePublisher.castTXT(id: dashed(groupID), name: "Downstairs", model: "Google Cast Group",
                                                capabilities: [.audioOut, .multizoneGroup, .masterVolume])
        groupTXT["cd"] = dashed(groupID)
        try publisher.publish(PublishedService(name: "Google-Cast-Group-\(groupID)", port: 32187, txt: groupTXT,
                                               hostName: kitchenHost), key: groupID)
        // Known by its model alone (no bit 32 in ca).
        try publisher.publish(PublishedService(
            name: "Google-Cast-Group-\(pairID)", port: 32188,
            txt: ServicePublisher.castTXT(id: dashed(pairID).uppercased(), name: "Pair", model: "Google Cast Group",
                                          capabilities: [.audioOut, .masterVolume]),
            hostName: denHost), key: pairID)

        let (discovery, recorder) = discovery()
        defer { discovery.stop() }
        for id in [kitchenID, denID, groupID, pairID] {
            let found = await recorder.first { $0.deviceID == id }
            #expect(found != nil, "\(id) not discovered; events: \(recorder.events)")
        }
        let kitchen = try #require(discovery.devices[kitchenID])
        #expect(kitchen.host == kitchenAddress && kitchen.port == 8009 && kitchen.castType == .audio)
        #expect(discovery.devices[denID]?.host == denAddress)
        let group = try #require(discovery.devices[groupID])
        #expect(group.host == kitchenAddress && group.port == 32187)
        #expect(group.castType == .group && group.friendlyName == "Downstairs" && group.manufacturer == "Google Inc.")
        let pair = try #require(discovery.devices[pairID])
        #expect(pair.castType == .group && pair.host == denAddress && pair.port == 32188)
        #expect(publisher.isEstablished(key: groupID))

        // The leader moves: a new instance name at the new leader's host; the same device, now there.
        try publisher.publish(PublishedService(name: "Google-Cast-Group-\(groupID)-1", port: 32187, txt: groupTXT,
                                               hostName: denHost), key: groupID)
        let moved = await recorder.first(timeout: .seconds(15)) {
            $0.deviceID == groupID && $0.record?.host == denAddress && $0.record?.serviceName == "Google-Cast-Group-\(groupID)-1"
        }
        #expect(moved != nil, "events: \(recorder.events(for: groupID))")
        let settled = await waitUntil {
            discovery.devices[groupID]?.host == denAddress
                && discovery.devices[groupID]?.serviceName == "Google-Cast-Group-\(groupID)-1"
        }
        #expect(settled, "the old instance's goodbye leaves the group at its new leader: \(recorder.events(for: groupID))")
    }

    @Test func castSimAnnouncesItsDevicesAndGroupsAndFollowsALeaderMove() async throws {
        let (kitchenID, denID, groupID) = (randomID(), randomID(), randomID())
        let (kitchenAddress, denAddress) = (address(), address())
        let configPath = NSTemporaryDirectory() + "cast-sim-\(kitchenID.prefix(8)).yaml"
        try """
            devices:
              - {name: Kitchen \(kitchenID.prefix(6)), id: \(kitchenID), address: \(kitchenAddress), cast_type: audio}
              - {name: Den \(denID.prefix(6)), id: \(denID), address: \(denAddress), cast_type: audio}
            groups:
              - {name: Downstairs \(groupID.prefix(6)), id: \(dashed(groupID)), members: [\(kitchenID), \(denID)]}
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: configPath) }
        let sim = try ManagedProcess(try builtExecutable("cast-sim"),
                                     ["--config", configPath, "--mdns", "--control-port", "0", "--heartbeat-interval", "0"],
                                     logName: "cast-sim-mdns")
        defer { sim.stop() }
        let started = await waitUntil { sim.output.contains("control_port") || !sim.isRunning }
        let control = try #require(started ? Self.controlPort(sim.output) : nil, "cast-sim did not start: \(sim.output)")

        let (discovery, recorder) = discovery()
        defer { discovery.stop() }
        for id in [kitchenID, denID, groupID] {
            let found = await recorder.first(timeout: .seconds(15)) { $0.deviceID == id }
            #expect(found != nil, "\(id) not discovered; events: \(recorder.events); cast-sim: \(sim.output)")
        }
        #expect(discovery.devices[kitchenID]?.host == kitchenAddress && discovery.devices[kitchenID]?.port == 8009)
        #expect(discovery.devices[denID]?.host == denAddress)
        let group = try #require(discovery.devices[groupID])
        #expect(group.castType == .group && group.host == kitchenAddress && group.port != 8009)

        let moved = try await Self.post("http://127.0.0.1:\(control)/groups/\(groupID)/leader", body: "{}")
        #expect(moved.contains(denAddress), "control answer: \(moved)")
        let followed = await waitUntil {
            discovery.devices[groupID]?.host == denAddress && discovery.devices[groupID]?.port == group.port
        }
        #expect(followed, "events: \(recorder.events(for: groupID)); cast-sim: \(sim.output)")
        #expect(discovery.devices[groupID]?.serviceName == "Google-Cast-Group-\(groupID)-1")
    }

    static func controlPort(_ output: String) -> Int? {
        for line in output.split(separator: "\n") where line.contains("\"control_port\"") {
            return Int(line.filter(\.isNumber))
        }
        return nil
    }

    static func post(_ url: String, body: String) async throws -> String {
        guard let target = URL(string: url) else { throw TestSupportError("bad URL \(url)") }
        var request = URLRequest(url: target, timeoutInterval: 10)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        let (data, _) = try await URLSession.shared.data(for: request)
        return String(decoding: data, as: UTF8.self)
    }
}
