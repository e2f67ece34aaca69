import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// Several `BridgeCore`s in instance mode around a tiny broker (retained messages, one delivery
/// order, topic filters): what each publishes, which one connects and answers.
struct CoreCluster {
    /// Instances that all reach the TV, connected and past the settle time: one of them owns it.
    static func settled(_ names: [String]) -> CoreCluster {
        var c = CoreCluster(names)
        for name in names { c.connect(name) }
        for name in names { c.feed(name, .deviceDiscovered(tvDescriptor())) }
        c.deliver()
        c.pass(4)
        return c
    }

    var cores: [String: Harness] = [:]
    var queue: [Publication] = []
    var retained: [String: [UInt8]] = [:]
    /// Everything published, in the broker's order, with its publisher.
    var log: [(from: String, publication: Publication)] = []
    var connected: [String: Set<DeviceID>] = [:]
    var away: Set<String> = []
    var now = t0

    init(_ names: [String], configure: (inout BridgeConfiguration) -> Void = { _ in }) {
        for name in names {
            cores[name] = Harness { c in
                c.instance = name
                configure(&c)
            }
            connected[name] = []
        }
    }

    static func matches(_ filter: String, _ topic: String) -> Bool {
        let f = filter.split(separator: "/", omittingEmptySubsequences: false)
        let t = topic.split(separator: "/", omittingEmptySubsequences: false)
        for (i, level) in f.enumerated() {
            if level == "#" { return true }
            guard i < t.count, level == "+" || level == t[i] else { return false }
        }
        return f.count == t.count
    }

    mutating func take(_ name: String, _ out: BridgeOutput) {
        for p in out.publications {
            queue.append(p)
            log.append((name, p))
            if p.retain {
                if p.payload.isEmpty { retained.removeValue(forKey: p.topic) } else { retained[p.topic] = p.payload }
            }
        }
        for id in out.release {
            connected[name]?.remove(id)
            feed(name, CastEvent.castDisconnected(id, reason: "closed"))
        }
        for id in out.connect {
            connected[name, default: []].insert(id)
            feed(name, CastEvent.castConnected(id))
            feed(name, CastEvent.receiverStatus(id, receiver()))
        }
    }

    mutating func feed(_ name: String, _ input: BridgeInput) { feed(name) { $0.feed(input) } }
    mutating func feed(_ name: String, _ event: CastEvent) { feed(name) { $0.feed(event) } }

    /// Runs `body` on the instance's core at the cluster's time and carries out its output.
    mutating func feed(_ name: String, _ body: (inout Harness) -> BridgeOutput) {
        guard var h = cores[name] else { return }
        h.now = now
        let out = body(&h)
        cores[name] = h
        take(name, out)
    }

    mutating func deliver(_ p: Publication, to name: String) {
        guard let core = cores[name]?.core, core.subscriptions.contains(where: { Self.matches($0, p.topic) }) else { return }
        feed(name, .mqttMessage(topic: p.topic, payload: p.payload, responseTopic: nil, correlationData: nil))
    }

    mutating func deliver() {
        var rounds = 0
        while !queue.isEmpty, rounds < 100_000 {
            rounds += 1
            let p = queue.removeFirst()
            for name in cores.keys.sorted() where !away.contains(name) { deliver(p, to: name) }
        }
    }

    mutating func connect(_ name: String) {
        away.remove(name)
        guard var h = cores[name] else { return }
        h.now = now
        let out = h.feed(.mqttConnected)
        cores[name] = h
        // The restored subscriptions deliver the retained messages before what it publishes.
        for (topic, payload) in retained.sorted(by: { $0.key < $1.key }) {
            deliver(Publication(topic: topic, payload: payload, retain: true), to: name)
        }
        take(name, out)
    }

    mutating func pass(_ seconds: Int) {
        for _ in 0..<seconds {
            now += 1
            for name in cores.keys.sorted() where !away.contains(name) { feed(name, .tick) }
            deliver()
        }
    }

    mutating func publish(_ topic: String, _ text: String) {
        queue.append(Publication(topic: topic, text: text, retain: false))
        deliver()
    }

    func owns(_ name: String, _ id: DeviceID) -> Bool { cores[name]?.core.instances?.ownership.owns(id) == true }
    func responses(_ topic: String) -> [(String, JSONValue)] {
        log.filter { $0.publication.topic == topic }.compactMap { entry in JSONOutput.parse(entry.publication.payload).map { (entry.from, $0) } }
    }
}

@Suite struct InstanceCoreTests {
    @Test func singleModeHasNothingOfInstances() {
        var h = Harness()
        #expect(h.core.instances == nil)
        #expect(!h.core.subscriptions.contains { $0.contains("instances") || $0.contains("claims") })
        #expect(h.core.lastWill.topic == "cast2mqtt/bridge/state")
        let out = h.online()
        #expect(out.publications.allSatisfy { !$0.topic.contains("/bridge/instances/") && !$0.topic.contains("/bridge/claims/") })
        #expect(h.core.handle(.mqttConnected, now: t0).publications.allSatisfy { !$0.topic.contains("/bridge/instances/") })
        #expect(out.json("cast2mqtt/living_room_tv/info")?["owner"] == nil)
    }

    func started(_ names: [String] = ["alpha", "beta"]) -> CoreCluster { CoreCluster.settled(names) }

    @Test func onlyTheOwnerConnectsAndPublishesTheDevice() throws {
        let c = started()
        let owners = ["alpha", "beta"].filter { c.owns($0, tvID) }
        #expect(owners.count == 1)
        let owner = try #require(owners.first)
        #expect(c.connected[owner] == [tvID])
        #expect(c.connected.values.filter { !$0.isEmpty }.count == 1)
        let deviceTopics = c.log.filter { $0.publication.topic.hasPrefix("cast2mqtt/living_room_tv/") }
        #expect(!deviceTopics.isEmpty)
        #expect(deviceTopics.allSatisfy { $0.from == owner })
        #expect(c.retained["cast2mqtt/living_room_tv/availability"] == Array("online".utf8))
        #expect(JSONOutput.parse(c.retained["cast2mqtt/living_room_tv/info"] ?? [])?["owner"] == .string(owner))
        // Discovery configs: the owner's only; the bridge device is one per instance.
        let configs = c.log.filter { $0.publication.topic.hasPrefix("homeassistant/") && $0.publication.topic.contains(tvID) }
        #expect(!configs.isEmpty && configs.allSatisfy { $0.from == owner })
        #expect(c.retained["homeassistant/device/cast2mqtt_bridge_alpha/config"] != nil)
        #expect(c.retained["homeassistant/device/cast2mqtt_bridge_beta/config"] != nil)
        // The plain bridge topics are the primary's (alpha, the lower name).
        #expect(c.log.filter { $0.publication.topic == "cast2mqtt/bridge/state" }.allSatisfy { $0.from == "alpha" })
        let devices = JSONOutput.parse(c.retained["cast2mqtt/bridge/devices"] ?? [])
        #expect(devices?.arrayValue?.first?["owner"] == .string(owner))
    }

    @Test func aCommandIsAnsweredOnceByTheOwner() throws {
        var c = started()
        c.publish("cast2mqtt/living_room_tv/command/volume", #"{"id": "v1", "level": 0.3}"#)
        // The owner started the operation; answer it.
        let owner = try #require(["alpha", "beta"].first { c.owns($0, tvID) })
        var h = try #require(c.cores[owner])
        let op = try #require(h.operationDevices.keys.max())
        let out = h.feed(.operationCompleted(tvID, op, .success(.done)))
        c.cores[owner] = h
        c.take(owner, out)
        let answers = c.responses("cast2mqtt/living_room_tv/response")
        #expect(answers.count == 1)
        #expect(answers.first?.0 == owner)
    }

    /// SIGTERM of the owner: the other instance takes the device; a command sent in the middle
    /// of the handover is answered exactly once, never `device_offline`.
    @Test func aCommandDuringTheHandoverIsAnsweredOnce() throws {
        var c = started()
        let owner = try #require(["alpha", "beta"].first { c.owns($0, tvID) })
        let other = owner == "alpha" ? "beta" : "alpha"
        c.feed(owner, .instanceStop)
        // The stopping document is at the broker; the command arrives right behind it.
        c.queue.append(Publication(topic: "cast2mqtt/living_room_tv/command/volume", text: #"{"id": "v1", "level": 0.2}"#, retain: false))
        c.deliver()
        #expect(c.owns(other, tvID))
        #expect(!c.owns(owner, tvID))
        #expect(c.connected[owner]?.isEmpty == true)
        #expect(c.cores[owner]?.core.instances?.ownership.handedOver == true)
        // The new owner holds the command until the device is online with it, then runs it.
        let ops = c.cores[other]?.operationDevices ?? [:]
        #expect(ops.values.contains(tvID), "the held command was started by the new owner")
        c.pass(12)
        let answers = c.responses("cast2mqtt/living_room_tv/response")
        #expect(answers.count <= 1)
        #expect(answers.allSatisfy { $0.1["error"]?["code"] != .string("device_offline") })
        #expect(answers.allSatisfy { $0.0 == other })
    }

    /// A command the next owner cannot run within the bound is answered `busy` with a retry hint.
    @Test func aHeldCommandPastTheBoundIsBusyWithRetryAfter() throws {
        var c = CoreCluster(["alpha"])
        c.connect("alpha")
        c.feed("alpha", .deviceDiscovered(tvDescriptor()))
        c.deliver()
        c.pass(1)
        // Settling: the device is not claimed yet, alpha (the rule's owner) holds the command.
        c.publish("cast2mqtt/living_room_tv/command/pause", #"{"id": "p2"}"#)
        #expect(c.responses("cast2mqtt/living_room_tv/response").isEmpty)
        #expect(c.cores["alpha"]?.core.instances?.held.count == 1)
        // Another live instance takes the device (and never connects it in this test).
        let zetaDoc = InstanceDocument(state: .online, version: "t", started: t0, willDelay: 10, devices: [tvID: 1])
        c.queue.append(Publication(topic: "cast2mqtt/bridge/instances/zeta", payload: JSONOutput.bytes(zetaDoc.json), retain: true))
        c.queue.append(Publication(topic: "cast2mqtt/bridge/claims/\(tvID)", payload: JSONOutput.bytes(Claim(owner: "zeta", epoch: 1).json),
                                   retain: true))
        c.deliver()
        c.pass(12)
        let answers = c.responses("cast2mqtt/living_room_tv/response")
        #expect(answers.count == 1)
        #expect(answers.first?.1["error"]?["code"] == .string("busy"))
        #expect(answers.first?.1["error"]?["retry_after"] == .number(5))
        #expect(answers.first?.1["id"] == .string("p2"))
    }

    @Test func theHomeAssistantBridgeDeviceIsOnePerInstance() throws {
        let h = Harness { $0.instance = "upstairs" }
        let configs = h.core.homeAssistant.bridgeConfigs
        let (topic, doc) = try #require(configs.first)
        #expect(topic == "homeassistant/device/cast2mqtt_bridge_upstairs/config")
        #expect(doc["device"]?["identifiers"] == .array([.string("cast2mqtt_bridge_upstairs")]))
        #expect(doc["device"]?["name"] == .string("cast2mqtt upstairs"))
        let connection = try #require(doc["cmps"]?["connection"])
        #expect(connection["unique_id"] == .string("cast2mqtt_bridge_upstairs_connection"))
        #expect(connection["state_topic"] == .string("cast2mqtt/bridge/instances/upstairs"))
        // A device's unique ids do not depend on the instance; via_device names its owner's bridge device.
        var g = Harness { $0.instance = "upstairs" }
        g.feed(.deviceDiscovered(tvDescriptor()))
        let device = try #require(g.core.registry[tvID])
        let (_, deviceDoc) = try #require(g.core.homeAssistant.configs(device).first)
        #expect(deviceDoc["device"]?["via_device"] == .string("cast2mqtt_bridge_upstairs"))
        #expect(deviceDoc["cmps"]?["state"]?["unique_id"] == .string("cast2mqtt_\(tvID)_state"))
    }

    /// After a reconnect (perhaps to another broker, which retains nothing of ours) the owner says
    /// its claim and every retained topic of its devices again, once it has confirmed them.
    @Test func aReconnectedOwnerRepublishesItsClaimAndDeviceTopics() throws {
        var c = started()
        let owner = try #require(["alpha", "beta"].first { c.owns($0, tvID) })
        c.retained = [:]
        let mark = c.log.count
        c.connect(owner)
        #expect(!c.owns(owner, tvID), "gated until its document is back")
        c.deliver()
        #expect(c.owns(owner, tvID))
        let again = c.log[mark...].filter { $0.from == owner }.map(\.publication.topic)
        #expect(again.contains("cast2mqtt/bridge/claims/\(tvID)"))
        #expect(again.contains("cast2mqtt/living_room_tv/availability"))
        #expect(again.contains("cast2mqtt/living_room_tv/info"))
        #expect(c.retained["cast2mqtt/living_room_tv/availability"] == Array("online".utf8))
    }

    @Test func bridgeRequestsAreThePrimarysAlone() {
        var c = started(["alpha", "beta", "gamma"])
        c.publish("cast2mqtt/bridge/request/health_check", "{}")
        let answers = c.responses("cast2mqtt/bridge/response/health_check")
        #expect(answers.count == 1)
        #expect(answers.first?.0 == "alpha")
    }

    @Test func aStaleOwnerThatComesBackPublishesNothingForTheDeviceItLost() throws {
        var c = started()
        let owner = try #require(["alpha", "beta"].first { c.owns($0, tvID) })
        let other = owner == "alpha" ? "beta" : "alpha"
        // Frozen: the will clears its document; the other takes the device.
        c.away.insert(owner)
        c.queue.append(Publication(topic: "cast2mqtt/bridge/instances/\(owner)", payload: [], retain: true))
        c.retained.removeValue(forKey: "cast2mqtt/bridge/instances/\(owner)")
        c.deliver()
        #expect(c.owns(other, tvID))
        let mark = c.log.count
        // It wakes up: a status from its old connection arrives, then the reconnect.
        c.feed(owner, .instanceResumed(gap: 60))
        c.feed(owner, CastEvent.receiverStatus(tvID, receiver(level: 0.9)))
        c.connect(owner)
        c.deliver()
        c.pass(3)
        let stale = c.log[mark...].filter { $0.from == owner && $0.publication.topic.hasPrefix("cast2mqtt/living_room_tv/") }
        #expect(stale.isEmpty, "\(stale.map(\.publication.topic))")
        #expect(c.connected[owner]?.isEmpty == true)
        #expect(c.owns(other, tvID) && !c.owns(owner, tvID))
    }
}
