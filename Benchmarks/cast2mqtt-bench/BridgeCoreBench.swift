import Bridge
import CastProtocol
import CastSimulator
import Foundation

/// `BridgeCore.handle` throughput and per-input latency for a realistic mix on N devices.
///
/// Setup: MQTT connect, then per device discovery, Cast connect, the first receiver status (the
/// Default Media Receiver running) and the first media status (playing). Steady state, with the
/// clock advancing 1 ms per input and a `.tick` every simulated second:
/// 40 % media status with a new position, 10 % play/pause change, 20 % receiver volume change,
/// 15 % `command/volume` messages from MQTT and their 15 % operation completions.
/// Then a reconnect storm: `storm` devices lose their connection and come back (as after a
/// Wi-Fi outage): a disconnect for each, then the first receiver status of the new connection.
/// Device events are what the Cast client hands the core: snapshots from each device's
/// `CastSessionMachine` (built outside the timed region; only `handle` is timed).
enum BridgeCoreBench {
    enum Kind: String, CaseIterable {
        case discovered = "deviceDiscovered", firstReceiver = "receiverStatus (first)",
             firstMedia = "mediaStatus (first)", mediaPosition = "mediaStatus (position)",
             mediaState = "mediaStatus (play/pause)", receiverVolume = "receiverStatus (volume)",
             command = "mqtt command/volume", completion = "operationCompleted", tick = "tick",
             stormDisconnected = "disconnected (storm)", stormReceiver = "receiverStatus (back online)"
    }

    struct Stats {
        var samples = Samples()
        var publications = 0
        var bytes = 0
        var operations = 0
    }

    static let app = ReceiverApplication(
        appId: CastAppID.defaultMediaReceiver, displayName: "Default Media Receiver",
        namespaces: ["urn:x-cast:com.google.cast.cac", "urn:x-cast:com.google.cast.debugoverlay", CastNamespace.media],
        sessionId: "8c4d1f0e-2b7a-4c1e-9f53-0d6e2a1b3c4d", statusText: "Default Media Receiver",
        transportId: "8c4d1f0e-2b7a-4c1e-9f53-0d6e2a1b3c4d", universalAppId: CastAppID.defaultMediaReceiver)

    static func receiver(level: Double) -> ReceiverStatus {
        ReceiverStatus(applications: [app], volume: ReceiverVolume(controlType: "attenuation", level: level, muted: false,
                                                                   stepInterval: 0.05),
                       isActiveInput: true, isStandBy: false)
    }

    static func media(device: Int, time: Double, state: String) -> MediaStatus {
        MediaStatus(
            mediaSessionId: 1,
            media: MediaInformation(
                contentId: "http://192.0.2.5/music/\(device % 50)/track.mp3", streamType: "BUFFERED", contentType: "audio/mpeg",
                metadata: MediaMetadata(metadataType: 3, title: "Track \(device % 50)", artist: "The Example Ensemble",
                                        albumName: "The Quiet Hours",
                                        images: [CastImage(url: "http://192.0.2.5/music/cover.jpg", width: 600, height: 600)]),
                duration: 245.8),
            playerState: state, currentTime: time, playbackRate: 1, supportedMediaCommands: 274447,
            volume: StreamVolume(level: 1, muted: false))
    }

    static func deviceID(_ i: Int) -> String {
        let hex = String(i, radix: 16)
        return "b3nc" + String(repeating: "0", count: 28 - hex.count) + hex
    }

    static func run(devices n: Int, inputs: Int, maxSeconds: Double, storm: Int) throws -> (stats: [Kind: Stats], steadyInputs: Int, steadyNanos: UInt64, setupNanos: UInt64) {
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        var core = BridgeCore(configuration: BridgeConfiguration(), startedAt: t0)
        var now = t0
        var stats: [Kind: Stats] = [:]
        var pendingCommands: [(token: OperationToken, device: Int, level: Double)] = []

        func feed(_ kind: Kind, _ input: BridgeInput) -> BridgeOutput {
            let start = Measure.nanos()
            let out = core.handle(input, now: now)
            let elapsed = Measure.nanos() - start
            // Modified in place: a copy out of the dictionary would copy the sample array every time.
            stats[kind, default: Stats()].samples.add(elapsed)
            stats[kind, default: Stats()].publications += out.publications.count
            stats[kind, default: Stats()].bytes += out.publications.reduce(0) { $0 + $1.payload.count + $1.topic.utf8.count }
            stats[kind, default: Stats()].operations += out.operations.count
            return out
        }
        var sessions = [CastSessionMachine](repeating: CastSessionMachine(), count: n)
        /// A client event of device `d` through its session machine, then its snapshot to the core.
        func event(_ kind: Kind, _ d: Int, _ body: (inout CastSessionMachine) -> [CastSessionMachine.Action]) {
            for case .publish(let snapshot) in body(&sessions[d]) { _ = feed(kind, .device(deviceID(d), snapshot)) }
        }

        // Setup.
        _ = core.handle(.mqttConnected, now: now)
        var topicNames: [String] = []
        topicNames.reserveCapacity(n)
        let setupStart = Measure.nanos()
        for i in 0..<n {
            let name = "Bench Device \(i)"
            let descriptor = DeviceDescriptor(id: deviceID(i), friendlyName: name, model: "Chromecast", manufacturer: "Google Inc.",
                                              castType: .video, host: "192.0.2.\(i % 250 + 1)", port: 8009 + i / 250,
                                              capabilities: ["video_out", "audio_out"], source: .mdns)
            let out = feed(.discovered, .deviceDiscovered(descriptor))
            // The device's topic name is the slug the bridge chose; read it from its availability topic.
            guard let topic = out.publications.lazy.map(\.topic).first(where: { $0.hasSuffix("/availability") && !$0.contains("/bridge/") }) else {
                throw BenchError("deviceDiscovered published no availability topic")
            }
            topicNames.append(topic.split(separator: "/").dropFirst().first.map(String.init) ?? "")
            _ = sessions[i].connectionAnswered()
            event(.firstReceiver, i) { $0.receiverStatus(receiver(level: 0.5), now: now) }
            event(.firstMedia, i) { $0.mediaStatus(media(device: i, time: 1, state: "PLAYING"), now: now) }
        }
        let setupNanos = Measure.nanos() - setupStart

        // Steady state.
        var rng = SeededRandom(seed: 42)
        var positions = [Double](repeating: 1, count: n)
        var paused = [Bool](repeating: false, count: n)
        var lastTick = now
        let steadyStart = Measure.nanos()
        let deadline = steadyStart + UInt64(maxSeconds * 1e9)
        var done = 0
        while done < inputs, Measure.nanos() < deadline {
            now = now.addingTimeInterval(0.001)
            if now.timeIntervalSince(lastTick) >= 1 {
                lastTick = now
                _ = feed(.tick, .tick)
            }
            let d = Int(rng.next() % UInt64(n))
            switch done % 20 {
            case 0..<8:
                positions[d] += 5
                let status = media(device: d, time: positions[d], state: paused[d] ? "PAUSED" : "PLAYING")
                event(.mediaPosition, d) { $0.mediaStatus(status, now: now) }
            case 8..<10:
                paused[d].toggle()
                let status = media(device: d, time: positions[d], state: paused[d] ? "PAUSED" : "PLAYING")
                event(.mediaState, d) { $0.mediaStatus(status, now: now) }
            case 10..<14:
                let status = receiver(level: Double(rng.next() % 101) / 100)
                event(.receiverVolume, d) { $0.receiverStatus(status, now: now) }
            case 14, 16, 18:
                let percent = Int(rng.next() % 101)
                let out = feed(.command, .mqttMessage(topic: "cast2mqtt/\(topicNames[d])/command/volume",
                                                       payload: Array(String(percent).utf8), responseTopic: nil, correlationData: nil))
                for op in out.operations { pendingCommands.append((op.token, d, Double(percent) / 100)) }
            default:
                if let p = pendingCommands.popLast() {
                    // As the daemon sees it: the answering status first, then the completion.
                    event(.receiverVolume, p.device) { $0.receiverStatus(receiver(level: p.level), now: now) }
                    _ = feed(.completion, .operationCompleted(deviceID(p.device), p.token, .success(.done)))
                } else {
                    event(.receiverVolume, d) { $0.receiverStatus(receiver(level: 0.3), now: now) }
                }
            }
            done += 1
        }
        let steadyNanos = Measure.nanos() - steadyStart

        // Reconnect storm.
        let stormDevices = Array(0..<min(storm, n))
        for d in stormDevices {
            now = now.addingTimeInterval(0.001)
            event(.stormDisconnected, d) { $0.disconnected(.heartbeatTimeout, silentSince: now.addingTimeInterval(-15)) }
        }
        for d in stormDevices {
            now = now.addingTimeInterval(0.001)
            _ = sessions[d].connectionAnswered()
            event(.stormReceiver, d) { $0.receiverStatus(receiver(level: 0.5), now: now) }
        }
        guard (stats[.command]?.operations ?? 0) > 0 else {
            throw BenchError("command/volume produced no Cast operation: the topic names are wrong")
        }
        return (stats, done, steadyNanos, setupNanos)
    }
}
