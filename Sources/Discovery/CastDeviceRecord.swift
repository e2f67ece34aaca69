/// What kind of receiver a Cast device is.
public enum CastType: String, Sendable, Codable, Hashable {
    /// A device with a video output (Chromecast, Android TV, smart display).
    case video
    /// An audio-only device (Chromecast Audio, speakers).
    case audio
    /// A multizone (speaker) group, hosted on its leader's address on a port other than 8009.
    case group
}

/// The `ca` TXT bit field of a Cast device (decimal on the wire).
///
/// Only the documented bits have names; undocumented bits that real devices set
/// (512, 65536, 131072, 262144) are kept in `rawValue` but have no name.
public struct CastCapabilities: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let videoOut = CastCapabilities(rawValue: 1)
    public static let videoIn = CastCapabilities(rawValue: 2)
    public static let audioOut = CastCapabilities(rawValue: 4)
    public static let audioIn = CastCapabilities(rawValue: 8)
    public static let devMode = CastCapabilities(rawValue: 16)
    public static let multizoneGroup = CastCapabilities(rawValue: 32)
    public static let masterVolume = CastCapabilities(rawValue: 2048)
    public static let attenuationVolume = CastCapabilities(rawValue: 4096)

    /// Names of the documented bits, in bit order, for the MQTT `capabilities` list:
    /// `video_out`, `video_in`, `audio_out`, `audio_in`, `dev_mode`, `group`,
    /// `master_volume`, `attenuation_volume`.
    public var names: [String] {
        CastCapabilities.named.compactMap { contains($0.0) ? $0.1 : nil }
    }

    static let named: [(CastCapabilities, String)] = [
        (.videoOut, "video_out"),
        (.videoIn, "video_in"),
        (.audioOut, "audio_out"),
        (.audioIn, "audio_in"),
        (.devMode, "dev_mode"),
        (.multizoneGroup, "group"),
        (.masterVolume, "master_volume"),
        (.attenuationVolume, "attenuation_volume"),
    ]
}

/// Where a device came from. A static device that mDNS also sees stays `static`.
public enum DeviceSource: String, Sendable, Codable, Hashable {
    case mdns
    case `static`
}

/// One Cast device as discovery knows it: identity, where to connect, and what the TXT record said.
public struct CastDeviceRecord: Sendable, Equatable, Hashable {
    /// The Cast UUID: 32 lower-case hex digits, no dashes.
    public var id: String
    /// The user-set name (`fn`), or the model or service name when `fn` is missing.
    public var friendlyName: String
    /// `md`, e.g. "Chromecast", "Google Home", "Google Cast Group".
    public var model: String?
    /// Derived: "Google Inc." for Google models and groups, otherwise unknown.
    public var manufacturer: String?
    /// An IP literal to connect to (IPv6 link-local addresses carry a `%interface` suffix).
    public var host: String
    /// The Cast TLS port: 8009 for devices, another port for groups.
    public var port: Int
    /// `ca`.
    public var capabilities: CastCapabilities
    public var castType: CastType
    /// `st`: true when the device hosts an activity, nil when absent.
    public var busy: Bool?
    /// `rs`: the running app / status text; nil when absent or empty.
    public var statusText: String?
    /// `ve`, e.g. "05".
    public var protocolVersion: String?
    /// `ic`, e.g. "/setup/icon.png".
    public var iconPath: String?
    /// The DNS-SD instance name (mDNS devices only).
    public var serviceName: String?
    /// The network interface the device was seen on (mDNS devices only).
    public var interface: String?
    public var source: DeviceSource
    /// The topic name set in the static configuration, if any.
    public var topicOverride: String?

    public init(
        id: String,
        friendlyName: String,
        model: String? = nil,
        manufacturer: String? = nil,
        host: String,
        port: Int = 8009,
        capabilities: CastCapabilities = [],
        castType: CastType = .video,
        busy: Bool? = nil,
        statusText: String? = nil,
        protocolVersion: String? = nil,
        iconPath: String? = nil,
        serviceName: String? = nil,
        interface: String? = nil,
        source: DeviceSource = .mdns,
        topicOverride: String? = nil
    ) {
        self.id = id
        self.friendlyName = friendlyName
        self.model = model
        self.manufacturer = manufacturer
        self.host = host
        self.port = port
        self.capabilities = capabilities
        self.castType = castType
        self.busy = busy
        self.statusText = statusText
        self.protocolVersion = protocolVersion
        self.iconPath = iconPath
        self.serviceName = serviceName
        self.interface = interface
        self.source = source
        self.topicOverride = topicOverride
    }

    /// "host:port", with brackets around IPv6 literals.
    public var address: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// Something discovery reports about a device, in order, keyed by `CastDeviceRecord.id`.
public enum DiscoveryEvent: Sendable, Equatable {
    /// A device appeared (or became visible through the include/exclude filter).
    case added(CastDeviceRecord)
    /// A known device changed: address, name, port or TXT status fields.
    case updated(CastDeviceRecord)
    /// An mDNS-only device went away (a static device is never removed).
    case removed(id: String)
}

/// Logging metadata keys of this module.
public enum DiscoveryLogKey {
    /// The device id a log line is about.
    public static let device = "cast.device"
}
