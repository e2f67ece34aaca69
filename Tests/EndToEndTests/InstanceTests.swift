import CastProtocol
import CastSimulator
import Foundation
import MQTT
import Testing
import TestSupport

/// Several bridge processes on one base topic (mqtt-api.md §10): one broker, simulated devices
/// every instance reaches, three `cast2mqtt run` with `instance: a|b|c`.
final class InstancesHarness: @unchecked Sendable {
    let broker: MosquittoBroker
    /// The second of `mqtt.url` when asked for (nobody's first choice: the instances stay on
    /// `broker` while it works).
    let spare: MosquittoBroker?
    let simulator: CastSimulator
    let devices: [SimulatedDevice]
    let directory: String
    let client: MosquittoClient
    let observer: Observer
    private(set) var daemons: [String: ManagedProcess] = [:]

    init(devices count: Int, instances: [String], spareBroker: Bool = false) async throws {
        broker = try MosquittoBroker(MosquittoBroker.Options())
        spare = spareBroker ? try MosquittoBroker(MosquittoBroker.Options()) : nil
        simulator = CastSimulator(group: BridgeHarness.group)
        var devices: [SimulatedDevice] = []
        for n in 0..<count {
            devices.append(try await simulator.addDevice(SimulatedDeviceConfiguration(name: "Device \(n)", launchLatency: .milliseconds(50),
                                                                                        replyLatency: .milliseconds(1))))
        }
        self.devices = devices
        directory = NSTemporaryDirectory() + "cast2mqtt-inst-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        (client, observer) = try Observer.started(url: broker.url, topics: ["cast2mqtt/#"])
        for name in instances { try start(name) }
    }

    func start(_ name: String) throws {
        let config = """
        instance: \(name)
        mqtt:
          url: [\(([broker] + [spare].compactMap { $0 }).map(\.url).joined(separator: ", "))]
          keepalive: 5
          will_delay: 2
        discovery:
          mdns: false
          devices:
        \(devices.map { "    - {host: 127.0.0.1, port: \($0.port), name: \"\($0.name)\", id: \($0.id)}" }.joined(separator: "\n"))
        cast:
          heartbeat_interval: 1
          heartbeat_timeout: 3
          request_timeout: 5
          reconnect: {initial: 0.2, max: 2}
          device_auth: "off"
        homeassistant:
          enabled: false
        state_dir: \(directory)/\(name)
        log:
          level: debug
        web:
          enabled: false
        """
        let path = "\(directory)/\(name).yaml"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        daemons[name] = try ManagedProcess(try builtExecutable("cast2mqtt"), ["run", "--config", path],
                                           environment: noBacktrace, logName: "cast2mqtt-inst-\(name)")
    }

    var logs: String { daemons.sorted { $0.key < $1.key }.map { "== \($0.key)\n\($0.value.output.suffix(3000))" }.joined(separator: "\n") }

    func claim(_ device: SimulatedDevice) -> (owner: String, epoch: Int)? {
        guard let doc = observer.lastJSON("cast2mqtt/bridge/claims/\(device.id)"), let owner = doc["owner"]?.stringValue,
              case .number(let epoch)? = doc["epoch"] else { return nil }
        return (owner, Int(epoch))
    }

    func slug(_ device: SimulatedDevice) -> String { device.name.lowercased().replacingOccurrences(of: " ", with: "_") }

    /// Every device claimed, online, and connected to exactly once.
    func waitSettled(timeout: Duration = .seconds(30)) async -> Bool {
        await waitUntil(timeout: timeout) {
            for device in self.devices {
                guard self.claim(device) != nil, self.observer.last("cast2mqtt/\(self.slug(device))/availability") == "online" else { return false }
            }
            for device in self.devices {
                guard (try? await device.state().connections) == 1 else { return false }
            }
            return true
        }
    }

    func close() async {
        for daemon in daemons.values { daemon.stop(grace: 8) }
        await client.shutdown(finalMessage: nil)
        await simulator.shutdown()
        broker.stop()
        spare?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite(.serialized) struct InstanceEndToEndTests {
    @Test func everyDeviceHasOneOwnerAndOneConnection() async throws {
        try await withClosing(try await InstancesHarness(devices: 6, instances: ["a", "b", "c"]), close: { await $0.close() }) { h in
            let settled = await h.waitSettled()
            try #require(settled, "not settled; logs:\n\(h.logs)")
            var owners: [String: Int] = [:]
            for device in h.devices {
                let claim = try #require(h.claim(device))
                owners[claim.owner, default: 0] += 1
                let info = h.observer.lastJSON("cast2mqtt/\(h.slug(device))/info")
                #expect(info?["owner"] == .string(claim.owner))
                // Only the owner ever published the device's topics.
                #expect(h.observer.messages(on: "cast2mqtt/\(h.slug(device))/availability").allSatisfy { String(decoding: $0.payload, as: UTF8.self) == "online" })
            }
            #expect(owners.values.reduce(0, +) == 6)
            // Every instance document is online and lists every device.
            for name in ["a", "b", "c"] {
                let doc = h.observer.lastJSON("cast2mqtt/bridge/instances/\(name)")
                #expect(doc?["state"] == .string("online"))
                #expect(doc?["devices"]?.arrayValue?.count == 6)
            }
            #expect(h.observer.last("cast2mqtt/bridge/state") == "online")
            // The primary lists every device with its owner (paced: at most once a second).
            let devices = await h.observer.waitJSON("cast2mqtt/bridge/devices") { doc in
                doc.arrayValue?.count == 6 && doc.arrayValue?.allSatisfy { $0["owner"]?.stringValue != nil } == true
            }
            #expect(devices != nil, "\(String(describing: h.observer.lastJSON("cast2mqtt/bridge/devices")))")
        }
    }

    /// SIGKILL of an owner: the kernel closes its socket, so the broker fires its will after the will
    /// delay (2 s here; a frozen or unreachable one only after keepalive × 1.5 more); the will clears
    /// its document and the others take its devices, connected and online again, within 5 s more.
    /// A command sent to a device of the dead owner before its will fires is answered exactly once
    /// (`busy` with `retry_after`, by the next owner when the will fires).
    @Test func sigkillHandsOverAfterTheWill() async throws {
        try await withClosing(try await InstancesHarness(devices: 4, instances: ["a", "b"]), close: { await $0.close() }) { h in
            let settled = await h.waitSettled()
            try #require(settled, "not settled; logs:\n\(h.logs)")
            let victim = try #require(h.claim(h.devices[0])).owner
            let owned = h.devices.filter { h.claim($0)?.owner == victim }
            var marks: [String: Int] = [:]
            for d in owned { marks[d.id] = h.observer.messages(on: "cast2mqtt/\(h.slug(d))/availability").count }
            let killed = ContinuousClock.now
            h.daemons[victim]?.signal(SIGKILL)
            let slug = h.slug(h.devices[0])
            try h.client.publish(MQTTMessage(topic: "cast2mqtt/\(slug)/command/volume",
                                             payload: Array(#"{"id": "after-kill-1", "level": 0.35}"#.utf8), qos: .atLeastOnce))
            let moved = await waitUntil(timeout: .seconds(40)) {
                owned.allSatisfy { d in
                    guard let claim = h.claim(d), claim.owner != victim else { return false }
                    let seen = h.observer.messages(on: "cast2mqtt/\(h.slug(d))/availability")
                    return seen.count > (marks[d.id] ?? 0) && seen.last.map { String(decoding: $0.payload, as: UTF8.self) } == "online"
                }
            }
            let handover = ContinuousClock.now - killed
            try #require(moved, "not handed over; logs:\n\(h.logs)")
            print("instances: SIGKILL handover of \(owned.count) devices took \(handover) (will delay 2 s)")
            #expect(handover < .seconds(2 + 5 + 5), "target: will delay + 5 s (generous bound + 5 s): \(handover)")
            // The broker's will cleared the dead instance's document.
            #expect(h.observer.messages(on: "cast2mqtt/bridge/instances/\(victim)").last?.payload.isEmpty == true)
            // The command sent between the kill and the will: one answer, even after a later
            // command to the same device has been answered (a late second one would come first).
            func answers(_ id: String) -> [JSONValue] {
                h.observer.messages(on: "cast2mqtt/\(slug)/response").compactMap { JSONValue.parse($0.payload) }.filter { $0["id"] == .string(id) }
            }
            let answered = await waitUntil(timeout: .seconds(20)) { !answers("after-kill-1").isEmpty }
            #expect(answered, "no answer to the command sent after the kill; logs:\n\(h.logs)")
            try h.client.publish(MQTTMessage(topic: "cast2mqtt/\(slug)/command/volume",
                                             payload: Array(#"{"id": "fence-1", "level": 0.3}"#.utf8), qos: .atLeastOnce))
            let fenced = await waitUntil(timeout: .seconds(20)) { !answers("fence-1").isEmpty }
            #expect(fenced)
            let once = answers("after-kill-1")
            #expect(once.count == 1, "\(once)")
            #expect(once.allSatisfy { $0["status"] == .string("ok") || ($0["error"]?["code"] == .string("busy") && $0["error"]?["retry_after"] != nil) },
                    "\(once)")
            let single = await waitUntil(timeout: .seconds(15)) {
                for d in h.devices { guard (try? await d.state().connections) == 1 else { return false } }
                return true
            }
            #expect(single)
        }
    }

    /// SIGTERM of an owner: its devices are owned, connected and online on another instance
    /// within 5 s, the app session is joined (not relaunched), and a command sent right after
    /// the signal is answered exactly once, never `device_offline`.
    @Test func sigtermHandsOverAndACommandIsAnsweredOnce() async throws {
        try await withClosing(try await InstancesHarness(devices: 4, instances: ["a", "b", "c"]), close: { await $0.close() }) { h in
            let settled = await h.waitSettled()
            try #require(settled, "not settled; logs:\n\(h.logs)")
            let device = h.devices[0]
            let slug = h.slug(device)
            let before = try #require(h.claim(device))
            // An app session to be joined by the next owner.
            try h.client.publish(MQTTMessage(topic: "cast2mqtt/\(slug)/command/load",
                                             payload: Array(#"{"id": "load-1", "url": "http://192.0.2.5/song.mp3"}"#.utf8), qos: .atLeastOnce))
            let loaded = await h.observer.waitJSON("cast2mqtt/\(slug)/response") { $0["id"] == .string("load-1") }
            #expect(loaded?["status"] == .string("ok"), "\(String(describing: loaded)); logs:\n\(h.logs)")
            let session = h.observer.lastJSON("cast2mqtt/\(slug)/receiver")?["session_id"]
            let launches = device.received(type: "LAUNCH").count
            let owned = h.devices.filter { h.claim($0)?.owner == before.owner }

            var marks: [String: Int] = [:]
            for d in owned { marks[d.id] = h.observer.messages(on: "cast2mqtt/\(h.slug(d))/availability").count }
            let signalled = ContinuousClock.now
            h.daemons[before.owner]?.signal(SIGTERM)
            try h.client.publish(MQTTMessage(topic: "cast2mqtt/\(slug)/command/volume",
                                             payload: Array(#"{"id": "during-1", "level": 0.35}"#.utf8), qos: .atLeastOnce))
            // Moved: claimed by another instance, which published the device `online` again once
            // its own connection answered (the new owner publishes every retained topic fresh).
            let moved = await waitUntil(timeout: .seconds(20)) {
                owned.allSatisfy { d in
                    guard let claim = h.claim(d), claim.owner != before.owner else { return false }
                    let seen = h.observer.messages(on: "cast2mqtt/\(h.slug(d))/availability")
                    return seen.count > (marks[d.id] ?? 0) && seen.last.map { String(decoding: $0.payload, as: UTF8.self) } == "online"
                }
            }
            let handover = ContinuousClock.now - signalled
            try #require(moved, "not handed over; logs:\n\(h.logs)")
            print("instances: SIGTERM handover of \(owned.count) devices took \(handover)")
            #expect(handover < .seconds(10), "target 5 s (generous bound 10 s): \(handover)")
            let after = try #require(h.claim(device))
            #expect(after.epoch == before.epoch + 1)
            // Exactly one answer to the command sent during the handover.
            _ = await waitUntil(timeout: .seconds(15)) {
                h.observer.messages(on: "cast2mqtt/\(slug)/response").contains { ($0.payload.count < 4096) && String(decoding: $0.payload, as: UTF8.self).contains("during-1") }
            }
            let answers = h.observer.messages(on: "cast2mqtt/\(slug)/response").filter { String(decoding: $0.payload, as: UTF8.self).contains("\"during-1\"") }
            #expect(answers.count == 1, "answers: \(answers.map { String(decoding: $0.payload, as: UTF8.self) }); logs:\n\(h.logs)")
            #expect(answers.allSatisfy { !String(decoding: $0.payload, as: UTF8.self).contains("device_offline") })
            // The app session was joined, not relaunched.
            let joined = await h.observer.waitJSON("cast2mqtt/\(slug)/receiver") { $0["session_id"] == session }
            #expect(joined != nil)
            #expect(device.received(type: "LAUNCH").count == launches)
            // One connection per device again; the stopped instance cleared its document.
            let single = await waitUntil(timeout: .seconds(15)) {
                for d in h.devices { guard (try? await d.state().connections) == 1 else { return false } }
                return true
            }
            #expect(single)
            let cleared = await waitUntil(timeout: .seconds(15)) {
                h.observer.messages(on: "cast2mqtt/bridge/instances/\(before.owner)").last?.payload.isEmpty == true
            }
            #expect(cleared, "logs:\n\(h.logs)")
        }
    }
    /// SIGSTOP of an owner past keepalive × 1.5 + the will delay: the others take its devices;
    /// after SIGCONT the stale owner publishes nothing for them and closes its Cast connections
    /// to them (one connection per device again). With a second broker in `mqtt.url`: the
    /// resumed instance finds its connection lost and must come back to the broker that works
    /// (where the others are and the newer claims are retained), not move to the next one.
    @Test(arguments: [false, true]) func aResumedStaleOwnerLetsItsDevicesGo(spareBroker: Bool) async throws {
        try await withClosing(try await InstancesHarness(devices: 4, instances: ["a", "b"], spareBroker: spareBroker),
                              close: { await $0.close() }) { h in
            let settled = await h.waitSettled()
            try #require(settled, "not settled; logs:\n\(h.logs)")
            let frozen = try #require(h.claim(h.devices[0])).owner
            let lost = h.devices.filter { h.claim($0)?.owner == frozen }
            h.daemons[frozen]?.signal(SIGSTOP)
            // keepalive 5 s × 1.5 + will delay 2 s, then the others claim and connect.
            let taken = await waitUntil(timeout: .seconds(40)) {
                for d in lost {
                    guard let claim = h.claim(d), claim.owner != frozen,
                          h.observer.lastJSON("cast2mqtt/\(h.slug(d))/info")?["owner"]?.stringValue == claim.owner else { return false }
                }
                return true
            }
            if !taken { h.daemons[frozen]?.signal(SIGCONT) }
            try #require(taken, "not taken over while frozen; logs:\n\(h.logs)")
            var marks: [String: Int] = [:]
            for d in lost { marks[d.id] = h.observer.messages(on: "cast2mqtt/\(h.slug(d))/availability").count }
            let infos = lost.map { h.observer.messages(on: "cast2mqtt/\(h.slug($0))/info").count }
            h.daemons[frozen]?.signal(SIGCONT)
            // The resumed instance sees the newer claims and closes its connections to them.
            let single = await waitUntil(timeout: .seconds(30)) {
                for d in h.devices { guard (try? await d.state().connections) == 1 else { return false } }
                return true
            }
            var counts: [String] = []
            for d in h.devices { counts.append("\(d.name): \((try? await d.state().connections) ?? -1)") }
            #expect(single, "connections: \(counts); logs:\n\(h.logs)")
            // ... and published nothing for them: no offline, no info naming it.
            for (n, d) in lost.enumerated() {
                let availability = h.observer.messages(on: "cast2mqtt/\(h.slug(d))/availability").dropFirst(marks[d.id] ?? 0)
                #expect(availability.allSatisfy { String(decoding: $0.payload, as: UTF8.self) == "online" })
                let info = h.observer.messages(on: "cast2mqtt/\(h.slug(d))/info").dropFirst(infos[n])
                #expect(info.allSatisfy { !String(decoding: $0.payload, as: UTF8.self).contains("\"owner\":\"\(frozen)\"") })
                #expect(h.claim(d)?.owner != frozen)
            }
            // The stale owner is back as a live instance (its document online again).
            let back = await h.observer.waitJSON("cast2mqtt/bridge/instances/\(frozen)") { $0["state"] == .string("online") }
            #expect(back != nil)
        }
    }
}
