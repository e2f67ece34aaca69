/// Why a TXT record could not become a device record. The device is skipped (and logged).
public struct TXTParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// No `id` key.
        case missingID = "missing_id"
        /// An `id` that is not 32 hex digits once dashes are removed.
        case malformedID = "malformed_id"
    }

    public var code: Code
    /// The offending value, when there is one.
    public var value: String?

    public init(code: Code, value: String? = nil) {
        self.code = code
        self.value = value
    }

    public var description: String {
        switch code {
        case .missingID: return "TXT record has no id"
        case .malformedID: return "TXT record id \"\(value ?? "")\" is not a 32-digit hex UUID"
        }
    }
}

/// Turns a `_googlecast._tcp` TXT record into a `CastDeviceRecord`. Pure: no C, no I/O.
///
/// Mapping: `id` → id (dashes removed, lower-cased, must be 32 hex digits), `fn` → friendlyName
/// (falls back to `md`, then the service name, then the id), `md` → model, `ca` → capabilities
/// (non-numeric → none), `st` → busy, `rs` → statusText, `ve` → protocolVersion, `ic` → iconPath.
/// Keys are matched case-insensitively; when a key repeats, the first one counts (RFC 6763 §6.4).
public enum TXTRecordParser {
    /// The Cast port of single devices; groups listen elsewhere.
    public static let devicePort = 8009

    public static func parse(
        _ txt: [(key: String, value: [UInt8])],
        host: String,
        port: Int,
        serviceName: String? = nil,
        interface: String? = nil
    ) -> Result<CastDeviceRecord, TXTParseError> {
        var fields: [String: [UInt8]] = [:]
        for (key, value) in txt {
            let lowered = key.lowercased()
            if fields[lowered] == nil { fields[lowered] = value }
        }
        return parseFields(fields, host: host, port: port, serviceName: serviceName, interface: interface)
    }

    public static func parse(
        _ txt: [String: [UInt8]],
        host: String,
        port: Int,
        serviceName: String? = nil,
        interface: String? = nil
    ) -> Result<CastDeviceRecord, TXTParseError> {
        parse(txt.map { (key: $0.key, value: $0.value) }, host: host, port: port,
              serviceName: serviceName, interface: interface)
    }

    /// Convenience for text values (tests, the simulator).
    public static func parse(
        _ txt: [String: String],
        host: String,
        port: Int,
        serviceName: String? = nil,
        interface: String? = nil
    ) -> Result<CastDeviceRecord, TXTParseError> {
        parse(txt.map { (key: $0.key, value: Array($0.value.utf8)) }, host: host, port: port,
              serviceName: serviceName, interface: interface)
    }

    /// Splits raw TXT strings (`key=value`, or a bare `key`) into pairs.
    public static func split(_ strings: [[UInt8]]) -> [(key: String, value: [UInt8])] {
        strings.compactMap { bytes in
            if let eq = bytes.firstIndex(of: UInt8(ascii: "=")) {
                guard eq > 0 else { return nil }
                return (key: String(decoding: bytes[..<eq], as: UTF8.self),
                        value: Array(bytes[(eq + 1)...]))
            }
            guard !bytes.isEmpty else { return nil }
            return (key: String(decoding: bytes, as: UTF8.self), value: [])
        }
    }

    /// Normalises a Cast UUID: removes dashes (and surrounding braces/space), lower-cases, and
    /// returns nil unless exactly 32 hex digits remain.
    public static func normalizeID(_ raw: String) -> String? {
        let trimmed = raw.trimmingASCIIWhitespace().filter { $0 != "-" && $0 != "{" && $0 != "}" }.lowercased()
        guard trimmed.utf8.count == 32, trimmed.utf8.allSatisfy(\.isHexDigit) else { return nil }
        return trimmed
    }

    /// Decodes the `\ddd` (decimal byte) and `\c` escapes some resolvers leave in text values.
    public static func decodeEscapes(_ bytes: [UInt8]) -> String {
        guard bytes.contains(UInt8(ascii: "\\")) else { return String(decoding: bytes, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            guard byte == UInt8(ascii: "\\"), i + 1 < bytes.count else {
                out.append(byte)
                i += 1
                continue
            }
            if i + 3 < bytes.count, bytes[(i + 1)...(i + 3)].allSatisfy(\.isDecimalDigit) {
                let value = bytes[(i + 1)...(i + 3)].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
                if value <= 255 {
                    out.append(UInt8(value))
                    i += 4
                    continue
                }
            }
            out.append(bytes[i + 1])
            i += 2
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The cast type rule, from what the device says: a group when `ca` has the multizone bit
    /// or `md` is `Google Cast Group` (either is enough: a group is known by both); else video
    /// when `ca` has video-out, audio when `ca` is there without it. Without `ca`, the model
    /// decides (a name with "group" in it is a group; audio hints like "Google Home" are audio;
    /// else video). With neither `ca` nor `md`, the port is the fallback, as pychromecast
    /// decides: a port other than 8009 is a group. `port` nil (a static device, whose port says
    /// nothing: simulated and test devices listen anywhere) skips that fallback.
    public static func castType(capabilities: CastCapabilities?, model: String?, port: Int?) -> CastType {
        let lowered = model?.trimmingASCIIWhitespace().lowercased() ?? ""
        if capabilities?.contains(.multizoneGroup) == true || lowered == "google cast group" { return .group }
        if let capabilities { return capabilities.contains(.videoOut) ? .video : .audio }
        if !lowered.isEmpty {
            if lowered.contains("group") { return .group }
            let audioHints = ["audio", "google home", "nest mini", "nest audio", "speaker", "home mini", "home max"]
            return audioHints.contains(where: lowered.contains) ? .audio : .video
        }
        if let port, port != devicePort { return .group }
        return .video
    }

    /// "Google Inc." for models Google makes (and for groups), nil otherwise.
    public static func manufacturer(model: String?, castType: CastType) -> String? {
        if castType == .group { return "Google Inc." }
        let lowered = model?.lowercased() ?? ""
        let google = ["chromecast", "google", "nest"]
        return google.contains(where: lowered.hasPrefix) ? "Google Inc." : nil
    }

    static func parseFields(
        _ fields: [String: [UInt8]],
        host: String,
        port: Int,
        serviceName: String?,
        interface: String?
    ) -> Result<CastDeviceRecord, TXTParseError> {
        guard let rawID = fields["id"] else { return .failure(TXTParseError(code: .missingID)) }
        let idText = String(decoding: rawID, as: UTF8.self)
        guard let id = normalizeID(idText) else {
            return .failure(TXTParseError(code: .malformedID, value: idText))
        }
        func text(_ key: String) -> String? {
            guard let bytes = fields[key] else { return nil }
            let value = decodeEscapes(bytes).trimmingASCIIWhitespace()
            return value.isEmpty ? nil : value
        }
        let model = text("md")
        let capabilities: CastCapabilities? = fields["ca"].map {
            CastCapabilities(rawValue: Int(String(decoding: $0, as: UTF8.self).trimmingASCIIWhitespace()) ?? 0)
        }
        let type = castType(capabilities: capabilities, model: model, port: port)
        let busy: Bool? = fields["st"].flatMap {
            switch String(decoding: $0, as: UTF8.self).trimmingASCIIWhitespace() {
            case "0": return false
            case "1": return true
            default: return nil
            }
        }
        let name = text("fn") ?? model ?? serviceName.flatMap { $0.isEmpty ? nil : $0 } ?? id
        return .success(CastDeviceRecord(
            id: id,
            friendlyName: name,
            model: model,
            manufacturer: manufacturer(model: model, castType: type),
            host: host,
            port: port,
            capabilities: capabilities ?? [],
            castType: type,
            busy: busy,
            statusText: text("rs"),
            protocolVersion: text("ve"),
            iconPath: text("ic"),
            serviceName: serviceName,
            interface: interface,
            source: .mdns,
            topicOverride: nil
        ))
    }
}

extension UInt8 {
    var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }

    var isDecimalDigit: Bool { (0x30...0x39).contains(self) }
}

extension StringProtocol {
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }),
              let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
