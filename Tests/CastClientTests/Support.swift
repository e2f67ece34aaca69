import CastClient
import CastProtocol
import CastSimulator
import Logging
import NIOCore
import NIOPosix
import Testing

/// Collects a client's events so tests can wait for one, bounded in time.
actor EventLog {
    private(set) var events: [CastClientEvent] = []
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<CastClientEvent>) {
        Task { await self.consume(stream) }
    }

    private func consume(_ stream: AsyncStream<CastClientEvent>) async {
        for await event in stream { events.append(event) }
    }

    func count(where predicate: @Sendable (CastClientEvent) -> Bool) -> Int {
        events.filter(predicate).count
    }

    /// Waits until at least `count` events match, up to `timeout`.
    @discardableResult
    func wait(for count: Int = 1, timeout: Duration = .seconds(10),
              _ predicate: @escaping @Sendable (CastClientEvent) -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if events.filter(predicate).count >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return events.filter(predicate).count >= count
    }

    func clear() { events.removeAll() }
}

extension CastClientEvent {
    var isConnected: Bool { if case .connected = self { return true } else { return false } }
    var isDisconnected: Bool { if case .disconnected = self { return true } else { return false } }
    var disconnectReason: CastDisconnectReason? { if case .disconnected(let r) = self { return r } else { return nil } }
    var mediaState: String? {
        if case .mediaStatus(let list) = self { return list.first?.playerState }
        return nil
    }
    var startedApp: String? { if case .appSessionStarted(let app) = self { return app.appId } else { return nil } }
}

/// One simulated device and one client connected to it, on a shared event loop group.
final class Harness: Sendable {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    let simulator: CastSimulator
    let device: SimulatedDevice
    let client: CastDeviceClient
    let log: EventLog

    init(configuration: CastConnectionConfiguration = .fast, deviceName: String = "Test Device",
         launchLatency: TimeAmount = .milliseconds(30)) async throws {
        let simulator = CastSimulator(group: Harness.group)
        let device = try await simulator.addDevice(SimulatedDeviceConfiguration(
            name: deviceName, launchLatency: launchLatency, replyLatency: .milliseconds(1)))
        var logger = Logger(label: "test.client")
        logger.logLevel = .warning
        let client = try CastDeviceClient(address: CastDeviceAddress(host: "127.0.0.1", port: device.port),
                                          configuration: configuration, eventLoop: Harness.group.next(), logger: logger)
        self.simulator = simulator
        self.device = device
        self.client = client
        self.log = EventLog(client.events)
    }

    /// Starts the client and waits until the device answered.
    func connect() async throws {
        client.start()
        let ok = await log.wait { $0.isConnected }
        try #require(ok, "client did not connect to the simulator")
        _ = await log.wait { if case .receiverStatus = $0 { return true } else { return false } }
    }

    /// Launches the Default Media Receiver and loads a track, waiting until it plays.
    func playSomething(url: String = "http://127.0.0.1/media/song.mp3", duration: Double = 300) async throws {
        _ = try await client.launch(appId: CastAppID.defaultMediaReceiver)
        let media = MediaInformation(contentId: url, contentType: "audio/mpeg",
                                     metadata: MediaMetadata(metadataType: 3, title: "Song"), duration: duration)
        let status = try await client.load(LoadRequest(media: media))
        try #require(status?.playerState == "PLAYING" || status?.playerState == "BUFFERING")
    }

    func close() async {
        await client.shutdown()
        await simulator.shutdown()
    }
}

extension CastConnectionConfiguration {
    /// Short timers so recovery tests run in seconds.
    static var fast: CastConnectionConfiguration {
        CastConnectionConfiguration(heartbeatInterval: .milliseconds(200), heartbeatTimeout: .seconds(1),
                                    requestTimeout: .seconds(3),
                                    backoff: ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(1)))
    }
}
