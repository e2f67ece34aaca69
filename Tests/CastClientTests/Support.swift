import CastClient
import CastProtocol
import CastSimulator
import Logging
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// What a client's snapshots say happened, one transition at a time (as the tests ask for them):
/// derived from consecutive snapshots by `EventLog`.
enum ClientTransition: Sendable, Hashable {
    /// Online on a new connection.
    case connected
    case disconnected(CastDisconnectReason)
    case receiverStatus(ReceiverStatus)
    /// The media of the joined app's session changed (empty: no media session).
    case mediaStatus([MediaStatus])
    case appSessionStarted(ReceiverApplication)
    case appSessionEnded(ReceiverApplication)
    case appMessage(namespace: String, payload: CastPayload)
    /// The client stopped rejoining an app whose transport kept closing on it.
    case joinFailed(String)
}

/// Collects a client's events so tests can wait for one, bounded in time.
actor EventLog {
    private(set) var events: [ClientTransition] = []
    private(set) var snapshots: [DeviceSnapshot] = []

    init(_ stream: AsyncStream<CastClientEvent>) {
        Task { await self.consume(stream) }
    }

    private func consume(_ stream: AsyncStream<CastClientEvent>) async {
        for await event in stream { record(event) }
    }

    private func record(_ event: CastClientEvent) {
        switch event {
        case .appMessage(let namespace, _, let payload):
            events.append(.appMessage(namespace: namespace, payload: payload))
        case .snapshot(let new):
            let old = snapshots.last ?? DeviceSnapshot()
            snapshots.append(new)
            if new.isOnline, !old.isOnline || new.generation != old.generation { events.append(.connected) }
            if case .offline(let reason, _) = new.link, old.isOnline { events.append(.disconnected(reason)) }
            if let receiver = new.receiver, new.receiver != old.receiver { events.append(.receiverStatus(receiver)) }
            let (oldApp, newApp) = (old.activeApp, new.activeApp)
            if oldApp?.sessionId != newApp?.sessionId || oldApp?.appId != newApp?.appId {
                if let oldApp { events.append(.appSessionEnded(oldApp)) }
                if let newApp { events.append(.appSessionStarted(newApp)) }
            }
            if new.media != old.media { events.append(.mediaStatus(new.media.map { [$0] } ?? [])) }
            if let failure = new.joinFailure, old.joinFailure != failure { events.append(.joinFailed(failure)) }
        }
    }

    func count(where predicate: @Sendable (ClientTransition) -> Bool) -> Int {
        events.filter(predicate).count
    }

    /// Waits until at least `count` transitions match, up to `timeout`.
    @discardableResult
    func wait(for count: Int = 1, timeout: Duration = .seconds(30),
              _ predicate: @escaping @Sendable (ClientTransition) -> Bool) async -> Bool {
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

extension ClientTransition {
    var isConnected: Bool { if case .connected = self { return true } else { return false } }
    var isDisconnected: Bool { if case .disconnected = self { return true } else { return false } }
    var disconnectReason: CastDisconnectReason? { if case .disconnected(let r) = self { return r } else { return nil } }
    var mediaState: String? {
        if case .mediaStatus(let list) = self { return list.first?.playerState }
        return nil
    }
    var startedApp: String? { if case .appSessionStarted(let app) = self { return app.appId } else { return nil } }
}

extension CastDeviceClient {
    /// A media request for the media session the client knows now (what the bridge does with
    /// the session id of its snapshot).
    func media(_ build: @Sendable (Int) -> MediaRequest) async throws -> MediaStatus? {
        let session = await snapshot.device.media?.mediaSessionId ?? 0
        return try await requests.media(build(session)).get()
    }

    /// Receiver STOP of the session the client sees running.
    @discardableResult
    func stopRunningApp() async throws -> ReceiverStatus {
        try await receiverStatus(after: requests.stopApp(sessionId: await snapshot.device.activeApp?.sessionId ?? ""))
    }

    /// The receiver status a receiver request was answered with, as the client keeps it (the
    /// request itself completes without it: the status travels once, into the snapshot).
    func receiverStatus(after request: EventLoopFuture<Void>) async throws -> ReceiverStatus {
        try await request.get()
        return try #require(await snapshot.device.receiver)
    }
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
        let answered = await log.wait { if case .receiverStatus = $0 { return true } else { return false } }
        try #require(answered, "the device's receiver status did not arrive")
    }

    /// Launches the Default Media Receiver and loads a track, waiting until it plays.
    func playSomething(url: String = "http://127.0.0.1/media/song.mp3", duration: Double = 300) async throws {
        _ = try await client.requests.launch(appId: CastAppID.defaultMediaReceiver).get()
        let media = MediaInformation(contentId: url, contentType: "audio/mpeg",
                                     metadata: MediaMetadata(metadataType: 3, title: "Song"), duration: duration)
        let status = try await client.requests.media(.load(LoadRequest(media: media))).get()
        try #require(status?.playerState == "PLAYING" || status?.playerState == "BUFFERING")
    }

    func close() async {
        await client.shutdown()
        await simulator.shutdown()
    }
}

/// Runs `body` with a fresh device and client and always closes both (also when the body
/// fails), awaiting the close: nothing outlives the test.
func withHarness(configuration: CastConnectionConfiguration = .fast, deviceName: String = "Test Device",
                 launchLatency: TimeAmount = .milliseconds(30), _ body: (Harness) async throws -> Void) async throws {
    try await withClosing(try await Harness(configuration: configuration, deviceName: deviceName, launchLatency: launchLatency),
                          close: { await $0.close() }, body)
}

extension CastConnectionConfiguration {
    /// Short timers so recovery tests run in seconds.
    static var fast: CastConnectionConfiguration {
        // Short enough that a silent device is found in seconds, long enough that a busy machine
        // (the device runs in the test process) does not look like one.
        CastConnectionConfiguration(heartbeatInterval: .milliseconds(500), heartbeatTimeout: .seconds(5),
                                    requestTimeout: .seconds(10),
                                    backoff: ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(1)))
    }
}
