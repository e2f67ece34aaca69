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

    init(configuration: DiscoveryConfiguration, fleet: Fleet, fetcher: EurekaInfoFetcher?, inputs: InputQueue, logger: Logger) {
        facts = DeviceFacts(statics: configuration.devices, filter: configuration.filter)
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
