import CastProtocol
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MQTT
import Testing
import TestSupport

/// Speaker groups over mDNS, as a home has them: `cast-sim --mdns --config` announces two
/// speakers at addresses of their own, a static group at its leader's and a dynamic group,
/// through the avahi-daemon that scripts/test runs on `lo`; the daemon discovers them.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndGroupMDNSTests {
    static func address() -> String {
        "127.\(Int.random(in: 100...250)).\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
    }

    static func randomHexID() -> String { (0..<32).map { _ in String(Int.random(in: 0..<16), radix: 16) }.joined() }

    static func controlPort(_ output: String) -> Int? {
        for line in output.split(separator: "\n") where line.contains("\"control_port\"") {
            return Int(line.filter(\.isNumber))
        }
        return nil
    }

    static func request(_ method: String, _ url: String, body: String? = nil) async throws -> String {
        guard let target = URL(string: url) else { throw TestSupportError("bad URL \(url)") }
        var request = URLRequest(url: target, timeoutInterval: 10)
        request.httpMethod = method
        request.httpBody = body.map { Data($0.utf8) }
        let (data, _) = try await URLSession.shared.data(for: request)
        return String(decoding: data, as: UTF8.self)
    }

    /// A leader that moves keeps one MQTT device and one set of Home Assistant entities, offline
    /// for at most one reconnect; a dynamic group is followed (a member playing in it shows its
    /// name, its transport commands go to it) but never becomes a device.
    @Test func aLeaderMoveKeepsOneDeviceAndADynamicGroupIsNoDevice() async throws {
        try AvahiTestDaemon.requireRunning()
        let (kitchenID, denID, groupID, partyID) = (Self.randomHexID(), Self.randomHexID(), Self.randomHexID(), Self.randomHexID())
        let tag = String(kitchenID.prefix(6))
        let (kitchenAddress, denAddress) = (Self.address(), Self.address())
        let configPath = NSTemporaryDirectory() + "cast-sim-groups-\(tag).yaml"
        try """
            devices:
              - {name: Kitchen \(tag), id: \(kitchenID), address: \(kitchenAddress), cast_type: audio}
              - {name: Den \(tag), id: \(denID), address: \(denAddress), cast_type: audio}
            groups:
              - {name: Downstairs \(tag), id: \(groupID), members: [\(kitchenID), \(denID)]}
              - {name: Party \(tag), id: \(partyID), members: [\(kitchenID), \(denID)], leader: \(denID), dynamic: true}
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: configPath) }
        let sim = try ManagedProcess(try builtExecutable("cast-sim"),
                                     ["--config", configPath, "--mdns", "--control-port", "0", "--heartbeat-interval", "1",
                                      "--launch-latency-ms", "50"],
                                     logName: "cast-sim-groups")
        defer { sim.stop() }
        let started = await waitUntil { Self.controlPort(sim.output) != nil || !sim.isRunning }
        let port = try #require(started ? Self.controlPort(sim.output) : nil, "cast-sim did not start: \(sim.output)")
        let control = "http://127.0.0.1:\(port)"
        let (kitchen, den, downstairs) = ("kitchen_\(tag)", "den_\(tag)", "downstairs_\(tag)")
        let discovery = """
          mdns: true
          include: [\(kitchenID), \(denID), \(groupID), \(partyID)]
        """
        try await withBridge(devices: [], discovery: discovery) { h in
            try await h.waitOnline([kitchen, den, downstairs])
            let listed = await h.observer.waitJSON(h.topic(downstairs, "members")) { $0.arrayValue?.count == 2 }
            try #require(listed != nil, "no members; daemon log:\n\(h.log.suffix(4000))")
            let followed = await waitUntil { h.log.contains("dynamic group Party \(tag)") }
            #expect(followed, "the dynamic group was not followed; daemon log:\n\(h.log.suffix(4000))")

            // The dynamic group plays (playback moved to it from the kitchen): its members show it.
            #expect(try await h.command(kitchen, "load", "http://127.0.0.1/media/song.mp3").status == "ok")
            _ = try await Self.request("POST", "\(control)/transfer", body: "{\"from\":\"\(kitchenID)\",\"to\":\"\(partyID)\"}")
            for member in [kitchen, den] {
                let shown = await h.observer.waitJSON(h.topic(member, "media"), timeout: .seconds(20)) {
                    $0["playing_in"]?.stringValue == "Party \(tag)" && $0["state"]?.stringValue == "playing"
                }
                #expect(shown != nil, "\(member): \(String(describing: h.observer.lastJSON(h.topic(member, "media"))))")
            }
            // A member's pause goes to the dynamic group's session.
            let pause = try await h.command(den, "pause", "")
            #expect(pause.status == "ok", "\(pause)")
            let received = try await Self.request(
                "GET", "\(control)/devices/\(partyID)/received?namespace=urn:x-cast:com.google.cast.media&type=PAUSE")
            #expect(received.contains("PAUSE"), "the dynamic group got no PAUSE: \(received)")
            #expect(await h.observer.wait(h.topic(kitchen, "state")) { $0 == "paused" } != nil)

            // Never a device: no topics, no Home Assistant configs, not listed.
            let listed3 = await h.observer.waitJSON("cast2mqtt/bridge/devices") { $0.arrayValue?.count == 3 }
            let devices = listed3?.arrayValue ?? []
            #expect(devices.count == 3 && !devices.contains { $0["id"]?.stringValue == partyID }, "\(devices)")
            #expect(!h.observer.messages.contains { $0.topic.contains("party") || $0.topic.contains(partyID) })

            // It dissolves: its members show their own state.
            _ = try await Self.request("DELETE", "\(control)/groups/\(partyID)")
            for member in [kitchen, den] {
                let own = await h.observer.waitJSON(h.topic(member, "media"), timeout: .seconds(20)) { $0["playing_in"] == nil }
                #expect(own != nil, "\(member) still shows the dynamic group")
            }

            // The static group's leader moves: a new instance name at the den's address.
            let offlineBefore = h.observer.messages(on: h.topic(downstairs, "availability")).filter { $0.payload == Array("offline".utf8) }.count
            let moved = try await Self.request("POST", "\(control)/groups/\(groupID)/leader", body: "{}")
            #expect(moved.contains(denAddress), "control answer: \(moved)")
            let relocated = await h.observer.waitJSON(h.topic(downstairs, "info"), timeout: .seconds(30)) {
                $0["address"]?.stringValue == denAddress
            }
            #expect(relocated != nil, "not followed to its new leader; daemon log:\n\(h.log.suffix(4000))")
            #expect(await h.observer.wait(h.topic(downstairs, "availability"), timeout: .seconds(20)) { $0 == "online" } != nil)
            let offline = h.observer.messages(on: h.topic(downstairs, "availability")).filter { $0.payload == Array("offline".utf8) }.count
            #expect(offline - offlineBefore <= 1)
            #expect(!h.observer.messages.contains { $0.topic.hasPrefix("homeassistant/") && $0.payload.isEmpty })
            let configs = Set(h.observer.messages.map(\.topic).filter { $0.contains(groupID) && $0.hasPrefix("homeassistant/") })
            #expect(configs == ["homeassistant/device/cast2mqtt_\(groupID)/config"])
            #expect(try await h.command(downstairs, "volume", "35").status == "ok")
            #expect(await h.observer.waitJSON(h.topic(downstairs, "members")) { $0.arrayValue?.count == 2 } != nil)
        }
    }
}
