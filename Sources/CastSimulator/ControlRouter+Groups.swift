import CastProtocol
import NIOCore
import NIOHTTP1

// Control routes for groups, `eureka_info` behaviour and the mDNS announcements (see
// docs/simulator.md).
extension ControlRouter {
    /// `/groups…`: list, create, delete, move the leader, members joining and leaving.
    func handleGroups(method: HTTPMethod, rest: [String], json: JSONValue) async -> ControlResponse {
        do {
            switch (method, rest.count) {
            case (.GET, 0):
                return .json(await simulator.groupSummaries())
            case (.POST, 0):
                guard let name = json["name"]?.stringValue, !name.isEmpty,
                      let members = json["members"]?.arrayValue?.compactMap(\.stringValue), !members.isEmpty
                else { return .error(.badRequest, "need {\"name\": text, \"members\": [id or name, ...]}") }
                let port = json["port"]?.intValue ?? 0
                guard (0...65_535).contains(port) else { return .error(.badRequest, "port: 0-65535") }
                let configuration = SimulatedGroupConfiguration(
                    name: name, id: json["id"]?.stringValue, members: members, leader: json["leader"]?.stringValue,
                    port: port, multichannel: json["multichannel"]?.boolValue ?? false,
                    dynamic: json["dynamic"]?.boolValue ?? false)
                let endpoint = try await simulator.addGroup(configuration)
                return .json(try await endpoint.groupSummary())
            case (.DELETE, 1):
                try await simulator.removeGroup(id: rest[0])
                return .ok
            case (.POST, 2) where rest[1] == "leader":
                let port = json["port"]?.intValue
                if let port, !(0...65_535).contains(port) { return .error(.badRequest, "port: 0-65535") }
                return .json(try await simulator.moveLeader(ofGroup: rest[0], to: json["to"]?.stringValue, port: port))
            case (.POST, 2) where rest[1] == "members":
                guard let member = json["id"]?.stringValue else { return .error(.badRequest, "need {\"id\": id or name}") }
                try await simulator.addMember(member, toGroup: rest[0])
                return .ok
            case (.DELETE, 3) where rest[1] == "members":
                try await simulator.removeMember(rest[2], fromGroup: rest[0])
                return .ok
            default:
                return .error(.notFound, "no route \(method) /groups/\(rest.joined(separator: "/"))")
            }
        } catch {
            return .error(.conflict, "\(error)")
        }
    }

    /// `POST /devices/<id>/eureka`: `{"mode": normal|slow|fail|garbage|oversized|forbidden_host,
    /// "delay_ms": N, "http": bool, "https": bool}`; omitted keys keep their defaults (normal,
    /// no delay, both listening). `slow` is `normal` with `delay_ms` (default 10 000).
    func eureka(_ device: SimulatedDevice, _ json: JSONValue) async -> ControlResponse {
        let modeName = json["mode"]?.stringValue ?? "normal"
        let slow = modeName == "slow"
        guard let mode = slow ? .normal : EurekaBehaviour.Mode(rawValue: modeName) else {
            let names = (EurekaBehaviour.Mode.allCases.map(\.rawValue) + ["slow"]).joined(separator: ", ")
            return .error(.badRequest, "mode: one of \(names)")
        }
        let delay = json["delay_ms"]?.doubleValue ?? (slow ? 10_000 : 0)
        guard delay.isFinite, (0...600_000).contains(delay) else { return .error(.badRequest, "delay_ms: 0-600000") }
        var listening = Set<EurekaTransport>()
        if json["http"]?.boolValue ?? true { listening.insert(.http) }
        if json["https"]?.boolValue ?? true { listening.insert(.https) }
        do {
            try await device.setEurekaBehaviour(
                EurekaBehaviour(mode: mode, delay: .milliseconds(Int64(delay)), listening: listening))
            return .ok
        } catch {
            return .error(.internalServerError, "\(error)")
        }
    }
}
