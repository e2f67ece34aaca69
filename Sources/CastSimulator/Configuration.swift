import CastProtocol
import Crypto
import Foundation
import NIOCore

/// What kind of device the simulator pretends to be (affects `ca` capabilities, video info and
/// the default model name).
public enum SimulatedCastType: String, Sendable, Hashable, CaseIterable, Codable {
    case video, audio, group

    /// The `ca` TXT capability bits a real device of this type announces.
    public var capabilities: Int {
        switch self {
        case .video: return 4101  // video out + audio out + attenuation volume
        case .audio: return 2052  // audio out + master volume
        case .group: return 2084  // audio + multizone group
        }
    }

    public var defaultModel: String {
        switch self {
        case .video: return "Chromecast"
        case .audio: return "Google Home"
        case .group: return "Google Cast Group"
        }
    }
}

/// Application ids the simulator knows. Anything else is answered with LAUNCH_ERROR NOT_FOUND.
public enum SimulatedAppID {
    /// Default Media Receiver: speaks the media namespace.
    public static let defaultMediaReceiver = CastAppID.defaultMediaReceiver
    /// Backdrop, the idle screen (`isIdleScreen: true`).
    public static let backdrop = CastAppID.backdrop
    /// The simulator's own echo app: echoes every message on `echoNamespace` back to its sender.
    public static let echo = "E7C0A1B0"
    /// The custom namespace of the echo app.
    public static let echoNamespace = "urn:x-cast:com.cast2mqtt.echo"
    /// "Sim Music": a media app of its own (as Spotify is), speaking the media namespace with a
    /// queue of its own; started by another sender with `remoteLoad`.
    public static let music = "5E3A1C01"
    /// DashCast (madmod's deployment, the one pychromecast and catt launch): shows a web page
    /// sent on `dashCastNamespace` (docs/simulator.md, "Display receivers").
    public static let dashCast = "84912283"
    public static let dashCastNamespace = "urn:x-cast:com.madmod.dashcast"
    /// Home Assistant's Lovelace receiver (Home Assistant Cast): shows a dashboard of the Home
    /// Assistant instance a sender connects it to on `lovelaceNamespace`.
    public static let lovelace = "A078F6B0"
    public static let lovelaceNamespace = "urn:x-cast:com.nabucasa.hast"
}

/// Settings of one simulated device. Every field has a default.
public struct SimulatedDeviceConfiguration: Sendable {
    /// Friendly name (`fn`).
    public var name: String
    /// Device id: 32 lowercase hex characters (derived from the name when not given).
    public var id: String
    /// The address the device listens on. `127.0.0.1` (the default) is shared by many devices
    /// that differ by port; any other address (127.0.0.2 ..., or a test host's address in a
    /// network namespace) is the device's own, as on a real network: see `onOwnAddress(_:)`.
    public var host: String
    /// TCP port of the Cast channel; 0 picks a free one (read it back from `SimulatedDevice.port`).
    public var port: Int
    /// Port of `GET /setup/eureka_info` over plain HTTP (a real device: 8008); nil = none.
    public var eurekaHTTPPort: Int?
    /// Port of `GET /setup/eureka_info` over TLS with the device's self-signed certificate (a
    /// real device: 8443); nil = none.
    public var eurekaHTTPSPort: Int?
    /// `manufacturer` in `eureka_info`.
    public var manufacturer: String
    /// Model name (`md`); defaults per cast type.
    public var model: String
    public var castType: SimulatedCastType
    /// Time from LAUNCH to the RECEIVER_STATUS that shows the app (real devices: 0.3–2 s).
    public var launchLatency: TimeAmount
    /// How long a receiver STOP takes (an app does not tear down instantly on a real device).
    public var stopLatency: TimeAmount
    /// Delay before every reply and status broadcast.
    public var replyLatency: TimeAmount
    /// Interval of the device's own PINGs; nil disables them.
    public var heartbeatInterval: TimeAmount?
    /// Show the Backdrop app when nothing runs (true) or an empty application list (false).
    public var idleScreen: Bool
    /// `supportedMediaCommands` of media sessions.
    public var supportedMediaCommands: Int
    /// Device volume.
    public var volumeControlType: String
    public var volumeStepInterval: Double
    public var initialVolumeLevel: Double
    /// Members answered in MULTIZONE_STATUS.
    public var multizoneMembers: [MultizoneDevice]
    /// Media clock (real time unless a test injects a `ManualSimulatorClock`).
    public var clock: any SimulatorClock
    /// How often the media clock is checked for ends of media and ad clips (and the page and
    /// display timeouts).
    public var tickInterval: TimeAmount
    /// The receiver platform's idle timeout, in seconds of `clock`: a running app (not the idle
    /// screen) that has neither a media session nor a sender connected to its transport is
    /// closed this long after it became so, unless the app disables the idle timeout (the
    /// Lovelace receiver does, DashCast does not). nil (the default): never.
    public var pageTimeout: Double?
    /// A smart display's own timeout (a Nest Hub's ten minutes), in seconds of `clock`: every
    /// app but the idle screen is closed this long after its launch or its last media load,
    /// whatever its options. The Lovelace receiver reloads its placeholder image every 540 s
    /// while a view is shown (as the real one does on touch displays). nil (the default): never.
    public var displayTimeout: Double?
    /// The Lovelace receiver accepts an `http://` hassUrl (the real one refuses any but
    /// `localhost` with receiver_error 5).
    public var lovelaceAllowsHTTP: Bool
    /// The Lovelace receiver checks the refresh token of every `connect` against the hassUrl's
    /// `/auth/token` (loopback hosts only) and reports connected only when Home Assistant
    /// accepts it.
    public var lovelaceVerifiesTokens: Bool

    /// ALL_BASIC_MEDIA | QUEUE_NEXT | QUEUE_PREV | QUEUE_SHUFFLE | SKIP_AD | QUEUE_REPEAT | STREAM_TRANSFER.
    public static let defaultSupportedMediaCommands: Int = {
        let commands: MediaCommands = [.allBasicMedia, .queueNext, .queuePrev, .queueShuffle, .skipAd, .queueRepeatAll,
                                       .queueRepeatOne, .streamTransfer]
        return commands.rawValue
    }()

    public init(
        name: String,
        id: String? = nil,
        host: String = "127.0.0.1",
        port: Int = 0,
        eurekaHTTPPort: Int? = nil,
        eurekaHTTPSPort: Int? = nil,
        manufacturer: String = "Google Inc.",
        model: String? = nil,
        castType: SimulatedCastType = .video,
        launchLatency: TimeAmount = .milliseconds(300),
        stopLatency: TimeAmount = .milliseconds(100),
        replyLatency: TimeAmount = .milliseconds(2),
        heartbeatInterval: TimeAmount? = .seconds(5),
        idleScreen: Bool = true,
        supportedMediaCommands: Int = SimulatedDeviceConfiguration.defaultSupportedMediaCommands,
        volumeControlType: String = "attenuation",
        volumeStepInterval: Double = 0.05,
        initialVolumeLevel: Double = 0.5,
        multizoneMembers: [MultizoneDevice] = [],
        clock: any SimulatorClock = SystemSimulatorClock(),
        tickInterval: TimeAmount = .milliseconds(50),
        pageTimeout: Double? = nil,
        displayTimeout: Double? = nil,
        lovelaceAllowsHTTP: Bool = false,
        lovelaceVerifiesTokens: Bool = false
    ) {
        self.name = name
        self.id = id ?? SimulatedDeviceConfiguration.deviceID(forName: name)
        self.host = host
        self.port = port
        self.eurekaHTTPPort = eurekaHTTPPort
        self.eurekaHTTPSPort = eurekaHTTPSPort
        self.manufacturer = manufacturer
        self.model = model ?? castType.defaultModel
        self.castType = castType
        self.launchLatency = launchLatency
        self.stopLatency = stopLatency
        self.replyLatency = replyLatency
        self.heartbeatInterval = heartbeatInterval
        self.idleScreen = idleScreen
        self.supportedMediaCommands = supportedMediaCommands
        self.volumeControlType = volumeControlType
        self.volumeStepInterval = volumeStepInterval
        self.initialVolumeLevel = initialVolumeLevel
        self.multizoneMembers = multizoneMembers
        self.clock = clock
        self.tickInterval = tickInterval
        self.pageTimeout = pageTimeout
        self.displayTimeout = displayTimeout
        self.lovelaceAllowsHTTP = lovelaceAllowsHTTP
        self.lovelaceVerifiesTokens = lovelaceVerifiesTokens
    }

    /// The address a shared-address device listens on (devices there differ by port).
    public static let sharedHost = "127.0.0.1"

    /// This configuration on an address of its own, as a real device: the Cast channel on port
    /// 8009, `eureka_info` on 8008 (HTTP) and 8443 (HTTPS).
    public func onOwnAddress(_ host: String) -> SimulatedDeviceConfiguration {
        var copy = self
        copy.host = host
        copy.port = 8009
        copy.eurekaHTTPPort = 8008
        copy.eurekaHTTPSPort = 8443
        return copy
    }

    /// The mDNS host name the device's service points at, with an address record of its own
    /// (`<dashed id>.local`, as real devices use); nil on the shared address, whose services
    /// point at the avahi host itself.
    public var mdnsHostName: String? {
        host == Self.sharedHost ? nil : Self.dashedID(id) + ".local"
    }

    /// A 32-hex id in the dashed UUID form (8-4-4-4-12), as groups announce theirs and as
    /// `ssdp_udn` and multizone `deviceId`s carry them. Other input is returned unchanged.
    public static func dashedID(_ id: String) -> String {
        let hex = Array(id.lowercased())
        guard hex.count == 32 else { return id }
        var out = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { out.append("-") }
            out.append(character)
        }
        return out
    }

    /// A 32-hex id from a dashed or plain UUID (any case); nil when it is not one.
    public static func normalizedID(_ text: String) -> String? {
        let hex = text.lowercased().filter { $0 != "-" }
        guard hex.count == 32, hex.allSatisfy(\.isHexDigit) else { return nil }
        return hex
    }

    /// A stable 32-hex id for a name (MD5 of the name; not a security use).
    public static func deviceID(forName name: String) -> String {
        Insecure.MD5.hash(data: Data(name.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The TXT record a real device of this configuration would announce (for an mDNS publisher).
    /// A group announces its id as a dashed UUID, with `cd` equal to it (as real groups do).
    public var txtRecord: [String: String] {
        let announcedID = castType == .group ? Self.dashedID(id) : id
        return ["id": announcedID, "cd": castType == .group ? announcedID : id.uppercased(), "md": model, "fn": name,
                "ca": String(castType.capabilities), "st": "0", "ve": "05", "ic": "/setup/icon.png", "rs": "",
                "nf": "1"]
    }
}
