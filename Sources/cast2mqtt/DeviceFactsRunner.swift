import Bridge
import CastClient
import CastProtocol
import Discovery
import KnownDevices
import Logging
import NIOCore

/// Carries out what `DeviceFacts` (the KnownDevices target) decides, on the core loop:
/// `eureka_info` fetches are handed to the fetcher (futures on the shared event loops; no task of
/// their own) and their answers come back through the input queue; discovery events go to the
/// fleet, and what the fleet makes of them to the bridge (as inputs, so the core learns the
/// facts as descriptor updates, with the dynamic-group flag `DeviceFacts` decided). It owns the
/// daemon's one device table (`facts`), clients included.
struct DeviceFactsRunner {
    private(set) var facts: DeviceFacts<CastDeviceClient>
    private var fleet: Fleet
    private let fetcher: EurekaInfoFetcher?
    private let inputs: InputQueue
    private let logger: Logger
    private var lastSearch = ContinuousClock.now
    /// Instance mode (mqtt-api.md §10): the devices this instance owns — only they get a Cast
    /// client — and the newest discovery record of every device, to start its client when this
    /// instance takes it. Nil in single mode: every device gets its client.
    private var owned: Set<DeviceID>?
    private var records: [DeviceID: CastDeviceRecord] = [:]

    init(configuration: DiscoveryConfiguration, fleet: Fleet, fetcher: EurekaInfoFetcher?, inputs: InputQueue, logger: Logger,
         instanceMode: Bool = false) {
        facts = DeviceFacts(statics: configuration.devices, filter: configuration.filter)
        owned = instanceMode ? [] : nil
        self.fleet = fleet
        self.fetcher = fetcher
        self.inputs = inputs
        self.logger = logger
    }

    /// A discovery event: what the bridge should hear now (nothing while the device is held).
    /// `known`: the core remembers the device from an earlier run.
    mutating func discovered(_ event: DiscoveryEvent, known: (DeviceID) -> Bool) -> [BridgeInput] {
        facts.now = .now
        return run(facts.discovered(event, known: known))
    }

    /// An `eureka_info` answer came back.
    mutating func answered(host: String, _ result: Result<EurekaInfo, EurekaFetchError>) -> [BridgeInput] {
        facts.now = .now
        return run(facts.answered(host: host, result))
    }

    /// A device snapshot went to the bridge.
    mutating func snapshot(_ id: DeviceID, _ snapshot: DeviceSnapshot) -> [BridgeInput] {
        facts.now = .now
        return run(facts.snapshot(id, snapshot))
    }

    /// The one-second tick: static groups that lost their leader ask again every 30 s.
    mutating func tick() -> [BridgeInput] {
        guard facts.isSearching, ContinuousClock.now - lastSearch >= DeviceFacts<CastDeviceClient>.searchInterval else { return [] }
        lastSearch = .now
        facts.now = .now
        return run(facts.retrySearches())
    }

    private mutating func run(_ actions: [FactsAction]) -> [BridgeInput] {
        var out: [BridgeInput] = []
        for action in actions {
            switch action {
            case .fetch(let host):
                fetch(host)
            case .discovery(let event, let dynamic, let configuredID):
                if owned != nil, let record = event.record {
                    // Instance mode: a device this instance does not own is known, not connected.
                    records[record.id] = record
                    if owned?.contains(record.id) != true {
                        out.append(Self.decorate(.deviceDiscovered(Adapt.descriptor(record)), dynamic: dynamic, configuredID: configuredID))
                        continue
                    }
                }
                guard let input = fleet.apply(event, to: &facts) else { continue }
                out.append(Self.decorate(input, dynamic: dynamic, configuredID: configuredID))
            case .removeDynamic(let id):
                out.append(.deviceRemoved(id))
            case .becomeGroup(let id):
                logger.info("the device is a speaker group (eureka_info); following its members", metadata: ["cast.device": "\(id)"])
                facts.client(id)?.becomeGroup()
            case .log(let line, let debug):
                if debug { logger.debug("\(line)") } else { logger.info("\(line)") }
            }
        }
        return out
    }

    /// Instance mode: this instance owns the device now; its client starts.
    mutating func connect(_ id: DeviceID) {
        owned?.insert(id)
        guard facts.client(id) == nil, let record = records[id] else { return }
        _ = fleet.apply(.added(record), to: &facts)
    }

    /// Instance mode: another instance owns the device now; its client closes politely (CLOSE
    /// to the joined app's transport and the receiver: the app keeps running for the new owner).
    mutating func release(_ id: DeviceID) -> EventLoopFuture<Void>? {
        owned?.remove(id)
        return Fleet.drop(id, from: &facts)
    }

    /// The device's Cast client.
    func client(_ id: DeviceID) -> CastDeviceClient? { facts.client(id) }

    /// A device the bridge forgot: its client closed politely (nil: it had none).
    mutating func drop(_ id: DeviceID) -> EventLoopFuture<Void>? { Fleet.drop(id, from: &facts) }

    /// Every client, handed over to be closed (shutdown).
    mutating func takeClients() -> [CastDeviceClient] { facts.takeClients() }

    static func decorate(_ input: BridgeInput, dynamic: Bool, configuredID: DeviceID?) -> BridgeInput {
        switch input {
        case .deviceDiscovered(var d):
            d.isDynamicGroup = dynamic
            d.configuredID = configuredID
            return .deviceDiscovered(d)
        case .deviceUpdated(var d):
            d.isDynamicGroup = dynamic
            d.configuredID = configuredID
            return .deviceUpdated(d)
        default:
            return input
        }
    }

    /// Starts a fetch; its answer (or typed failure) is pushed into the input queue, once.
    private func fetch(_ host: String) {
        let inputs = self.inputs
        guard let fetcher else {
            inputs.push(.eureka(host: host, .failure(EurekaFetchError(.refused, "no eureka_info fetcher"))))
            return
        }
        logger.debug("reading eureka_info", metadata: ["eureka.host": "\(host)"])
        fetcher.fetch(host: host).whenComplete { result in
            inputs.push(.eureka(host: host, result.mapError { error in
                error as? EurekaFetchError ?? EurekaFetchError(.invalidResponse, "\(error)")
            }))
        }
    }
}

private extension DiscoveryEvent {
    /// The device record an addition or update carries.
    var record: CastDeviceRecord? {
        switch self {
        case .added(let record), .updated(let record): return record
        case .removed: return nil
        }
    }
}
