/// Topic names of devices (mqtt-api.md §1).
///
/// - The slug of the friendly name: lower-case, every run of characters outside `[a-z0-9]`
///   becomes one `_`, leading and trailing `_` trimmed.
/// - A config `topic:` wins; it is used as given when it is a valid single topic level,
///   otherwise it is slugged too.
/// - A name that is empty, reserved (`bridge`) or already taken by another device gets `_`
///   plus the first 4 hex digits of the device id appended (an empty slug becomes `device_<hex4>`).
/// - Once assigned, a device keeps its name for the whole run, even if it is renamed or
///   removed and rediscovered.
public struct TopicNameRegistry: Sendable {
    public static let reserved: Set<String> = ["bridge"]

    private var byID: [DeviceID: String] = [:]
    private var taken: [String: DeviceID] = [:]

    public init() {}

    /// The slug of a friendly name.
    public static func slug(_ name: String) -> String {
        var out = ""
        var pendingSeparator = false
        for scalar in name.lowercased().unicodeScalars {
            let isAllowed = (scalar >= "a" && scalar <= "z") || (scalar >= "0" && scalar <= "9")
            if isAllowed {
                if pendingSeparator && !out.isEmpty { out.append("_") }
                pendingSeparator = false
                out.unicodeScalars.append(scalar)
            } else {
                pendingSeparator = true
            }
        }
        return out
    }

    /// True when `name` can be used as one topic level for a device.
    public static func isValidTopicName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 128, !name.hasPrefix("$"), !reserved.contains(name) else { return false }
        return !name.unicodeScalars.contains { $0 == "+" || $0 == "#" || $0 == "/" || $0.value < 0x20 || $0.value == 0x7F }
    }

    /// The name already assigned to `id`, if any.
    public func name(for id: DeviceID) -> String? { byID[id] }

    /// The device that owns `name`, if any.
    public func device(named name: String) -> DeviceID? { taken[name] }

    /// The longest base name (in UTF-8 bytes) before a suffix: leaves room for `_<hex4>` and
    /// `_<n>` within the 128 bytes a topic name may have.
    public static let maxBaseBytes = 96

    /// `name` cut to at most `maxBaseBytes` UTF-8 bytes on a character boundary, without a
    /// trailing `_`.
    static func capped(_ name: String) -> String {
        guard name.utf8.count > maxBaseBytes else { return name }
        var out = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            if bytes + size > maxBaseBytes { break }
            out.append(character)
            bytes += size
        }
        while out.hasSuffix("_") { out.removeLast() }
        return out
    }

    /// Assigns (or returns the already assigned) topic name of a device. Total: names of any
    /// length and content give a valid name that no other device has.
    public mutating func assign(id: DeviceID, friendlyName: String, override: String? = nil) -> String {
        if let existing = byID[id] { return existing }
        var base: String
        if let override, Self.isValidTopicName(Self.capped(override)) {
            base = Self.capped(override)
        } else if let override, !Self.slug(override).isEmpty {
            base = Self.capped(Self.slug(override))
        } else {
            base = Self.capped(Self.slug(friendlyName))
        }
        let suffix = String(Self.hexDigits(of: id).prefix(4))
        if base.isEmpty { base = "device" + (suffix.isEmpty ? "" : "_\(suffix)") }
        var candidate = base
        if !Self.isValidTopicName(candidate) || taken[candidate] != nil {
            candidate = base + "_" + (suffix.isEmpty ? "x" : suffix)
        }
        // `stem` is at most 96 + 5 bytes and valid apart from being taken, so `stem_<n>` is a
        // valid name, and one of the first `taken.count + 1` numbers is free.
        let stem = candidate
        var n = 2
        while taken[candidate] != nil || !Self.isValidTopicName(candidate), n <= taken.count + 2 {
            candidate = "\(stem)_\(n)"
            n += 1
        }
        byID[id] = candidate
        taken[candidate] = id
        return candidate
    }

    static func hexDigits(of id: String) -> String {
        String(id.lowercased().unicodeScalars.filter { ($0 >= "0" && $0 <= "9") || ($0 >= "a" && $0 <= "f") }.map(Character.init))
    }
}
