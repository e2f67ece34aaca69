import Bridge
import CastClient
import CastProtocol
import Discovery
import Foundation
import KnownDevices
import Logging
import NIOCore
import NIOSSL
import StageTrace

/// Makes and places the Cast clients of the known devices (on the core loop). The clients are
/// kept in the device table (`DeviceFacts`, an entry's `client`), which the consumer owns. A
/// device found by discovery gets a client on an event loop: the first `onCoreLoop` devices on the core
/// loop itself (their statuses reach the core, and its commands reach them, without a thread
/// hop), the rest spread over every loop of the group (the TLS and framing work of a large fleet
/// uses every core). A move updates its address (which reconnects at once); a removal closes it.
/// A client's events go from its event loop straight into the daemon's input queue (no task per
/// device); all clients share one TLS context, and one `HandshakeGate`: at most
/// `handshakesInFlight` TLS handshakes at once, so that a fleet of thousands starting (or coming
/// back after an outage) does not queue thousands of handshakes on the loops in front of the MQTT
/// side and the commands to devices already online.
struct Fleet {
    /// Devices that share the core's event loop.
    static let onCoreLoop = 64
    /// TLS handshakes in flight at most, across all devices. A handshake on a LAN takes a few
    /// milliseconds, most of it the device's, and ~0.3 ms of our CPU: 128 at once keep the cores
    /// busy (with 32, 1000 simulated devices on this busy 2-core box came online 20–40 % later
    /// than with no bound) while a command waits behind at most a few dozen handshake steps.
    static let handshakesInFlight = 128

    private let group: any EventLoopGroup
    private let coreLoop: any EventLoop
    private var placed = 0
    private let cast: CastConnectionConfiguration
    private let logger: Logger
    private let inputs: InputQueue
    private let tls: NIOSSLContext
    let handshakes = HandshakeGate(limit: Fleet.handshakesInFlight)
    private let deviceAuth: DeviceAuthPolicy

    /// Tests only (`CAST2MQTT_TEST_HOOKS=1` with `CAST2MQTT_TEST_OFF_CORE_LOOP=1`): every device on
    /// a loop other than the core's, so that a test that blocks the core loop still sees devices
    /// connect and reconnect meanwhile.
    private let offCoreLoop: (any EventLoop)?

    init(group: any EventLoopGroup, coreLoop: any EventLoop, cast: CastConnectionConfiguration, logger: Logger,
         inputs: InputQueue, deviceAuth: DeviceAuthPolicy = DeviceAuthPolicy(), offCoreLoop: Bool = false) throws {
        self.group = group
        self.coreLoop = coreLoop
        self.offCoreLoop = offCoreLoop
            ? group.makeIterator().first { ObjectIdentifier($0) != ObjectIdentifier(coreLoop) } : nil
        self.cast = cast
        self.logger = logger
        self.inputs = inputs
        self.deviceAuth = deviceAuth
        self.tls = try CastDeviceClient.makeTLSContext()
        _ = Self.largeBuffersMapped
    }

    /// Each TLS connection has two buffers NIOSSL allocates at their largest and keeps for the
    /// connection's life: the plaintext read buffer (32 KiB) and the outbound record buffer
    /// (16 KiB); an idle Cast connection touches a few hundred bytes of each. From the heap, glibc
    /// hands out memory that earlier allocations (the handshakes) already touched, so most of
    /// the 48 KiB is resident. Allocations of `mmapThreshold` bytes and more come from their own
    /// mapping instead, where only the pages written become resident (and go back to the system
    /// at free). glibc's `MALLOC_MMAP_THRESHOLD_` in the environment wins.
    static let mmapThreshold: Int32 = 16 * 1024
    static let largeBuffersMapped: Bool = {
        guard ProcessInfo.processInfo.environment["MALLOC_MMAP_THRESHOLD_"] == nil,
              let symbol = dlsym(nil, "mallopt") else { return false }
        // mallopt(M_MMAP_THRESHOLD, n): not in Swift's Glibc module; M_MMAP_THRESHOLD is -3.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        return unsafeBitCast(symbol, to: Mallopt.self)(-3, mmapThreshold) == 1
    }()

    /// Applies a discovery event to the devices' clients and returns what the bridge should hear.
    mutating func apply(_ event: DiscoveryEvent, to devices: inout DeviceFacts<CastDeviceClient>) -> BridgeInput? {
        switch event {
        case .added(let record):
            if let existing = devices.client(record.id) {
                // Announced again (after vanishing from mDNS): reconnect at once if it is down.
                existing.update(address: CastDeviceAddress(host: record.host, port: record.port))
                return .deviceUpdated(Adapt.descriptor(record))
            }
            startClient(record, in: &devices)
            return .deviceDiscovered(Adapt.descriptor(record))
        case .updated(let record):
            if let existing = devices.client(record.id) {
                existing.update(address: CastDeviceAddress(host: record.host, port: record.port))
            } else {
                startClient(record, in: &devices)
            }
            return .deviceUpdated(Adapt.descriptor(record))
        case .removed(let id):
            // The device is no longer announced over mDNS: switched off at the wall, multicast
            // lost on Wi-Fi, or an avahi restart. That is not a removal: the client keeps its
            // connection (or finds it dead by its heartbeat and retries with backoff), the bridge
            // keeps the device, its last state and its Home Assistant entities, and reports it
            // `offline` through the usual path; an announcement later reconnects it at once.
            if devices.client(id) != nil {
                logger.info("device no longer announced over mDNS; keeping it", metadata: ["cast.device": "\(id)"])
            }
            return nil
        }
    }

    private mutating func startClient(_ record: CastDeviceRecord, in devices: inout DeviceFacts<CastDeviceClient>) {
        // Its own logger: `log.devices` / `bridge/request/log_level` can trace this device alone.
        var deviceLogger = Logger(label: LogLabel.device(record.id))
        deviceLogger[metadataKey: "cast.device"] = "\(record.friendlyName) (\(record.id))"
        do {
            let id = record.id
            let inputs = self.inputs
            var configuration = cast
            configuration.deviceAuth = deviceAuth.mode(for: record, default: cast.deviceAuth)
            let client = try CastDeviceClient(address: CastDeviceAddress(host: record.host, port: record.port),
                                              configuration: configuration, isGroup: record.castType == .group,
                                              eventLoop: nextLoop(), logger: deviceLogger, sslContext: tls,
                                              handshakeGate: handshakes, deviceAuthTrust: deviceAuth.trust) { event in
                inputs.push(.bridge(Fleet.translate(event, device: id)))
                if case .snapshot = event { StageTrace.mark(.snapshotQueued) }
            }
            devices.setClient(client, for: id)
            // The input queue's limits grow with the fleet (InputQueue.accommodate).
            inputs.accommodate(devices: placed)
            client.start()
        } catch {
            deviceLogger.error("cannot create the Cast client", metadata: ["cast.error": "\(error)"])
        }
    }

    static func translate(_ event: CastClientEvent, device id: DeviceID) -> BridgeInput {
        switch event {
        case .snapshot(let snapshot): return .device(id, snapshot)
        case .appMessage(let namespace, _, let payload): return .appMessage(id, namespace: namespace, payload: payload)
        }
    }

    /// The loop for the next device.
    private mutating func nextLoop() -> any EventLoop {
        placed += 1
        if let offCoreLoop { return offCoreLoop }
        return placed <= Self.onCoreLoop ? coreLoop : group.next()
    }

    /// A device the bridge forgot (excluded, or `bridge/request/remove`): its client is closed
    /// politely (the future completes when it is); an mDNS announcement later starts a new one.
    static func drop(_ id: DeviceID, from devices: inout DeviceFacts<CastDeviceClient>) -> EventLoopFuture<Void>? {
        devices.setClient(nil, for: id)?.close()
    }
}

/// Device authentication for the fleet: the trust anchors, and the static devices' own policy
/// (`discovery.devices[].device_auth`) over `cast.device_auth`.
struct DeviceAuthPolicy: Sendable {
    var trust: DeviceAuthTrustStore = .castRoots
    /// By lower-case device id, or by `host:port` for an entry without an id.
    var overrides: [String: DeviceAuthMode] = [:]

    static func key(host: String, port: Int) -> String { "\(host.lowercased()):\(port)" }

    func mode(for record: CastDeviceRecord, default mode: DeviceAuthMode) -> DeviceAuthMode {
        guard record.source == .static else { return overrides[record.id.lowercased()] ?? mode }
        return overrides[record.id.lowercased()] ?? overrides[Self.key(host: record.host, port: record.port)] ?? mode
    }
}
