import CastProtocol
import Foundation

/// `<base>/bridge/instances/<instance>`: what an instance says of itself (mqtt-api.md §10). Every
/// instance reads every other's, so the parser takes hostile input: bounded size and counts,
/// typed failures, unknown keys ignored.
public struct InstanceDocument: Sendable, Hashable {
    public enum State: String, Sendable, Hashable { case online, stopping }
    public var state: State
    public var version: String
    public var started: Date
    public var rule: String
    public var willDelay: Int
    /// The devices the instance reaches and how well (0–1; docs/scaling.md has the scale).
    public var devices: [DeviceID: Double]
    /// Counts the instance's connects and freezes: an instance takes only the document it
    /// published last as its own read-back (a copy its libmosquitto queued before a reconnect
    /// may arrive first).
    public var seq: Int

    /// Largest document read (a 10 000-device instance writes about 600 KB).
    public static let maxBytes = 4 << 20
    public static let maxDevices = 50_000

    public init(state: State, version: String, started: Date, rule: String = InstanceRule.name, willDelay: Int,
                devices: [DeviceID: Double], seq: Int = 0) {
        self.state = state
        self.version = version
        self.started = started
        self.rule = rule
        self.willDelay = willDelay
        self.devices = devices
        self.seq = seq
    }

    /// The document as published (devices sorted by id: equal content, equal bytes).
    public var json: JSONValue {
        .object([
            "state": .string(state.rawValue), "version": .string(version), "started": .time(started), "rule": .string(rule),
            "will_delay": .int(willDelay), "seq": .int(seq),
            "devices": .array(devices.keys.sorted().map { id in
                .object(["id": .string(id), "quality": .number(((devices[id] ?? 0) * 100).rounded() / 100)])
            }),
        ])
    }

    /// Parses a received document; the error says what is wrong with it (logged once per instance).
    public static func parse(_ payload: [UInt8]) -> Result<InstanceDocument, InstanceMessageError> {
        guard payload.count <= maxBytes else { return .failure(.init("larger than \(maxBytes) bytes")) }
        guard !JSONOutput.nestsDeeper(payload, than: 8), case .object(let o)? = JSONOutput.parse(payload) else {
            return .failure(.init("not a JSON object"))
        }
        guard let word = o["state"]?.stringValue, let state = State(rawValue: word) else {
            return .failure(.init("state is not online or stopping"))
        }
        guard case .array(let list)? = o["devices"], list.count <= maxDevices else {
            return .failure(.init("devices is not a list of at most \(maxDevices)"))
        }
        var devices: [DeviceID: Double] = [:]
        for entry in list {
            guard let id = entry["id"]?.stringValue, isDeviceID(id), case .number(let q)? = entry["quality"], q.isFinite else {
                return .failure(.init("a device entry is not {\"id\", \"quality\"}"))
            }
            devices[id] = min(max(q, 0), 1)
        }
        let started = o["started"]?.stringValue.flatMap(parseTime) ?? Date(timeIntervalSince1970: 0)
        var willDelay = 0
        if case .number(let n)? = o["will_delay"], n.isFinite, n >= 0, n <= 86_400 { willDelay = Int(n) }
        var seq = 0
        if case .number(let n)? = o["seq"], n.isFinite, n >= 0, n <= 1e15 { seq = Int(n) }
        return .success(InstanceDocument(state: state, version: String((o["version"]?.stringValue ?? "").prefix(64)),
                                         started: started, rule: String((o["rule"]?.stringValue ?? "").prefix(64)),
                                         willDelay: willDelay, devices: devices, seq: seq))
    }

    /// A device id as §1 names it: 1–64 characters of `[A-Za-z0-9_-]` (a Cast UUID, or a hash).
    static func isDeviceID(_ id: String) -> Bool { InstanceRule.isValidName(id) }

    private static func parseTime(_ s: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: s)
    }
}

/// `<base>/bridge/claims/<device id>`: `{"owner", "epoch"}`, retained.
public struct Claim: Sendable, Hashable, CustomStringConvertible {
    public var owner: String
    public var epoch: Int

    public init(owner: String, epoch: Int) {
        self.owner = owner
        self.epoch = epoch
    }

    /// Newer: a higher epoch, or the same epoch and a lower owner name.
    public func supersedes(_ other: Claim) -> Bool {
        epoch > other.epoch || (epoch == other.epoch && owner < other.owner)
    }

    public var json: JSONValue { .object(["owner": .string(owner), "epoch": .int(epoch)]) }
    public var description: String { "\(owner)#\(epoch)" }

    public static func parse(_ payload: [UInt8]) -> Result<Claim, InstanceMessageError> {
        guard payload.count <= 1024, case .object(let o)? = JSONOutput.parse(payload) else {
            return .failure(.init("not a JSON object of at most 1024 bytes"))
        }
        guard let owner = o["owner"]?.stringValue, InstanceRule.isValidName(owner) else {
            return .failure(.init("owner is not an instance name"))
        }
        guard case .number(let n)? = o["epoch"], n.isFinite, n >= 1, n <= 9_007_199_254_740_991, n.rounded() == n else {
            return .failure(.init("epoch is not a positive integer"))
        }
        return .success(Claim(owner: owner, epoch: Int(n)))
    }
}

/// What is wrong with a received instance document or claim.
public struct InstanceMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
