import Bridge
import CastClient
import CastProtocol
import Discovery
import Logging
import NIOCore
import NIOSSL

/// The Cast clients of the known devices, owned by the consumer task. A device found by
/// discovery gets a client on one loop of the shared group; a move updates its address (which
/// reconnects at once); a removal shuts it down. A client's events go from its event loop
/// straight into the daemon's input queue (no task per device); all clients share one TLS
/// context.
struct Fleet {
    private let group: any EventLoopGroup
    private let cast: CastConnectionConfiguration
    private let logger: Logger
    private let inputs: InputQueue
    private let tls: NIOSSLContext
    private var clients: [DeviceID: CastDeviceClient] = [:]

    init(group: any EventLoopGroup, cast: CastConnectionConfiguration, logger: Logger, inputs: InputQueue) throws {
        self.group = group
        self.cast = cast
        self.logger = logger
        self.inputs = inputs
        self.tls = try CastDeviceClient.makeTLSContext()
    }

    func client(_ id: DeviceID) -> CastDeviceClient? { clients[id] }

    /// Applies a discovery event to the clients and returns what the bridge should hear.
    mutating func apply(_ event: DiscoveryEvent) -> BridgeInput? {
        switch event {
        case .added(let record):
            if let existing = clients[record.id] {
                // Announced again (after vanishing from mDNS): reconnect at once if it is down.
                existing.update(address: CastDeviceAddress(host: record.host, port: record.port))
                return .deviceUpdated(Adapt.descriptor(record))
            }
            startClient(record)
            return .deviceDiscovered(Adapt.descriptor(record))
        case .updated(let record):
            if let existing = clients[record.id] {
                existing.update(address: CastDeviceAddress(host: record.host, port: record.port))
            } else {
                startClient(record)
            }
            return .deviceUpdated(Adapt.descriptor(record))
        case .removed(let id):
            // The device is no longer announced over mDNS: switched off at the wall, multicast
            // lost on Wi-Fi, or an avahi restart. That is not a removal: the client keeps its
            // connection (or finds it dead by its heartbeat and retries with backoff), the bridge
            // keeps the device, its last state and its Home Assistant entities, and reports it
            // `offline` through the usual path; an announcement later reconnects it at once.
            if clients[id] != nil {
                logger.info("device no longer announced over mDNS; keeping it", metadata: ["cast.device": "\(id)"])
            }
            return nil
        }
    }

    private mutating func startClient(_ record: CastDeviceRecord) {
        // Its own logger: `log.devices` / `bridge/request/log_level` can trace this device alone.
        var deviceLogger = Logger(label: LogLabel.device(record.id))
        deviceLogger[metadataKey: "cast.device"] = "\(record.friendlyName) (\(record.id))"
        do {
            let id = record.id
            let inputs = self.inputs
            let client = try CastDeviceClient(address: CastDeviceAddress(host: record.host, port: record.port),
                                              configuration: cast, isGroup: record.castType == .group, eventLoop: group.next(),
                                              logger: deviceLogger, sslContext: tls) { event in
                inputs.push(.bridge(Fleet.translate(event, device: id)))
            }
            clients[id] = client
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

    /// A device the bridge forgot (excluded, or `bridge/request/remove`): its client is closed
    /// politely in a child task; an mDNS announcement later starts a new one.
    mutating func drop(_ id: DeviceID, tasks: inout DiscardingTaskGroup) {
        guard let client = clients.removeValue(forKey: id) else { return }
        tasks.addTask { await client.shutdown() }
    }

    /// Closes every device politely (CLOSE on each virtual connection).
    mutating func shutdown() async {
        await withTaskGroup(of: Void.self) { group in
            for (_, client) in clients {
                group.addTask { await client.shutdown() }
            }
        }
        clients.removeAll()
    }
}
