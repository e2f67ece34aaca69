import CastSimulator
import Foundation
import Yams

/// `cast-sim --config FILE`: devices and groups in YAML (or JSON, which YAML reads too).
///
/// ```yaml
/// devices:
///   - name: Kitchen                 # required
///     address: 127.0.0.2            # an address of its own: Cast on 8009, eureka_info on 8008/8443
///     cast_type: audio              # video | audio | group (default: --cast-type)
///   - {name: Den, address: 127.0.0.3, id: 0123456789abcdef0123456789abcdef, model: Nest Audio, volume: 0.3}
///   - {name: Shared TV, port: 0}    # no address: 127.0.0.1 and this port (0 = any free)
///   - {name: Hub, page_timeout: 300, display_timeout: 600, lovelace_allow_http: true, lovelace_verify_token: true}
/// groups:
///   - name: Downstairs              # required
///     members: [Kitchen, Den]       # names or ids, required
///     leader: Den                   # default: the first member
///     port: 32187                   # default: any free port at the leader's address
///     multichannel: false           # a stereo pair
///     dynamic: false                # a dynamic (temporary) group
/// ```
struct SimulatorFile: Decodable {
    struct Device: Decodable {
        var name: String
        var id: String?
        var address: String?
        var port: Int?
        var castType: String?
        var model: String?
        var volume: Double?
        var eurekaHTTPPort: Int?
        var eurekaHTTPSPort: Int?
        var pageTimeout: Double?
        var displayTimeout: Double?
        var lovelaceAllowHTTP: Bool?
        var lovelaceVerifyToken: Bool?

        enum CodingKeys: String, CodingKey {
            case name, id, address, port, model, volume
            case castType = "cast_type"
            case eurekaHTTPPort = "eureka_http_port"
            case eurekaHTTPSPort = "eureka_https_port"
            case pageTimeout = "page_timeout"
            case displayTimeout = "display_timeout"
            case lovelaceAllowHTTP = "lovelace_allow_http"
            case lovelaceVerifyToken = "lovelace_verify_token"
        }
    }

    struct Group: Decodable {
        var name: String
        var id: String?
        var members: [String]
        var leader: String?
        var port: Int?
        var multichannel: Bool?
        var dynamic: Bool?
    }

    var devices: [Device]?
    var groups: [Group]?

    /// Reads and checks a file; the error names the file and what is wrong.
    static func load(_ path: String) throws -> SimulatorFile {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SimulatorFileError("\(path): cannot read: \(error.localizedDescription)")
        }
        let file: SimulatorFile
        do {
            file = try YAMLDecoder().decode(SimulatorFile.self, from: text)
        } catch {
            throw SimulatorFileError("\(path): \(error)")
        }
        try file.validate(path)
        return file
    }

    func validate(_ path: String) throws {
        for (index, device) in (devices ?? []).enumerated() {
            let at = "\(path): devices[\(index)]"
            guard !device.name.isEmpty else { throw SimulatorFileError("\(at): empty name") }
            if let id = device.id, SimulatedDeviceConfiguration.normalizedID(id) == nil {
                throw SimulatorFileError("\(at): id \(id) is not 32 hex digits")
            }
            for port in [device.port, device.eurekaHTTPPort, device.eurekaHTTPSPort].compactMap({ $0 })
            where !(0...65_535).contains(port) {
                throw SimulatorFileError("\(at): port \(port) out of range")
            }
            if let type = device.castType, SimulatedCastType(rawValue: type) == nil {
                throw SimulatorFileError("\(at): cast_type must be video, audio or group")
            }
            if let volume = device.volume, !(0...1).contains(volume) {
                throw SimulatorFileError("\(at): volume must be 0-1")
            }
            for (key, seconds) in [("page_timeout", device.pageTimeout), ("display_timeout", device.displayTimeout)]
            where seconds.map({ !(0...31_536_000).contains($0) }) == true {
                throw SimulatorFileError("\(at): \(key) must be 0-31536000 seconds")
            }
        }
        for (index, group) in (groups ?? []).enumerated() {
            let at = "\(path): groups[\(index)]"
            guard !group.name.isEmpty, !group.members.isEmpty else { throw SimulatorFileError("\(at): needs a name and members") }
            if let port = group.port, !(0...65_535).contains(port) { throw SimulatorFileError("\(at): port out of range") }
            if let id = group.id, SimulatedDeviceConfiguration.normalizedID(id) == nil {
                throw SimulatorFileError("\(at): id \(id) is not a UUID")
            }
        }
    }

    /// The device configurations, with `base` (from the command line flags) for everything the
    /// file does not say.
    func deviceConfigurations(base: SimulatedDeviceConfiguration) -> [SimulatedDeviceConfiguration] {
        (devices ?? []).map { device in
            var configuration = base
            configuration.name = device.name
            configuration.id = device.id.flatMap(SimulatedDeviceConfiguration.normalizedID)
                ?? SimulatedDeviceConfiguration.deviceID(forName: device.name)
            if let type = device.castType.flatMap(SimulatedCastType.init(rawValue:)) {
                configuration.castType = type
                configuration.model = type.defaultModel
            }
            if let model = device.model { configuration.model = model }
            if let volume = device.volume { configuration.initialVolumeLevel = volume }
            if let address = device.address { configuration = configuration.onOwnAddress(address) }
            if let port = device.port { configuration.port = port }
            if let port = device.eurekaHTTPPort { configuration.eurekaHTTPPort = port }
            if let port = device.eurekaHTTPSPort { configuration.eurekaHTTPSPort = port }
            if let seconds = device.pageTimeout { configuration.pageTimeout = seconds }
            if let seconds = device.displayTimeout { configuration.displayTimeout = seconds }
            if let allow = device.lovelaceAllowHTTP { configuration.lovelaceAllowsHTTP = allow }
            if let verify = device.lovelaceVerifyToken { configuration.lovelaceVerifiesTokens = verify }
            return configuration
        }
    }

    var groupConfigurations: [SimulatedGroupConfiguration] {
        (groups ?? []).map {
            SimulatedGroupConfiguration(name: $0.name, id: $0.id, members: $0.members, leader: $0.leader, port: $0.port ?? 0,
                                        multichannel: $0.multichannel ?? false, dynamic: $0.dynamic ?? false)
        }
    }
}

struct SimulatorFileError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
