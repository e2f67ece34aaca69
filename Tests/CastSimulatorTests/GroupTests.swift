import CastProtocol
@testable import CastSimulator
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

/// Speaker groups: the group's endpoint (a receiver of its own at its leader's address), the
/// multizone namespace, member volumes, members following the group's playback, and the control
/// actions (leader moves, members leaving and joining, dynamic groups, stereo pairs).
@Suite("Speaker groups") struct GroupTests {
    let ids = RequestIDs()

    private func dashed(_ id: String) -> String { SimulatedDeviceConfiguration.dashedID(id) }

    private func level(_ device: JSONValue?) -> Double? { device?["volume"]?["level"]?.doubleValue }

    private func close(_ a: Double?, _ b: Double) -> Bool { a.map { abs($0 - b) < 1e-9 } ?? false }

    /// Waits until `device`'s state satisfies `predicate`.
    private func waitForState(_ device: SimulatedDevice, _ what: String,
                              _ predicate: @escaping @Sendable (SimulatedDeviceState) -> Bool) async throws {
        let ok = await waitUntil {
            guard let state = try? await device.state() else { return false }
            return predicate(state)
        }
        if !ok { throw TestFailure("\(device.name): timed out waiting for \(what); state: \(String(describing: try? await device.state()))") }
    }

    @Test("a group is a receiver of its own at its leader's address; MULTIZONE_STATUS lists its members")
    func endpointAndStatus() async throws {
        let kitchen = ownAddressDevice("Kitchen", volume: 0.2)
        let den = ownAddressDevice("Den", volume: 0.4)
        try await withSimulator([kitchen, den]) { sim in
            let group = try await sim.addGroup(SimulatedGroupConfiguration(name: "Downstairs", members: ["Kitchen", den.id]))
            #expect(group.isGroup)
            #expect(group.host == kitchen.host)
            #expect(group.port > 0 && group.port != 8009)
            #expect(group.configuration.txtRecord["id"] == dashed(group.id))
            #expect(group.configuration.txtRecord["ca"] == "2084")
            #expect(group.configuration.txtRecord["md"] == "Google Cast Group")

            try await withClosing(try await TestCastClient.connected(to: group), close: { await $0.close() }) { client in
                let status = try await client.multizoneStatus(requestId: ids())
                let devices = try #require(status["status"]?["devices"]?.arrayValue)
                #expect(devices.map { $0["deviceId"]?.stringValue } == [dashed(kitchen.id), dashed(den.id)])
                #expect(devices.map { $0["name"]?.stringValue } == ["Kitchen", "Den"])
                #expect(devices.map { $0["capabilities"]?.intValue } == [2052, 2052])
                #expect(close(level(devices.first), 0.2) && close(level(devices.last), 0.4))
                #expect(devices.allSatisfy { $0["volume"]?["muted"]?.boolValue == false })
                #expect(status["status"]?["isMultichannel"]?.boolValue == false)

                // The group's own receiver: volume = the loudest member, a LAUNCH works as on a device.
                let receiver = try #require(await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS"))
                #expect(close(receiver["status"]?["volume"]?["level"]?.doubleValue, 0.4))
                #expect(receiver["status"]?["applications"]?.arrayValue?.isEmpty == true, "a group has no idle screen")
                let app = try await client.launch(SimulatedAppID.defaultMediaReceiver, requestId: ids())
                #expect(app["appId"]?.stringValue == SimulatedAppID.defaultMediaReceiver)
            }
        }
    }

    @Test("group volume scales the members; a member's own change shows in DEVICE_UPDATED")
    func volumes() async throws {
        let kitchen = ownAddressDevice("Kitchen", volume: 0.2)
        let den = ownAddressDevice("Den", volume: 0.4)
        try await withSimulator([kitchen, den]) { sim in
            let group = try await sim.addGroup(SimulatedGroupConfiguration(name: "Downstairs", members: [kitchen.id, den.id]))
            try await withClosing(try await TestCastClient.connected(to: group), close: { await $0.close() }) { client in
                try await withClosing(try await TestCastClient.connected(to: sim.devices[0]), close: { await $0.close() }) { member in

                    let request = ids()
                    try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                          #"{"type":"SET_VOLUME","volume":{"level":0.8},"requestId":\#(request)}"#)
                    let reply = await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS", requestId: request)
                    #expect(close(reply?["status"]?["volume"]?["level"]?.doubleValue, 0.8))
                    let kitchenUpdate = await client.waitFor(namespace: CastNamespace.multizone, type: "DEVICE_UPDATED") {
                        $0["device"]?["deviceId"]?.stringValue == dashed(kitchen.id)
                    }
                    let denUpdate = await client.waitFor(namespace: CastNamespace.multizone, type: "DEVICE_UPDATED") {
                        $0["device"]?["deviceId"]?.stringValue == dashed(den.id)
                    }
                    #expect(close(level(kitchenUpdate?["device"]), 0.4), "0.2 scaled by 0.8/0.4")
                    #expect(close(level(denUpdate?["device"]), 0.8))
                    try await waitForState(sim.devices[0], "volume 0.4") { close($0.receiverStatus.volume?.level ?? -1, 0.4) }
                    let memberBroadcast = await member.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS") {
                        close($0["status"]?["volume"]?["level"]?.doubleValue, 0.4)
                    }
                    #expect(memberBroadcast != nil, "the member tells its own senders")

                    // A member's own change (a remote): DEVICE_UPDATED, and the group volume follows the loudest.
                    await sim.devices[0].setVolumeRemotely(level: 1.0)
                    let own = await client.waitFor(namespace: CastNamespace.multizone, type: "DEVICE_UPDATED") {
                        $0["device"]?["deviceId"]?.stringValue == dashed(kitchen.id) && close($0["device"]?["volume"]?["level"]?.doubleValue, 1.0)
                    }
                    #expect(own != nil)
                    let groupStatus = await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS") {
                        close($0["status"]?["volume"]?["level"]?.doubleValue, 1.0)
                    }
                    #expect(groupStatus != nil)

                    // Muting the group mutes every member.
                    try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver,
                                          #"{"type":"SET_VOLUME","volume":{"muted":true},"requestId":\#(ids())}"#)
                    for device in sim.devices where !device.isGroup {
                        try await waitForState(device, "muted") { $0.receiverStatus.volume?.muted == true }
                    }
                    let muted = await client.waitFor(namespace: CastNamespace.receiver, type: "RECEIVER_STATUS") {
                        $0["status"]?["volume"]?["muted"]?.boolValue == true
                    }
                    #expect(muted != nil)
                }
            }
        }
    }

    @Test("while the group plays, members show its app with no media of their own; STOP sends them back to idle")
    func membersFollowPlayback() async throws {
        let kitchen = ownAddressDevice("Kitchen")
        let den = ownAddressDevice("Den")
        try await withSimulator([kitchen, den]) { sim in
            let denDevice = sim.devices[1]
            // Den plays on its own first.
            try await withClosing(try await TestCastClient.connected(to: denDevice), close: { await $0.close() }) { denClient in
                let ownApp = try await denClient.launch(SimulatedAppID.defaultMediaReceiver, requestId: ids())
                let ownTransport = try #require(ownApp["transportId"]?.stringValue)
                try await denClient.connect(to: ownTransport)
                _ = try await denClient.mediaRequest(ownTransport, requestId: 50,
                    #"{"type":"LOAD","requestId":50,"media":{"contentId":"http://x/own.mp3","contentType":"audio/mpeg","streamType":"BUFFERED"}}"#)

                let group = try await sim.addGroup(SimulatedGroupConfiguration(name: "Downstairs", members: [kitchen.id, den.id]))
                try await withClosing(try await TestCastClient.connected(to: group), close: { await $0.close() }) { client in
                    let app = try await client.launch(SimulatedAppID.defaultMediaReceiver, requestId: ids())
                    let transport = try #require(app["transportId"]?.stringValue)
                    try await client.connect(to: transport)
                    let load = try await client.mediaRequest(transport, requestId: 60,
                        #"{"type":"LOAD","requestId":60,"media":{"contentId":"http://x/group.mp3","contentType":"audio/mpeg","streamType":"BUFFERED"}}"#)
                    #expect(load.firstStatus?["playerState"]?.stringValue == "PLAYING")

                    for device in [sim.devices[0], denDevice] {
                        try await waitForState(device, "following the group") {
                            $0.followedGroup == group.id && $0.mediaStatus == nil
                                && $0.receiverStatus.applications.first?.appId == SimulatedAppID.defaultMediaReceiver
                        }
                    }
                    let interrupted = await denClient.waitFor(namespace: CastNamespace.media, type: "MEDIA_STATUS") {
                        $0.firstStatus?["idleReason"]?.stringValue == "INTERRUPTED"
                    }
                    #expect(interrupted != nil, "the member's own session was interrupted by the group")

                    // A sender of the member finds the app and an empty media status.
                    let memberStatus = try await denDevice.state()
                    let shownTransport = try #require(memberStatus.receiverStatus.applications.first?.transportId)
                    #expect(shownTransport != ownTransport)
                    try await denClient.connect(to: shownTransport)
                    let empty = try await denClient.mediaRequest(shownTransport, requestId: 70, #"{"type":"GET_STATUS","requestId":70}"#)
                    #expect(empty["type"]?.stringValue == "MEDIA_STATUS")
                    #expect(empty["status"]?.arrayValue?.isEmpty == true)

                    // The group stops: members go back to their idle screen.
                    try await client.send(CastNamespace.receiver, to: CastEndpoint.receiver, #"{"type":"STOP","requestId":\#(ids())}"#)
                    for device in [sim.devices[0], denDevice] {
                        try await waitForState(device, "idle again") {
                            $0.followedGroup == nil && $0.receiverStatus.applications.first?.appId == SimulatedAppID.backdrop
                        }
                    }
                }
            }
        }
    }

    @Test("moving the leader closes the endpoint; it reappears at the new leader's address and port under a new name")
    func leaderMove() async throws {
        let kitchen = ownAddressDevice("Kitchen")
        let den = ownAddressDevice("Den")
        try await withSimulator([kitchen, den]) { sim in
            let group = try await sim.addGroup(SimulatedGroupConfiguration(name: "Downstairs", members: [kitchen.id, den.id]))
            let before = try await group.groupSummary()
            #expect(before.instanceName == "Google-Cast-Group-\(group.id)")
            let client = try await TestCastClient.connected(to: group)

            let after = try await sim.moveLeader(ofGroup: dashed(group.id))
            #expect(after.leader == den.id)
            #expect(after.host == den.host && group.host == den.host)
            #expect(after.port == before.port, "a real group keeps its port when its leader changes")
            #expect(after.instanceName == before.instanceName + "-1")
            #expect(await waitUntil { client.isClosed }, "the old endpoint closed its connections")
            await client.close()
            await #expect(throws: (any Error).self) {
                _ = try await TestCastClient.connect(host: kitchen.host, port: before.port, group: testGroup)
            }
            try await withClosing(try await TestCastClient.connected(to: group), close: { await $0.close() }) { moved in
                let status = try await moved.multizoneStatus(requestId: ids())
                #expect(status["status"]?["devices"]?.arrayValue?.count == 2)

                let announced = try #require(sim.serviceAnnouncements.first { $0.key == group.id })
                #expect(announced.instanceName == after.instanceName)
                #expect(announced.hostName == den.mdnsHostName && announced.address == den.host)
                #expect(announced.port == after.port)
                #expect(announced.txt["id"] == dashed(group.id))

                let back = try await sim.moveLeader(ofGroup: group.id, to: "Kitchen")
                #expect(back.leader == kitchen.id && back.host == kitchen.host && back.instanceName.hasSuffix("-2"))
            }
        }
    }

    @Test("on the shared address a moved group listens on another port")
    func sharedAddressMove() async throws {
        try await withSimulator([testDevice("A"), testDevice("B")]) { sim in
            let group = try await sim.addGroup(SimulatedGroupConfiguration(name: "Pair", members: ["A", "B"]))
            #expect(group.host == "127.0.0.1")
            let before = group.port
            let after = try await sim.moveLeader(ofGroup: group.id)
            #expect(after.host == "127.0.0.1" && after.port != before && group.isListening)
            #expect(sim.serviceAnnouncements.first { $0.key == group.id }?.hostName == nil)
            _ = try await TestCastClient.connected(to: group)
        }
    }

    @Test("members leave and join: DEVICE_REMOVED, DEVICE_ADDED; a leaving leader moves the group first")
    func membership() async throws {
        let kitchen = ownAddressDevice("Kitchen")
        let den = ownAddressDevice("Den")
        let hall = ownAddressDevice("Hall", volume: 0.7)
        try await withSimulator([kitchen, den, hall]) { sim in
            let group = try await sim.addGroup(SimulatedGroupConfiguration(name: "Downstairs", members: [kitchen.id, den.id]))
            try await withClosing(try await TestCastClient.connected(to: group), close: { await $0.close() }) { client in

                try await sim.addMember("Hall", toGroup: group.id)
                let added = await client.waitFor(namespace: CastNamespace.multizone, type: "DEVICE_ADDED")
                #expect(added?["device"]?["deviceId"]?.stringValue == dashed(hall.id))
                #expect(close(level(added?["device"]), 0.7))
                try await waitForState(sim.devices[2], "member of the group") { $0.memberOf == [group.id] }
                #expect(try await client.multizoneStatus(requestId: ids())["status"]?["devices"]?.arrayValue?.count == 3)

                try await sim.removeMember(den.id, fromGroup: group.id)
                let removed = await client.waitFor(namespace: CastNamespace.multizone, type: "DEVICE_REMOVED")
                #expect(removed?["deviceId"]?.stringValue == dashed(den.id))
                try await waitForState(sim.devices[1], "no longer a member") { $0.memberOf.isEmpty }

                // The leader leaves: the group moves to the next member, then lets it go.
                try await sim.removeMember("Kitchen", fromGroup: group.id)
                let summary = try await group.groupSummary()
                #expect(summary.leader == hall.id && summary.members == [hall.id] && group.host == hall.host)
                await #expect(throws: SimulatorError.self) { try await sim.removeMember("Hall", fromGroup: group.id) }
            }
        }
    }

    @Test("a dynamic group exists only until it is removed; a stereo pair says isMultichannel")
    func dynamicGroupAndStereoPair() async throws {
        let left = ownAddressDevice("Left")
        let right = ownAddressDevice("Right")
        try await withSimulator([left, right]) { sim in
            let pair = try await sim.addGroup(SimulatedGroupConfiguration(name: "Pair", members: [left.id, right.id],
                                                                           multichannel: true))
            try await withClosing(try await TestCastClient.connected(to: pair), close: { await $0.close() }) { pairClient in
                #expect(try await pairClient.multizoneStatus(requestId: ids())["status"]?["isMultichannel"]?.boolValue == true)

                let dynamic = try await sim.addGroup(SimulatedGroupConfiguration(name: "Temporary", members: [right.id, left.id],
                                                                                  dynamic: true))
                #expect(dynamic.host == right.host)
                try await waitForState(sim.devices[0], "in both groups") { Set($0.memberOf) == [pair.id, dynamic.id] }
                let address = (dynamic.host, dynamic.port)
                _ = try await TestCastClient.connected(to: dynamic)
                #expect(sim.serviceAnnouncements.contains { $0.key == dynamic.id })

                try await sim.removeGroup(id: dynamic.id)
                #expect(sim.device(id: dynamic.id) == nil)
                #expect(!sim.serviceAnnouncements.contains { $0.key == dynamic.id })
                try await waitForState(sim.devices[0], "out of the dynamic group") { $0.memberOf == [pair.id] }
                await #expect(throws: (any Error).self) {
                    _ = try await TestCastClient.connect(host: address.0, port: address.1, group: testGroup)
                }
            }
        }
    }

    @Test("announcements: every device and group, again after each change")
    func announcements() async throws {
        let kitchen = ownAddressDevice("Kitchen")
        try await withSimulator([kitchen, testDevice("Shared")]) { sim in
            let seen = NIOLockedValueBox<[[ServiceAnnouncement]]>([])
            sim.onAnnouncementsChanged { list in seen.withLockedValue { $0.append(list) } }
            #expect(seen.withLockedValue { $0.count } == 1)
            let first = try #require(seen.withLockedValue { $0.first })
            let own = try #require(first.first { $0.key == kitchen.id })
            #expect(own.hostName == dashed(kitchen.id) + ".local" && own.address == kitchen.host && own.port == 8009)
            #expect(own.instanceName == "Google-Home-\(kitchen.id)")
            #expect(first.first { $0.name == "Shared" }?.hostName == nil)

            let group = try await sim.addGroup(SimulatedGroupConfiguration(name: "Solo", members: [kitchen.id]))
            let afterAdd = try #require(seen.withLockedValue { $0.last })
            #expect(afterAdd.count == 3 && afterAdd.contains { $0.key == group.id && $0.address == kitchen.host })
            try await sim.removeGroup(id: group.id)
            #expect(seen.withLockedValue { $0.last?.count } == 2)
        }
    }

    @Test("control routes: create, list, move, join, leave and end groups; eureka behaviour")
    func controlRoutes() async throws {
        try await withSimulator([testDevice("A"), testDevice("B"), testDevice("C")]) { sim in
            let router = ControlRouter(simulator: sim)
            func call(_ method: HTTPMethod, _ uri: String, _ body: String = "") async throws -> (HTTPResponseStatus, JSONValue) {
                let response = await router.handle(method: method, uri: uri, body: Array(body.utf8))
                return (response.status, try CastJSON.decode(JSONValue.self, from: response.body))
            }
            var (status, body) = try await call(.POST, "/groups", #"{"name":"Pair","members":["A","B"],"multichannel":true}"#)
            #expect(status == .ok)
            let id = try #require(body["id"]?.stringValue)
            #expect(body["leader"]?.stringValue == sim.devices[0].id && body["multichannel"]?.boolValue == true)
            (status, body) = try await call(.GET, "/groups")
            #expect(body.arrayValue?.map { $0["id"]?.stringValue } == [id])
            (status, body) = try await call(.POST, "/groups/\(dashed(id))/leader", "{}")
            #expect(status == .ok && body["leader"]?.stringValue == sim.devices[1].id)
            (status, _) = try await call(.POST, "/groups/\(id)/members", #"{"id":"C"}"#)
            #expect(status == .ok)
            (status, _) = try await call(.DELETE, "/groups/\(id)/members/A")
            #expect(status == .ok)
            #expect(await sim.groupSummaries().first?.members == [sim.devices[1].id, sim.devices[2].id])
            (status, body) = try await call(.GET, "/announcements")
            #expect(body.arrayValue?.count == 4)
            (status, _) = try await call(.POST, "/groups", #"{"name":"Bad","members":["nobody"]}"#)
            #expect(status == .conflict)
            (status, _) = try await call(.POST, "/groups", #"{"name":"Bad"}"#)
            #expect(status == .badRequest)
            (status, _) = try await call(.DELETE, "/groups/\(id)")
            #expect(status == .ok && sim.groups.isEmpty)
            (status, _) = try await call(.POST, "/devices/\(sim.devices[0].id)/eureka", #"{"mode":"sideways"}"#)
            #expect(status == .badRequest)
            (status, _) = try await call(.POST, "/devices/\(sim.devices[0].id)/eureka", #"{"mode":"slow","http":false}"#)
            #expect(status == .ok)
        }
    }
}

extension ServiceAnnouncement {
    var name: String? { txt["fn"] }
}
