import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

/// Speaker groups end to end, without mDNS: simulated speakers on addresses of their own (Cast on
/// 8009, `eureka_info` on 8008/8443) given to the bridge as static devices, and their group.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EndToEndGroupTests {
    /// Three speakers and a group of two of them, with addresses and ids chosen up front (random
    /// addresses in 127.100.0.0 – 127.250.255.255, so parallel runs do not meet).
    struct Home {
        let kitchen = Speaker(name: "Kitchen")
        let den = Speaker(name: "Den")
        let hall = Speaker(name: "Hall")
        let groupID = randomHexID()
        let groupPort = Int.random(in: 20_000...40_000)

        struct Speaker {
            let name: String
            let id = randomHexID()
            let host = "127.\(Int.random(in: 100...250)).\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
        }

        /// The simulator: the speakers, then "Downstairs" (Kitchen and Den, led by Kitchen).
        func prepare(_ sim: CastSimulator) async throws -> [SimulatedDevice] {
            var devices: [SimulatedDevice] = []
            for speaker in [kitchen, den, hall] {
                devices.append(try await sim.addDevice(SimulatedDeviceConfiguration(
                    name: speaker.name, id: speaker.id, castType: .audio, launchLatency: .milliseconds(50),
                    replyLatency: .milliseconds(1), heartbeatInterval: .seconds(1)).onOwnAddress(speaker.host)))
            }
            devices.append(try await sim.addGroup(SimulatedGroupConfiguration(
                name: "Downstairs", id: groupID, members: [kitchen.id, den.id], port: groupPort)))
            return devices
        }
    }

    static func randomHexID() -> String { (0..<32).map { _ in String(Int.random(in: 0..<16), radix: 16) }.joined() }

    static func dashed(_ id: String) -> String {
        let hex = Array(id)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }.joined(separator: "-")
    }

    func json(_ h: BridgeHarness, _ topic: String) -> JSONValue? { h.observer.lastJSON(topic) }

    func members(_ h: BridgeHarness) -> [JSONValue] { json(h, "cast2mqtt/downstairs/members")?.arrayValue ?? [] }

    func waitMembers(_ h: BridgeHarness, _ what: String, _ predicate: @escaping ([JSONValue]) -> Bool) async throws {
        let ok = await h.observer.waitJSON("cast2mqtt/downstairs/members") { predicate($0.arrayValue ?? []) } != nil
        try #require(ok, "\(what): members \(members(h)); daemon log:\n\(h.log.suffix(4000))")
    }

    /// Membership after every message kind; members that show their group's playback; the commands
    /// a member hands to the group; a static device's facts from its `eureka_info` (also one given
    /// only by its address); a group found through its leader's `eureka_info`, without mDNS.
    @Test func membershipMirroringRoutingAndFacts() async throws {
        let home = Home()
        // Kitchen and Den by id and name (no model: eureka_info has it), Hall by its address alone;
        // the group is not configured (its leader's eureka_info names it).
        let discovery = """
          mdns: false
          devices:
            - {host: \(home.kitchen.host), name: Kitchen, id: \(Self.dashed(home.kitchen.id))}
            - {host: \(home.den.host), name: Den, id: \(home.den.id)}
            - {host: \(home.hall.host)}
        """
        try await withBridge(prepare: { try await home.prepare($0) }, discovery: discovery) { h in
            let (kitchen, den, hall, group) = (h.devices[0], h.devices[1], h.devices[2], h.devices[3])
            try await h.waitOnline(["kitchen", "den", "hall", "downstairs"])

            // Facts from eureka_info: the model of a device configured without one; the id, name
            // and topic of a device given by its address.
            // (The facts and the membership arrive in either order: wait for both.)
            let kitchenInfo = await h.observer.waitJSON("cast2mqtt/kitchen/info") {
                $0["model"]?.stringValue == "Google Home" && $0["groups"]?.arrayValue?.isEmpty == false
            }
            #expect(kitchenInfo?["cast_type"]?.stringValue == "audio", "\(String(describing: kitchenInfo))")
            #expect(kitchenInfo?["groups"] == .array([.object(["id": .string(home.groupID), "topic": .string("downstairs")])]))
            let hallInfo = try #require(json(h, "cast2mqtt/hall/info"))
            #expect(hallInfo["id"]?.stringValue == home.hall.id && hallInfo["name"]?.stringValue == "Hall")
            #expect(hallInfo["model"]?.stringValue == "Google Home" && hallInfo["source"]?.stringValue == "static")
            let config = await h.observer.waitJSON("homeassistant/device/cast2mqtt_\(home.kitchen.id)/config") {
                $0["device"]?["model"]?.stringValue == "Google Home"
            }
            #expect(config != nil, "the Home Assistant device has no model")
            let groupInfo = try #require(json(h, "cast2mqtt/downstairs/info"))
            #expect(groupInfo["cast_type"]?.stringValue == "group" && groupInfo["port"]?.intValue == home.groupPort)
            #expect(groupInfo["address"]?.stringValue == home.kitchen.host && groupInfo["multichannel"] == .bool(false))

            // MULTIZONE_STATUS on connect.
            try await waitMembers(h, "first status") { $0.compactMap { $0["topic"]?.stringValue } == ["kitchen", "den"] }
            #expect(members(h).first?["volume"]?.doubleValue == 0.5 && members(h).first?["name"]?.stringValue == "Kitchen")
            // DEVICE_ADDED
            try await h.simulator.addMember(hall.id, toGroup: group.id)
            try await waitMembers(h, "added") { $0.count == 3 && $0.last?["topic"]?.stringValue == "hall" }
            #expect(await h.observer.waitJSON("cast2mqtt/hall/info") { $0["groups"]?.arrayValue?.count == 1 } != nil)
            // DEVICE_UPDATED: a member's own volume.
            #expect(try await h.command("den", "volume", "30").status == "ok")
            try await waitMembers(h, "updated") { $0.first { $0["topic"]?.stringValue == "den" }?["volume"]?.doubleValue == 0.3 }
            // DEVICE_REMOVED
            try await h.simulator.removeMember(hall.id, fromGroup: group.id)
            try await waitMembers(h, "removed") { $0.count == 2 }
            #expect(await h.observer.waitJSON("cast2mqtt/hall/info") { $0["groups"] == .array([]) } != nil)

            // The group plays: its members show it.
            #expect(try await h.command("downstairs", "load", "http://127.0.0.1/media/song.mp3").status == "ok")
            for member in ["kitchen", "den"] {
                let shown = await h.observer.waitJSON(h.topic(member, "media")) {
                    $0["playing_in"]?.stringValue == "downstairs" && $0["state"]?.stringValue == "playing"
                }
                #expect(shown?["content_id"]?.stringValue == "http://127.0.0.1/media/song.mp3", "\(member): \(String(describing: shown))")
                #expect(await h.observer.wait(h.topic(member, "state")) { $0 == "playing" } != nil)
            }
            #expect(json(h, "cast2mqtt/hall/media")?["playing_in"] == nil)

            // A member's pause goes to the group's session; its volume stays on the member.
            let pause = try await h.command("kitchen", "pause", "")
            #expect(pause.status == "ok" && pause["data"]?["state"]?.stringValue == "paused", "\(pause)")
            #expect(group.received(namespace: CastNamespace.media, type: "PAUSE").count == 1)
            #expect(kitchen.received(namespace: CastNamespace.media, type: "PAUSE").isEmpty)
            #expect(await h.observer.wait("cast2mqtt/den/state") { $0 == "paused" } != nil)
            let groupVolumes = group.received(namespace: CastNamespace.receiver, type: "SET_VOLUME").count
            #expect(try await h.command("kitchen", "volume", "20").status == "ok")
            #expect(kitchen.received(namespace: CastNamespace.receiver, type: "SET_VOLUME").count == 1)
            #expect(group.received(namespace: CastNamespace.receiver, type: "SET_VOLUME").count == groupVolumes)
            #expect(try await h.command("den", "play", "").status == "ok")
            #expect(await h.observer.wait("cast2mqtt/kitchen/state") { $0 == "playing" } != nil)

            // A member's stop ends the group's session: the members show their own state again.
            #expect(try await h.command("den", "stop", "").status == "ok")
            #expect(group.received(namespace: CastNamespace.media, type: "STOP").count == 1)
            for member in ["kitchen", "den"] {
                let own = await h.observer.waitJSON(h.topic(member, "media")) { $0["playing_in"] == nil }
                #expect(own != nil, "\(member) still shows the group: \(String(describing: json(h, h.topic(member, "media"))))")
            }
            #expect(den.received(namespace: CastNamespace.media, type: "STOP").isEmpty)
            #expect(h.daemonAlive)
        }
    }

    /// Issue #26: a speaker configured by host and id and a group by host, port and id, neither
    /// with a name, get the slugs of their friendly names (from `eureka_info`) as topic names —
    /// never their addresses.
    @Test func unnamedStaticDevicesAreNamedByTheirEurekaInfo() async throws {
        let home = Home()
        let discovery = """
          mdns: false
          devices:
            - {host: \(home.kitchen.host), id: \(home.kitchen.id)}
            - {host: \(home.kitchen.host), port: \(home.groupPort), id: \(Self.dashed(home.groupID))}
        """
        try await withBridge(prepare: { try await home.prepare($0) }, discovery: discovery) { h in
            try await h.waitOnline(["kitchen", "downstairs"])
            #expect(json(h, "cast2mqtt/kitchen/info")?["name"]?.stringValue == "Kitchen")
            #expect(json(h, "cast2mqtt/downstairs/info")?["name"]?.stringValue == "Downstairs")
            let byAddress = h.observer.messages.map(\.topic).filter { $0.hasPrefix("cast2mqtt/127_") }
            #expect(byAddress.isEmpty, "topics named by an address: \(Set(byAddress).sorted())")
            let listed = await h.observer.waitJSON("cast2mqtt/bridge/devices") { $0.arrayValue?.count == 2 }
            #expect(listed?.arrayValue?.compactMap { $0["topic"]?.stringValue }.sorted() == ["downstairs", "kitchen"],
                    "\(String(describing: json(h, "cast2mqtt/bridge/devices")))")
        }
    }

    /// Issue #26: while the group plays, a member that launches an app of its own stops showing
    /// the group's playback; and a member of a group whose leader moves keeps showing it through
    /// the group's reconnect (the group never stopped playing), with no `idle` in between.
    @Test func membersFollowTheirOwnAppAndKeepTheGroupThroughALeaderMove() async throws {
        let home = Home()
        let discovery = """
          mdns: false
          devices:
            - {host: \(home.kitchen.host), name: Kitchen, id: \(home.kitchen.id)}
            - {host: \(home.den.host), name: Den, id: \(home.den.id)}
            - {host: \(home.kitchen.host), port: \(home.groupPort), name: Downstairs, id: \(home.groupID)}
        """
        try await withBridge(prepare: { try await home.prepare($0) }, discovery: discovery) { h in
            let group = h.devices[3]
            try await h.waitOnline(["kitchen", "den", "downstairs"])
            try await waitMembers(h, "first status") { $0.count == 2 }
            #expect(try await h.command("downstairs", "load", "http://127.0.0.1/media/song.mp3").status == "ok")
            for member in ["kitchen", "den"] {
                let shown = await h.observer.waitJSON(h.topic(member, "media")) {
                    $0["playing_in"]?.stringValue == "downstairs" && $0["state"]?.stringValue == "playing"
                }
                #expect(shown != nil, "\(member) does not show the group: \(String(describing: json(h, h.topic(member, "media"))))")
            }

            // The leader moves: the members never stop showing the group's playback.
            let mark = h.observer.messages.count
            let moved = try await h.simulator.moveLeader(ofGroup: group.id)
            #expect(moved.host == home.den.host)
            let relocated = await h.observer.waitJSON("cast2mqtt/downstairs/info", timeout: .seconds(30)) {
                $0["address"]?.stringValue == home.den.host
            }
            #expect(relocated != nil, "not found at its new leader; daemon log:\n\(h.log.suffix(5000))")
            #expect(await h.observer.wait("cast2mqtt/downstairs/availability", timeout: .seconds(20)) { $0 == "online" } != nil)
            let playingAgain = await h.observer.waitJSON("cast2mqtt/downstairs/media", timeout: .seconds(20)) {
                $0["state"]?.stringValue == "playing"
            }
            #expect(playingAgain != nil, "the group does not play after the move")
            // The group's media after the reconnect reached the members too (or nothing changed).
            #expect(await waitUntil {
                h.observer.messages.dropFirst(mark).contains { $0.topic == "cast2mqtt/downstairs/availability" && $0.payload == Array("online".utf8) }
            })
            let after = h.observer.messages.dropFirst(mark)
            for member in ["kitchen", "den"] {
                let docs = after.filter { $0.topic == h.topic(member, "media") }.compactMap { JSONValue.parse($0.payload) }
                #expect(docs.allSatisfy { $0["playing_in"]?.stringValue == "downstairs" },
                        "\(member) flickered during the move: \(docs)")
                let states = after.filter { $0.topic == h.topic(member, "state") }.map { String(decoding: $0.payload, as: UTF8.self) }
                #expect(states.allSatisfy { $0 == "playing" }, "\(member) states during the move: \(states)")
            }

            // Kitchen launches an app of its own (no media session): it shows that, Den the group.
            #expect(try await h.command("kitchen", "launch", SimulatedAppID.echo).status == "ok")
            let own = await h.observer.waitJSON(h.topic("kitchen", "media")) { $0["playing_in"] == nil }
            #expect(own != nil, "kitchen still mirrors the group: \(String(describing: json(h, h.topic("kitchen", "media"))))")
            #expect(json(h, h.topic("den", "media"))?["playing_in"]?.stringValue == "downstairs")
        }
    }

    /// A slow or failing `eureka_info` never delays `online` for a device whose id is known: the
    /// facts come as an update when they come, or not at all.
    @Test func aSlowOrFailingEurekaInfoNeverDelaysOnline() async throws {
        let home = Home()
        let discovery = """
          mdns: false
          devices:
            - {host: \(home.kitchen.host), name: Kitchen, id: \(home.kitchen.id)}
            - {host: \(home.den.host), name: Den, id: \(home.den.id)}
        """
        try await withBridge(prepare: { sim in
            let devices = try await home.prepare(sim)
            // Kitchen answers after 1.5 s (within the HTTPS attempt's 2 s); Den answers 500 on both ports.
            try await devices[0].setEurekaBehaviour(EurekaBehaviour(mode: .normal, delay: .milliseconds(1500)))
            try await devices[1].setEurekaBehaviour(EurekaBehaviour(mode: .fail))
            return devices
        }, discovery: discovery) { h in
            try await h.waitOnline(["kitchen", "den"])
            let withModel = await h.observer.waitJSON("cast2mqtt/kitchen/info") { $0["model"]?.stringValue == "Google Home" }
            #expect(withModel != nil, "the slow answer never arrived; daemon log:\n\(h.log.suffix(3000))")
            let messages = h.observer.messages
            let online = messages.firstIndex { $0.topic == "cast2mqtt/kitchen/availability" && $0.payload == Array("online".utf8) }
            let facts = messages.firstIndex { $0.topic == "cast2mqtt/kitchen/info" && String(decoding: $0.payload, as: UTF8.self).contains("Google Home") }
            #expect((online ?? Int.max) < (facts ?? -1), "online came after the facts (or one is missing)")
            // Den's failure: online all the same, no model, one line in the log.
            let failed = await waitUntil { h.log.contains("eureka_info of \(home.den.host) could not be read") }
            #expect(failed, "daemon log:\n\(h.log.suffix(3000))")
            #expect(h.observer.last("cast2mqtt/den/availability") == "online")
            #expect(h.observer.lastJSON("cast2mqtt/den/info")?["model"] == .null)
            #expect(try await h.command("den", "volume", "20").status == "ok")
        }
    }

    /// A statically configured group whose leader moves: found again through its members'
    /// `eureka_info`; one MQTT device, one set of Home Assistant entities, offline for at most
    /// one reconnect.
    @Test func aStaticGroupWhoseLeaderMovesStaysOneDevice() async throws {
        let home = Home()
        let discovery = """
          mdns: false
          devices:
            - {host: \(home.kitchen.host), name: Kitchen, id: \(home.kitchen.id)}
            - {host: \(home.den.host), name: Den, id: \(home.den.id)}
            - {host: \(home.kitchen.host), port: \(home.groupPort), name: Downstairs, id: \(Self.dashed(home.groupID))}
        """
        try await withBridge(prepare: { try await home.prepare($0) }, discovery: discovery) { h in
            let group = h.devices[3]
            try await h.waitOnline(["kitchen", "den", "downstairs"])
            // Its host's eureka_info says it is a group: its client follows the members.
            try await waitMembers(h, "first status") { $0.compactMap { $0["topic"]?.stringValue } == ["kitchen", "den"] }
            #expect(json(h, "cast2mqtt/downstairs/info")?["cast_type"]?.stringValue == "group")
            let configTopic = "homeassistant/device/cast2mqtt_\(home.groupID)/config"
            #expect(await h.observer.waitJSON(configTopic) { $0["device"]?["model"]?.stringValue == "Google Cast Group" } != nil)
            let offlineBefore = h.observer.messages(on: "cast2mqtt/downstairs/availability").filter { $0.payload == Array("offline".utf8) }.count

            let moved = try await h.simulator.moveLeader(ofGroup: group.id)
            #expect(moved.host == home.den.host && moved.port == home.groupPort)
            let relocated = await h.observer.waitJSON("cast2mqtt/downstairs/info", timeout: .seconds(30)) {
                $0["address"]?.stringValue == home.den.host
            }
            #expect(relocated != nil, "not found at its new leader; daemon log:\n\(h.log.suffix(5000))")
            #expect(await h.observer.wait("cast2mqtt/downstairs/availability", timeout: .seconds(20)) { $0 == "online" } != nil)
            let offline = h.observer.messages(on: "cast2mqtt/downstairs/availability").filter { $0.payload == Array("offline".utf8) }.count
            #expect(offline - offlineBefore <= 1)
            // Still one device: the same topic, the same Home Assistant config, nothing cleared.
            let devices = await h.observer.waitJSON("cast2mqtt/bridge/devices") { doc in
                doc.arrayValue?.filter { $0["cast_type"]?.stringValue == "group" }.map { $0["address"]?.stringValue } == [home.den.host]
            }
            #expect(devices?.arrayValue?.count == 3, "\(String(describing: json(h, "cast2mqtt/bridge/devices")))")
            #expect(!h.observer.messages.contains { $0.topic.hasPrefix("homeassistant/") && $0.payload.isEmpty })
            #expect(!h.observer.messages.contains { $0.topic.hasPrefix("cast2mqtt/downstairs") && $0.payload.isEmpty })
            #expect(Set(h.observer.messages.map(\.topic).filter { $0.hasPrefix("homeassistant/device/") }).count == 4)  // bridge, 2 speakers, group
            // And it works there.
            #expect(try await h.command("downstairs", "volume", "40").status == "ok")
            try await waitMembers(h, "after the move") { $0.count == 2 }
        }
    }
}
