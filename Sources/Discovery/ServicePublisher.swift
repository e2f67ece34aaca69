import Logging

/// Announces one DNS-SD service through avahi-daemon, e.g. a simulated Cast device:
/// `publish(name:port:txt:)`, `withdraw()`, `stop()`. A one-service `MDNSPublisher`.
///
/// Name collisions are resolved the avahi way (`"Name #2"`); `publishedName` tells the name in use.
/// When the daemon restarts or its host name changes, the service is announced again.
public final class ServicePublisher: Sendable {
    public typealias Error = MDNSPublisher.Error

    private let publisher: MDNSPublisher
    private static let key = "service"

    /// Connects to avahi-daemon. Throws when it is not reachable.
    public init(logger: Logger = Logger(label: "cast2mqtt.discovery.publisher")) throws {
        publisher = try MDNSPublisher(logger: logger)
    }

    /// Announces `name` (an instance of `type`) on `port` with `txt`, replacing what this publisher
    /// announced before. Publishing the same name, type, port and interface again only updates
    /// the TXT record (no goodbye/re-announce). `interface` restricts it to one interface (e.g. "lo"); nil = all.
    public func publish(
        name: String, port: Int, txt: [String: String],
        type: String = "_googlecast._tcp", interface: String? = nil
    ) throws {
        try publisher.publish(PublishedService(name: name, type: type, port: port, txt: txt, interface: interface),
                              key: Self.key)
    }

    /// Removes the announcement (a goodbye packet goes out). The publisher can publish again.
    public func withdraw() { publisher.withdraw(key: Self.key) }

    /// Withdraws, disconnects from avahi-daemon and stops the poll thread. Idempotent.
    public func stop() { publisher.stop() }

    /// True once avahi confirmed the announcement (no collision).
    public var isEstablished: Bool { publisher.isEstablished(key: Self.key) }

    /// The instance name in use (differs from the requested one after a collision).
    public var publishedName: String? { publisher.publishedName(key: Self.key) }

    /// The TXT keys a real Cast device publishes, derived from its id (32 hex digits):
    /// `id`, `cd` (upper-case id), `rm` (16 hex), `ve=05`, `md`, `ic=/setup/icon.png`, `fn`, `ca`,
    /// `st`, `bs` (12 hex), `nf=1`, `rs`.
    public static func castTXT(
        id: String,
        name: String,
        model: String = "Chromecast",
        capabilities: CastCapabilities = [.videoOut, .audioOut, .attenuationVolume],
        status: Int = 0,
        statusText: String = ""
    ) -> [String: String] {
        let digest = FNV1a128.hex(Array(id.utf8))
        return [
            "id": id,
            "cd": id.uppercased(),
            "rm": String(digest.prefix(16)).uppercased(),
            "ve": "05",
            "md": model,
            "ic": "/setup/icon.png",
            "fn": name,
            "ca": String(capabilities.rawValue),
            "st": String(status),
            "bs": String(digest.suffix(12)).uppercased(),
            "nf": "1",
            "rs": statusText,
        ]
    }
}
