import CastProtocol
import Logging
import Synchronization
import NIOCore
import NIOPosix

/// A set of simulated Cast devices sharing one event loop group (each device lives on one loop
/// of it). Start devices, inject faults, read what they received, then `shutdown()`.
///
/// ```swift
/// let sim = try await CastSimulator.start([.init(name: "Living Room"), .init(name: "Kitchen")])
/// let port = sim.devices[0].port
/// ...
/// await sim.shutdown()
/// ```
public final class CastSimulator: Sendable {
    public let group: any EventLoopGroup
    private let ownsGroup: Bool
    let deviceList = Mutex<[SimulatedDevice]>([])
    let logger: Logger
    /// What should be announced over mDNS now, and who is told about changes.
    let announcements = Mutex(AnnouncementRegistry())
    /// Group operations (add, remove, move the leader, members joining and leaving) one at a time.
    let groupOperations = SerialAsyncQueue()

    /// - Parameter group: an event loop group to share; nil creates (and later shuts down) one.
    public init(group: (any EventLoopGroup)? = nil, logger: Logger = Logger(label: "cast-sim")) {
        if let group {
            self.group = group
            self.ownsGroup = false
        } else {
            self.group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, min(System.coreCount, 4)))
            self.ownsGroup = true
        }
        self.logger = logger
        DeviceAuthority.madeInBackground
    }

    /// Creates a simulator and starts one device per configuration.
    public static func start(_ configurations: [SimulatedDeviceConfiguration],
                             group: (any EventLoopGroup)? = nil,
                             logger: Logger = Logger(label: "cast-sim")) async throws -> CastSimulator {
        let simulator = CastSimulator(group: group, logger: logger)
        do {
            for configuration in configurations { try await simulator.addDevice(configuration) }
        } catch {
            await simulator.shutdown()
            throw error
        }
        return simulator
    }

    /// Starts one more device; it listens when this returns.
    @discardableResult
    public func addDevice(_ configuration: SimulatedDeviceConfiguration) async throws -> SimulatedDevice {
        guard device(id: configuration.id) == nil else {
            throw SimulatorError("a device with id \(configuration.id) already exists")
        }
        let device = try SimulatedDevice(configuration: configuration, eventLoop: group.next(), logger: logger)
        try await device.start()
        deviceList.withLock { $0.append(device) }
        announce(deviceAnnouncement(device))
        return device
    }

    /// Devices in the order they were added.
    public var devices: [SimulatedDevice] { deviceList.withLock { $0 } }

    /// A device or group endpoint by id (plain or dashed, any case).
    public func device(id: String) -> SimulatedDevice? {
        let normalized = SimulatedDeviceConfiguration.normalizedID(id) ?? id
        return devices.first { $0.id == normalized }
    }

    /// A device or group endpoint by id, else by name (the first of that name).
    public func device(idOrName key: String) -> SimulatedDevice? {
        device(id: key) ?? devices.first { $0.name == key }
    }

    /// A cloud-style stream transfer: the source's media goes IDLE (INTERRUPTED), its app
    /// closes (CLOSE from its transportId, RECEIVER_STATUS without it); the target launches the
    /// same app with `launchedFromCloud: true` and a new session, and loads the same content at
    /// the same position and play state. Returns when the target runs the app.
    public func transfer(from source: SimulatedDevice, to target: SimulatedDevice) async throws {
        guard source !== target else { throw SimulatorError("cannot transfer a session to the same device") }
        let session = try await source.detachForTransfer()
        try await target.attachTransferred(session)
    }

    public func transfer(from sourceID: String, to targetID: String) async throws {
        guard let source = device(id: sourceID) else { throw SimulatorError("no device \(sourceID)") }
        guard let target = device(id: targetID) else { throw SimulatorError("no device \(targetID)") }
        try await transfer(from: source, to: target)
    }

    /// Stops every device and, when the simulator created it, the event loop group.
    public func shutdown() async {
        for device in devices { await device.shutdown() }
        deviceList.withLock { $0.removeAll() }
        if ownsGroup { try? await group.shutdownGracefully() }
    }
}
