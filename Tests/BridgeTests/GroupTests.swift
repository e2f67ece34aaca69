import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// Speaker groups in the core: membership from every multizone message kind, members that show
/// what their group plays, commands a member hands to its group, dynamic groups, removal.
@Suite struct GroupTests {
    static let groupID = "aaaaaaaa000000000000000000000001"
    static let denID = "dddddddd000000000000000000000002"
    static let strangerID = "eeeeeeee000000000000000000000003"
    static let dynamicID = "bbbbbbbb000000000000000000000004"

    static func dashed(_ id: String) -> String {
        let hex = Array(id)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }.joined(separator: "-")
    }

    static func groupDescriptor(name: String = "Downstairs", id: String = groupID, dynamic: Bool = false) -> DeviceDescriptor {
        DeviceDescriptor(id: id, friendlyName: name, model: "Google Cast Group", manufacturer: "Google Inc.", castType: .group,
                         host: "192.0.2.11", port: 32187, capabilities: ["audio_out", "group"], source: .mdns,
                         isDynamicGroup: dynamic)
    }

    static func denDescriptor() -> DeviceDescriptor {
        DeviceDescriptor(id: denID, friendlyName: "Den", model: "Nest Audio", castType: .audio, host: "192.0.2.12")
    }

    static func member(_ id: String, _ name: String, level: Double = 0.5, muted: Bool = false) -> MultizoneDevice {
        MultizoneDevice(deviceId: dashed(id), name: name, capabilities: 4, volume: StreamVolume(level: level, muted: muted))
    }

    static let groupApp = ReceiverApplication(appId: CastAppID.defaultMediaReceiver, displayName: "Default Media Receiver",
                                              namespaces: [CastNamespace.media], sessionId: "group-session",
                                              statusText: "Casting", transportId: "group-transport")

    let members = "cast2mqtt/downstairs/members"
    let speakerMedia = "cast2mqtt/kitchen_speaker/media"
    let speakerState = "cast2mqtt/kitchen_speaker/state"

    /// Kitchen Speaker and Den online with nothing playing, the group online and idle, its first
    /// MULTIZONE_STATUS naming both (and a third speaker the bridge does not know).
    func setUp(multichannel: Bool = false) -> (Harness, BridgeOutput) {
        var h = Harness()
        h.online(speakerDescriptor(), status: receiver(app: nil))
        h.online(Self.denDescriptor(), status: receiver(app: nil))
        h.online(Self.groupDescriptor(), status: receiver(app: nil))
        let out = h.feed(CastEvent.multizone(Self.groupID, .status(
            requestId: 1, devices: [Self.member(speakerID, "Kitchen Speaker", level: 0.4), Self.member(Self.denID, "Den"),
                                    Self.member(Self.strangerID, "Garage", level: 0.25, muted: true)],
            isMultichannel: multichannel, playbackSession: nil)))
        return (h, out)
    }

    /// The group plays: its app and a media session.
    func groupPlays(_ h: inout Harness, state: String = "PLAYING") -> BridgeOutput {
        var out = h.feed(CastEvent.receiverStatus(Self.groupID, receiver(app: Self.groupApp)))
        // pause, seek, queue next and previous among its commands
        out.append(h.feed(CastEvent.mediaStatus(Self.groupID, [playing(session: 7, content: "http://192.0.2.5/group.mp3", state: state,
                                                                       commands: 274447 | 64 | 128)])))
        return out
    }

    /// The media document a device shows now.
    func shown(_ h: Harness, _ id: DeviceID) -> JSONValue {
        h.core.registry[id].map { h.core.groups.shownMedia($0, in: h.core.registry).doc } ?? .null
    }

    @Test func membershipFollowsEveryMultizoneMessage() throws {
        var (h, out) = setUp()
        let doc = try #require(out.json(members)?.arrayValue)
        #expect(doc.count == 3)
        #expect(doc[0] == .object(["id": .string(speakerID), "name": .string("Kitchen Speaker"), "topic": .string("kitchen_speaker"),
                                   "volume": .number(0.4), "muted": .bool(false)]))
        #expect(doc[1]["topic"] == .string("den"))
        #expect(doc[2] == .object(["id": .string(Self.strangerID), "name": .string("Garage"), "topic": .null,
                                   "volume": .number(0.25), "muted": .bool(true)]))
        #expect(out.on(members).first?.retain == true)
        let groupsOfSpeaker = out.json("cast2mqtt/kitchen_speaker/info")?["groups"]
        #expect(groupsOfSpeaker == .array([.object(["id": .string(Self.groupID), "topic": .string("downstairs")])]))
        #expect(h.core.groups.infoDocument(try #require(h.core.registry[Self.groupID]), in: h.core.registry)["multichannel"] == .bool(false))

        // DEVICE_UPDATED: a member's volume, within that one message.
        out = h.feed(CastEvent.multizone(Self.groupID, .deviceUpdated(Self.member(Self.denID, "Den", level: 0.8))))
        #expect(out.json(members)?.arrayValue?[1]["volume"] == .number(0.8))
        #expect(out.on("cast2mqtt/den/info").isEmpty)  // its groups did not change

        // DEVICE_REMOVED: Den leaves; its info no longer lists the group.
        out = h.feed(CastEvent.multizone(Self.groupID, .deviceRemoved(deviceId: Self.dashed(Self.denID))))
        #expect(out.json(members)?.arrayValue?.map { $0["id"] } == [.string(speakerID), .string(Self.strangerID)])
        #expect(out.json("cast2mqtt/den/info")?["groups"] == .array([]))

        // DEVICE_ADDED: Den is back.
        out = h.feed(CastEvent.multizone(Self.groupID, .deviceAdded(Self.member(Self.denID, "Den", level: 0.3))))
        #expect(out.json(members)?.arrayValue?.last?["topic"] == .string("den"))
        #expect(out.json("cast2mqtt/den/info")?["groups"]?.arrayValue?.count == 1)
        #expect(out.logs.contains { $0.contains("downstairs") && $0.contains("joined den") })

        // A member the bridge finds later gets its topic in the group's members.
        out = h.feed(.deviceDiscovered(DeviceDescriptor(id: Self.strangerID, friendlyName: "Garage", castType: .audio, host: "192.0.2.13")))
        #expect(out.json(members)?.arrayValue?[1]["topic"] == .string("garage"))
        #expect(out.json("cast2mqtt/garage/info")?["groups"]?.arrayValue?.first?["topic"] == .string("downstairs"))
    }

    @Test func aStereoPairIsMarkedMultichannel() {
        let (h, out) = setUp(multichannel: true)
        #expect(out.json("cast2mqtt/downstairs/info")?["multichannel"] == .bool(true))
        #expect(h.core.registry[speakerID].map { h.core.groups.infoDocument($0, in: h.core.registry) }?["multichannel"] == nil)
    }

    @Test func aMemberShowsWhatItsGroupPlaysAndGoesBack() throws {
        var (h, _) = setUp()
        var out = groupPlays(&h)
        let doc = try #require(out.json(speakerMedia))
        #expect(doc["playing_in"] == .string("downstairs"))
        #expect(doc["title"] == .string("Song"))
        #expect(doc["content_id"] == .string("http://192.0.2.5/group.mp3"))
        #expect(doc["position"] == .number(31.2))
        #expect(doc["position_updated_at"] == .string(iso8601(t0)))
        #expect(doc["images"]?.arrayValue?.count == 1)
        #expect(out.texts(speakerState).last == "playing")
        #expect(out.texts("cast2mqtt/den/state").last == "playing")

        // The member shows the group's app without media of its own (as members do): still the group's.
        out = h.feed(CastEvent.receiverStatus(speakerID, receiver(app: dmrApp)))
        out.append(h.feed(CastEvent.mediaStatus(speakerID, [])))
        #expect(h.core.registry[speakerID]?.media == nil)
        #expect(shown(h, speakerID)["playing_in"] == .string("downstairs"))
        #expect(out.on(speakerState).isEmpty)

        // The group pauses: the member follows.
        out = h.feed(CastEvent.mediaStatus(Self.groupID, [playing(session: 7, content: "http://192.0.2.5/group.mp3", state: "PAUSED")]))
        #expect(out.texts(speakerState).last == "paused")
        #expect(out.json(speakerMedia)?["state"] == .string("paused"))

        // The group stops: the member goes back to its own state.
        out = h.feed(CastEvent.receiverStatus(Self.groupID, receiver(app: nil)))
        #expect(out.texts(speakerState).last == "idle")  // it shows an app of its own, no media
        #expect(out.json(speakerMedia) == .object(["state": .string("idle")]))

        // Playing again, then Den leaves: Den shows its own state, Kitchen still the group's.
        _ = groupPlays(&h)
        out = h.feed(CastEvent.multizone(Self.groupID, .deviceRemoved(deviceId: Self.dashed(Self.denID))))
        #expect(out.texts("cast2mqtt/den/state").last == "off")
        #expect(out.json("cast2mqtt/den/media")?["playing_in"] == nil)
        #expect(out.on(speakerState).isEmpty)  // unchanged: still playing in the group

        // The group goes offline: the member keeps showing it while it reconnects, and no longer
        // once it has not come back within the hold.
        out = h.feed(CastEvent.castDisconnected(Self.groupID, reason: "heartbeat timeout"))
        #expect(out.on(speakerState).isEmpty && out.on(speakerMedia).isEmpty)
        h.now = h.now.addingTimeInterval(GroupDirectory.reconnectHold + 1)
        out = h.feed(.tick)
        #expect(out.texts(speakerState).last == "idle")
        #expect(out.json(speakerMedia)?["playing_in"] == nil)
    }

    /// Issue #26: a member of a playing group that launches an app of its own (a custom receiver
    /// without a media session) shows that, not its group; a multizone follower app or the
    /// group's own app is still the group's playback.
    @Test func aMemberRunningAnAppOfItsOwnDoesNotMirrorItsGroup() throws {
        var (h, _) = setUp()
        _ = groupPlays(&h)
        #expect(shown(h, speakerID)["playing_in"] == .string("downstairs"))
        let custom = ReceiverApplication(appId: "ABCD1234", displayName: "Custom receiver", namespaces: ["urn:x-cast:com.example"],
                                         sessionId: "own-session", statusText: "Custom", transportId: "own-transport")
        var out = h.feed(CastEvent.receiverStatus(speakerID, receiver(app: custom)))
        out.append(h.feed(CastEvent.mediaStatus(speakerID, [])))
        #expect(out.json(speakerMedia)?["playing_in"] == nil, "\(String(describing: out.json(speakerMedia)))")
        #expect(shown(h, speakerID)["playing_in"] == nil)
        #expect(out.texts(speakerState).last == "idle")
        // Its transport commands are its own again (the custom receiver has no media session).
        #expect(h.core.commandTarget(.pause, device: speakerID) == speakerID)
        #expect(shown(h, Self.denID)["playing_in"] == .string("downstairs"), "the other member still plays in the group")
        // Back to following the group (older firmware's follower app): the group's again.
        let follower = ReceiverApplication(appId: "MultizoneFollower", displayName: "Multizone follower", namespaces: [],
                                           sessionId: "f", statusText: nil, transportId: "multizone-2")
        out = h.feed(CastEvent.receiverStatus(speakerID, receiver(app: follower)))
        #expect(out.json(speakerMedia)?["playing_in"] == .string("downstairs"))
        #expect(h.core.commandTarget(.pause, device: speakerID) == Self.groupID)
        // The idle screen is no app of its own either.
        out = h.feed(CastEvent.receiverStatus(speakerID, receiver(app: ReceiverApplication(appId: CastAppID.backdrop, displayName: "Backdrop",
                                                                                              isIdleScreen: true))))
        #expect(shown(h, speakerID)["playing_in"] == .string("downstairs"))
    }

    /// Issue #26: while a static group reconnects (its leader moved) its members keep showing its
    /// playback — no `idle` in between — and when it is back they go on showing it.
    @Test func membersKeepTheirGroupsPlaybackWhileItReconnects() throws {
        var (h, _) = setUp()
        _ = groupPlays(&h)
        #expect(shown(h, speakerID)["playing_in"] == .string("downstairs"))
        var all = h.feed(CastEvent.castDisconnected(Self.groupID, reason: "closed by peer"))
        #expect(all.texts("cast2mqtt/downstairs/availability").last == "offline")
        h.now = h.now.addingTimeInterval(GroupDirectory.reconnectHold - 5)
        all.append(h.feed(.tick))
        #expect(shown(h, speakerID)["playing_in"] == .string("downstairs"))
        // Back at its new leader, the same session.
        all.append(h.feed(CastEvent.castConnected(Self.groupID)))
        all.append(h.feed(CastEvent.receiverStatus(Self.groupID, receiver(app: Self.groupApp))))
        all.append(h.feed(CastEvent.mediaStatus(Self.groupID, [playing(session: 7, content: "http://192.0.2.5/group.mp3")])))
        h.now = h.now.addingTimeInterval(GroupDirectory.reconnectHold)
        all.append(h.feed(.tick))
        for topic in [speakerMedia, "cast2mqtt/den/media"] {
            #expect(all.on(topic).compactMap(json).allSatisfy { $0["playing_in"] == .string("downstairs") }, "\(topic) flickered")
        }
        #expect(!all.texts(speakerState).contains { $0 != "playing" })
        #expect(shown(h, speakerID)["playing_in"] == .string("downstairs"))
    }

    @Test func aMemberPlayingOnItsOwnShowsItsOwnMedia() {
        var (h, _) = setUp()
        _ = h.feed(CastEvent.receiverStatus(speakerID, receiver(app: dmrApp)))
        _ = h.feed(CastEvent.mediaStatus(speakerID, [playing(session: 3, content: "http://192.0.2.5/own.mp3")]))
        let out = groupPlays(&h)
        #expect(out.on(speakerMedia).isEmpty)  // its own session plays: nothing changes for it
        #expect(out.json("cast2mqtt/den/media")?["playing_in"] == .string("downstairs"))
    }

    @Test func transportCommandsOfAMemberGoToTheGroupTheRestStays() throws {
        var (h, _) = setUp()
        // Not in a playing group: the member itself has nothing to pause.
        var out = h.publish("cast2mqtt/kitchen_speaker/command/pause", "")
        #expect(out.json("cast2mqtt/kitchen_speaker/response")?["error"]?["code"] == .string("no_app"))

        _ = groupPlays(&h)
        for (command, payload) in [("pause", ""), ("play", ""), ("toggle", ""), ("stop", ""), ("seek", "30"), ("rate", "1.5"), ("next", ""), ("previous", "")] {
            out = h.publish("cast2mqtt/kitchen_speaker/command/\(command)", payload)
            let op = try #require(out.operations.first, "\(command) was not sent")
            #expect(op.deviceID == Self.groupID, "\(command) went to \(op.deviceID)")
            guard case .media(let request) = op.kind else { Issue.record("\(command): \(op.kind)"); continue }
            #expect(request.json(requestId: 1).contains("\"mediaSessionId\":7"), "\(command): \(request)")
            let answered = h.complete(op, .done)
            let response = try #require(answered.json("cast2mqtt/kitchen_speaker/response"))
            #expect(response["status"] == .string("ok"), "\(command): \(response)")
            #expect(response["command"] == .string(command))
        }
        // Volume, mute, load and launch stay on the member.
        for (command, payload) in [("volume", "30"), ("mute", "true"), ("load", "http://192.0.2.5/x.mp3"), ("launch", "CC1AD845")] {
            out = h.publish("cast2mqtt/kitchen_speaker/command/\(command)", payload)
            let op = try #require(out.operations.first, "\(command) was not sent")
            #expect(op.deviceID == speakerID, "\(command) went to \(op.deviceID)")
            h.complete(op, .done)
        }
        // Every command by one rule: what acts on the media session the member shows goes to the
        // group (subtitles and the queue too), the rest stays.
        let toGroup: [DeviceCommand] = [.skipAd, .tracks(TracksCommand(subtitles: .off)), .queue(.jump(itemId: 1))]
        let toMember: [DeviceCommand] = [.quit, .refresh, .transfer(to: "den", keepSource: false)]
        for command in toGroup { #expect(h.core.commandTarget(command, device: speakerID) == Self.groupID, "\(command)") }
        for command in toMember { #expect(h.core.commandTarget(command, device: speakerID) == speakerID, "\(command)") }
        // Not a member: the TV's own media.
        h.online(tvDescriptor(), status: receiver(app: nil))
        out = h.publish("cast2mqtt/living_room_tv/command/pause", "")
        #expect(out.operations.isEmpty)
        #expect(out.json("cast2mqtt/living_room_tv/response")?["error"]?["code"] == .string("no_app"))
    }

    @Test func aDynamicGroupIsFollowedButIsNoDevice() throws {
        var (h, _) = setUp()
        var out = h.feed(.deviceDiscovered(Self.groupDescriptor(name: "Kitchen + Den", id: Self.dynamicID, dynamic: true)))
        #expect(out.publications.allSatisfy { !$0.topic.contains("kitchen_den") && !$0.topic.hasPrefix("homeassistant/") },
                "\(out.publications)")
        #expect(h.core.registry[Self.dynamicID] == nil)
        out = h.feed(CastEvent.castConnected(Self.dynamicID))
        out.append(h.feed(CastEvent.receiverStatus(Self.dynamicID, receiver(app: Self.groupApp))))
        out.append(h.feed(CastEvent.multizone(Self.dynamicID, .status(requestId: 1, devices: [Self.member(speakerID, "Kitchen Speaker")],
                                                                         isMultichannel: false, playbackSession: nil))))
        out.append(h.feed(CastEvent.mediaStatus(Self.dynamicID, [playing(session: 2)])))
        #expect(out.json(speakerMedia)?["playing_in"] == .string("Kitchen + Den"))
        #expect(out.texts(speakerState).last == "playing")
        #expect(out.publications.allSatisfy { !$0.topic.hasPrefix("homeassistant/") && !$0.topic.contains("kitchen_den") })
        // Not listed, not counted, and the member's info does not list it.
        let devices = try #require(h.feed(.mqttConnected).json("cast2mqtt/bridge/devices")?.arrayValue)
        #expect(devices.count == 3 && !devices.contains { $0["id"] == .string(Self.dynamicID) })
        let groupsOfSpeaker = h.core.groups.infoDocument(try #require(h.core.registry[speakerID]), in: h.core.registry)["groups"]
        #expect(groupsOfSpeaker == .array([.object(["id": .string(Self.groupID), "topic": .string("downstairs")])]))

        // A pause sent to the member goes to the dynamic group's session.
        out = h.publish("cast2mqtt/kitchen_speaker/command/pause", "")
        let op = try #require(out.operations.first)
        #expect(op.deviceID == Self.dynamicID)
        let answered = h.complete(op, .mediaStatus([playing(session: 2, state: "PAUSED")]))
        #expect(answered.json("cast2mqtt/kitchen_speaker/response")?["data"]?["state"] == .string("paused"))
        #expect(answered.texts(speakerState).last == "paused")

        // It dissolves: forgotten, the member shows its own state.
        out = h.feed(.deviceRemoved(Self.dynamicID))
        #expect(out.forgotten == [Self.dynamicID])
        #expect(out.texts(speakerState).last == "off")
        #expect(h.core.groups.groupsOf[speakerID] == [Self.groupID])
    }

    @Test func aRemovedGroupHasItsMembersClearedAlsoAfterARestart() throws {
        var (h, _) = setUp()
        _ = groupPlays(&h)
        var out = h.publish("cast2mqtt/bridge/request/remove", "downstairs")
        #expect(out.on(members).first?.payload.isEmpty == true)
        #expect(out.json("cast2mqtt/kitchen_speaker/info")?["groups"] == .array([]))
        #expect(out.json(speakerMedia)?["playing_in"] == nil)
        #expect(out.texts(speakerState).last == "off")
        // A device that is no group has no members topic to clear.
        out = h.publish("cast2mqtt/bridge/request/remove", "den")
        #expect(out.on("cast2mqtt/den/members").isEmpty)

        // After a restart: a group gone from the configuration has its members topic cleared too.
        var first = Harness { $0.discovery.mdns = false }
        var group = Self.groupDescriptor()
        group.source = .static
        first.online(group, status: receiver(app: nil))
        _ = first.feed(CastEvent.multizone(Self.groupID, .status(requestId: 1, devices: [Self.member(speakerID, "Kitchen Speaker")],
                                                                  isMultichannel: false, playbackSession: nil)))
        let saved = try JSONDecoder().decode(PublishedSnapshot.self, from: JSONEncoder().encode(first.core.publishedSnapshot))
        #expect(saved.devices[Self.groupID]?.group == true)
        var second = Harness { $0.discovery.mdns = false }
        second.core.restorePublished(saved, staticIDs: [])
        out = second.feed(.mqttConnected)
        #expect(out.on(members).first?.payload.isEmpty == true)
    }

    @Test func aDeviceFromAStaticEntryUnderAnotherIdStaysConfigured() throws {
        var first = Harness { $0.discovery.mdns = false }
        var found = Self.groupDescriptor()
        found.source = .static
        found.configuredID = speakerID  // found through the Kitchen Speaker's eureka_info
        first.online(found, status: receiver(app: nil))
        let saved = first.core.publishedSnapshot
        #expect(saved.devices[Self.groupID]?.configured == speakerID)
        var kept = Harness { $0.discovery.mdns = false }
        kept.core.restorePublished(saved, staticIDs: [speakerID])
        #expect(kept.feed(.mqttConnected).on("cast2mqtt/downstairs/state").isEmpty)
        var gone = Harness { $0.discovery.mdns = false }
        gone.core.restorePublished(saved, staticIDs: [])
        #expect(gone.feed(.mqttConnected).on("cast2mqtt/downstairs/state").first?.payload.isEmpty == true)
    }

    @Test func factsArriveAsADescriptorUpdate() throws {
        var h = Harness()
        var bare = speakerDescriptor()
        bare.model = nil
        let config = "homeassistant/device/cast2mqtt_\(speakerID)/config"
        let first = h.online(bare, status: receiver(app: nil))
        #expect(first.json(config) != nil)
        #expect(first.json(config)?["device"]?["model"] == nil)
        var known = bare
        known.model = "Nest Audio"
        known.castType = .group  // a static device its host's eureka_info lists as a group
        let out = h.feed(.deviceUpdated(known))
        #expect(out.json("cast2mqtt/kitchen_speaker/info")?["model"] == .string("Nest Audio"))
        #expect(out.json("cast2mqtt/kitchen_speaker/info")?["multichannel"] == .bool(false))
        #expect(out.json(config)?["device"]?["model"] == .string("Nest Audio"))
    }

    @Test func aMemberMirroringItsGroupRepublishesTheGroupsPosition() throws {
        var h = Harness { $0.media.positionInterval = 5 }
        h.online(speakerDescriptor(), status: receiver(app: nil))
        h.online(Self.groupDescriptor(), status: receiver(app: nil))
        _ = h.feed(CastEvent.multizone(Self.groupID, .status(requestId: 1, devices: [Self.member(speakerID, "Kitchen Speaker")],
                                                              isMultichannel: false, playbackSession: nil)))
        _ = h.feed(CastEvent.receiverStatus(Self.groupID, receiver(app: Self.groupApp)))
        _ = h.feed(CastEvent.mediaStatus(Self.groupID, [playing(session: 7, time: 10)]))
        h.now = t0.addingTimeInterval(6)
        let out = h.feed(.tick)
        let doc = try #require(out.json(speakerMedia))
        #expect(doc["playing_in"] == .string("downstairs"))
        #expect(doc["position"] == .number(16))
    }

    @Test func hostileMembershipIsBounded() {
        var machine = CastSessionMachine(isGroup: true)
        _ = machine.connectionAnswered()
        _ = machine.receiverStatus(receiver(app: nil), now: t0)
        let many = (0..<500).map { MultizoneDevice(deviceId: String(format: "%032x", $0), name: String(repeating: "x", count: 5000)) }
        _ = machine.multizone(.status(requestId: 1, devices: many, isMultichannel: nil, playbackSession: nil))
        #expect(machine.current.multizone?.members.count == CastSessionMachine.maximumMembers)
        #expect(machine.current.multizone?.members.allSatisfy { ($0.name?.count ?? 0) <= CastSessionMachine.maximumMemberNameLength } == true)
        _ = machine.multizone(.deviceAdded(MultizoneDevice(deviceId: "new")))
        #expect(machine.current.multizone?.members.count == CastSessionMachine.maximumMembers)
        _ = machine.multizone(.deviceRemoved(deviceId: String(format: "%032x", 0)))
        _ = machine.multizone(.deviceAdded(MultizoneDevice(deviceId: String(repeating: "y", count: 1000))))
        #expect(machine.current.multizone?.members.count == CastSessionMachine.maximumMembers - 1)
        // A group learnt late asks its members at once.
        var late = CastSessionMachine()
        _ = late.connectionAnswered()
        #expect(late.becomeGroup() == [.askMultizoneStatus])
        #expect(late.becomeGroup().isEmpty)
    }
}
