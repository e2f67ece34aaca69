import CastProtocol
import CastSimulator
import Foundation
import Logging
import MQTT
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// Every message seen by the observing MQTT client, for assertions.
final class Observer: @unchecked Sendable {
    private let lock = NSLock()
    private var all: [MQTTMessage] = []
    private var task: Task<Void, Never>?

    init(_ client: MosquittoClient) {
        let stream = client.events
        task = Task { [weak self] in
            for await event in stream {
                if case .message(let m) = event { self?.append(m) }
            }
        }
    }

    deinit { task?.cancel() }

    /// A started MQTT client (a quiet logger, a clean session) subscribed to `topics`, and its observer.
    static func started(url: String, topics: [String]) throws -> (MosquittoClient, Observer) {
        var logger = Logger(label: "e2e.observer")
        logger.logLevel = .warning
        let client = try MosquittoClient(configuration: MQTTConfiguration(url: url, clientID: "e2e-observer-\(UUID().uuidString.prefix(6))",
                                                                          cleanStart: true), logger: logger)
        let observer = Observer(client)
        for topic in topics { try client.subscribe(topic, qos: .atLeastOnce) }
        try client.start()
        return (client, observer)
    }

    private func append(_ m: MQTTMessage) {
        lock.lock()
        all.append(m)
        lock.unlock()
    }

    var messages: [MQTTMessage] {
        lock.lock()
        defer { lock.unlock() }
        return all
    }

    func messages(on topic: String) -> [MQTTMessage] { messages.filter { $0.topic == topic } }
    func last(_ topic: String) -> String? { messages(on: topic).last.map { String(decoding: $0.payload, as: UTF8.self) } }
    func lastJSON(_ topic: String) -> JSONValue? {
        last(topic).flatMap { try? CastJSON.decode(JSONValue.self, from: $0) }
    }

    /// Waits until the newest message on `topic` satisfies `predicate`.
    @discardableResult
    func wait(_ topic: String, timeout: Duration = .seconds(15), _ predicate: @escaping (String) -> Bool = { _ in true }) async -> String? {
        _ = await waitUntil(timeout: timeout) { self.last(topic).map(predicate) ?? false }
        return last(topic).flatMap { predicate($0) ? $0 : nil }
    }

    /// Waits until the newest JSON on `topic` satisfies `predicate`.
    @discardableResult
    func waitJSON(_ topic: String, timeout: Duration = .seconds(15), _ predicate: @escaping (JSONValue) -> Bool) async -> JSONValue? {
        _ = await waitUntil(timeout: timeout) { self.lastJSON(topic).map(predicate) ?? false }
        return lastJSON(topic).flatMap { predicate($0) ? $0 : nil }
    }
}

/// mosquitto + simulated devices + the cast2mqtt daemon as a process + an observing client.
final class BridgeHarness: @unchecked Sendable {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    let broker: MosquittoBroker
    let simulator: CastSimulator
    let devices: [SimulatedDevice]
    let directory: String
    private(set) var daemon: ManagedProcess?
    let client: MosquittoClient
    let observer: Observer
    private var nextID = 0

    /// - Parameter mdnsName: when set, the bridge discovers devices over mDNS only, limited to
    ///   this friendly name, instead of getting the simulated devices as static entries.
    /// Extra environment of the daemon process.
    let environment: [String: String]

    /// - Parameter topics: a `topic:` override per device name.
    /// - Parameters:
    ///   - prepare: sets up the simulator instead of `names` (devices on addresses of their own,
    ///     groups) and returns its devices.
    ///   - discovery: the `discovery:` section's lines instead of the static entries of `devices`.
    ///   - supportedMediaCommands: the `supportedMediaCommands` of a device's media, by name.
    ///   - requestTimeout: `cast.request_timeout` (seconds).
    ///   - heartbeatTimeout: `cast.heartbeat_timeout` (seconds).
    ///   - moreBrokers: further broker URLs after the harness's own (`mqtt.url` as a list).
    ///   - deviceAuth: `cast.device_auth` (`off` here unless a test is about it, so that the other
    ///     tests' message counts and timings stay as they were); when not `off`, the simulator's
    ///     test root is trusted (`cast.device_auth_roots`).
    init(devices names: [String] = ["Living Room TV", "Kitchen"], mdnsName: String? = nil,
         topics: [String: String] = [:], environment: [String: String] = [:],
         broker brokerOptions: MosquittoBroker.Options = MosquittoBroker.Options(),
         prepare: ((CastSimulator) async throws -> [SimulatedDevice])? = nil, discovery customDiscovery: String? = nil,
         supportedMediaCommands: [String: Int] = [:], requestTimeout: Double = 5, heartbeatTimeout: Double = 3,
         deviceAuth: String = "off", staticExtra: [String: String] = [:], moreBrokers: [String] = []) async throws {
        self.environment = environment
        broker = try MosquittoBroker(brokerOptions)
        simulator = CastSimulator(group: BridgeHarness.group)
        var devices: [SimulatedDevice] = []
        if let prepare {
            devices = try await prepare(simulator)
        } else {
            for name in names {
                var configuration = SimulatedDeviceConfiguration(name: name, launchLatency: .milliseconds(50), replyLatency: .milliseconds(1))
                if let commands = supportedMediaCommands[name] { configuration.supportedMediaCommands = commands }
                devices.append(try await simulator.addDevice(configuration))
            }
        }
        self.devices = devices
        directory = NSTemporaryDirectory() + "cast2mqtt-e2e-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        (client, observer) = try Observer.started(url: broker.url, topics: ["cast2mqtt/#", "homeassistant/#", "e2e/#"])
        let discovery = customDiscovery ?? mdnsName.map { "  mdns: true\n  include: [\"\($0)\"]" } ?? """
          mdns: false
          devices:
        \(devices.map { d in
            let topic = topics[d.name].map { ", topic: \"\($0)\"" } ?? ""
            let extra = staticExtra[d.name].map { ", \($0)" } ?? ""
            return "    - {host: 127.0.0.1, port: \(d.port), name: \"\(d.name)\", id: \(d.id)\(topic)\(extra)}"
        }.joined(separator: "\n"))
        """
        var authLines = "  device_auth: \(deviceAuth)"
        if deviceAuth != "off" {
            try DeviceAuthority.shared.rootPEM.write(toFile: directory + "/sim-root.pem", atomically: true, encoding: .utf8)
            authLines += "\n  device_auth_roots: [\"\(directory)/sim-root.pem\"]"
        }
        let config = """
        mqtt:
          url: \(moreBrokers.isEmpty ? broker.url : "[" + ([broker.url] + moreBrokers).joined(separator: ", ") + "]")
          client_id: cast2mqtt-e2e
        discovery:
        \(discovery)
        cast:
          heartbeat_interval: 1
          heartbeat_timeout: \(heartbeatTimeout)
          request_timeout: \(requestTimeout)
          reconnect: {initial: 0.2, max: 2}
        \(authLines)
        state_dir: \(directory)/state
        log:
          level: debug
        web:
          listen: "127.0.0.1:0"
        """
        try config.write(toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
        try startDaemon()
    }

    func startDaemon() throws {
        daemon = try ManagedProcess(try builtExecutable("cast2mqtt"), ["run", "--config", directory + "/config.yaml"],
                                    // A crash ends the process at once instead of ~10 s of backtrace
                                    // (during which a SIGKILL could leave a zombie the test waits on).
                                    environment: noBacktrace.merging(environment) { $1 },
                                    logName: "cast2mqtt-e2e")
    }

    func stopDaemon() { daemon?.stop(grace: 5) }

    /// The daemon's log, for failure messages.
    var log: String { daemon?.output ?? "" }

    /// The daemon's process id, and whether it still runs.
    var daemonPID: Int32? { daemon?.pid }
    /// Running and not crashing: a crashed Swift process stays alive for seconds while it
    /// prints its backtrace, so its log's "Fatal error" counts as dead.
    var daemonAlive: Bool {
        guard let daemon, daemon.isRunning else { return false }
        return !daemon.output.contains("Fatal error") && !daemon.output.contains("*** Signal ")
    }
    /// The daemon's resident memory in MiB (/proc/<pid>/status VmRSS).
    var daemonRSSMiB: Double? { daemonPID.flatMap(ProcessStats.residentMiB) }
    /// The share of one core the daemon used over `window`.
    func daemonCPUShare(over window: Duration = .seconds(2)) async throws -> Double? {
        guard let pid = daemonPID else { return nil }
        return try await ProcessStats.cpuShare(pid, over: window)
    }

    /// After a crash: the log of the dead daemon, then a fresh daemon on the same config.
    func restartDaemon() throws -> String {
        let dead = log
        stopDaemon()
        try startDaemon()
        return dead
    }

    func topic(_ device: String, _ suffix: String) -> String { "cast2mqtt/\(device)/\(suffix)" }

    /// Waits until every device is online.
    func waitOnline(_ slugs: [String]) async throws {
        for slug in slugs {
            let online = await observer.wait(topic(slug, "availability"), timeout: .seconds(20)) { $0 == "online" }
            try #require(online != nil, "\(slug) did not come online; daemon log:\n\(log.suffix(4000))")
        }
    }

    /// Publishes a command and returns its response document.
    func command(_ device: String, _ name: String, _ payload: String, timeout: Duration = .seconds(15)) async throws -> JSONValue {
        try await command(device, name, Array(payload.utf8), timeout: timeout)
    }

    func command(_ device: String, _ name: String, _ payload: [UInt8], timeout: Duration = .seconds(15)) async throws -> JSONValue {
        let responseTopic = topic(device, "response")
        let before = observer.messages(on: responseTopic).count
        try client.publish(MQTTMessage(topic: topic(device, "command/\(name)"), payload: payload, qos: .atLeastOnce))
        let arrived = await waitUntil(timeout: timeout) { self.observer.messages(on: responseTopic).count > before }
        try #require(arrived, "no response to \(name) on \(device); daemon log:\n\(log.suffix(4000))")
        let message = observer.messages(on: responseTopic)[before]
        return try CastJSON.decode(JSONValue.self, from: message.payload)
    }

    /// Publishes a command and returns its response document, or nil when none came within
    /// `timeout` (records no issue: for tests that judge a missing answer themselves).
    func commandOrNil(_ device: String, _ name: String, _ payload: [UInt8], timeout: Duration = .seconds(15)) async -> JSONValue? {
        let responseTopic = topic(device, "response")
        let before = observer.messages(on: responseTopic).count
        guard (try? client.publish(MQTTMessage(topic: topic(device, "command/\(name)"), payload: payload, qos: .atLeastOnce))) != nil
        else { return nil }
        guard await waitUntil(timeout: timeout, { self.observer.messages(on: responseTopic).count > before }) else { return nil }
        return try? CastJSON.decode(JSONValue.self, from: observer.messages(on: responseTopic)[before].payload)
    }

    func commandOrNil(_ device: String, _ name: String, _ payload: String, timeout: Duration = .seconds(15)) async -> JSONValue? {
        await commandOrNil(device, name, Array(payload.utf8), timeout: timeout)
    }

    /// A JSON command with a fresh `id`; checks the id is echoed.
    func jsonCommand(_ device: String, _ name: String, _ fields: [String: JSONValue]) async throws -> JSONValue {
        nextID += 1
        var object = fields
        object["id"] = .string("e2e-\(nextID)")
        let text = try CastJSON.encode(JSONValue.object(object))
        let response = try await command(device, name, text)
        #expect(response["id"] == .string("e2e-\(nextID)"), "id not echoed in \(response)")
        return response
    }

    func close() async {
        stopDaemon()
        await client.shutdown(finalMessage: nil)
        await simulator.shutdown()
        broker.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension JSONValue {
    var status: String? { self["status"]?.stringValue }
    var errorCode: String? { self["error"]?["code"]?.stringValue }
}

/// Runs `body` with a fresh harness and always closes it (broker, daemon, simulator), also when
/// the body fails: no process outlives the test.
func withBridge(devices: [String] = ["Living Room TV", "Kitchen"], mdnsName: String? = nil,
                topics: [String: String] = [:], environment: [String: String] = [:],
                broker: MosquittoBroker.Options = MosquittoBroker.Options(),
                prepare: ((CastSimulator) async throws -> [SimulatedDevice])? = nil, discovery: String? = nil,
                supportedMediaCommands: [String: Int] = [:], requestTimeout: Double = 5, heartbeatTimeout: Double = 3,
                deviceAuth: String = "off", staticExtra: [String: String] = [:], moreBrokers: [String] = [],
                _ body: (BridgeHarness) async throws -> Void) async throws {
    try await withClosing(try await BridgeHarness(devices: devices, mdnsName: mdnsName, topics: topics, environment: environment,
                                                  broker: broker, prepare: prepare, discovery: discovery,
                                                  supportedMediaCommands: supportedMediaCommands, requestTimeout: requestTimeout,
                                                  heartbeatTimeout: heartbeatTimeout, deviceAuth: deviceAuth,
                                                  staticExtra: staticExtra, moreBrokers: moreBrokers),
                          close: { await $0.close() }, body)
}
