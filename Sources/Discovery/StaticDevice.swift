import Settings

/// A device listed in the configuration (`discovery.devices`), reachable without mDNS: the
/// configuration model's entry, read as it is.
public typealias StaticDevice = BridgeConfiguration.StaticDevice

extension BridgeConfiguration.StaticDevice {
    /// The id this device is known by: the configured id normalised (dashes removed, lower case),
    /// or, when none is set or it is not a valid UUID, `StaticDevice.stableID(host:port:)`.
    public var effectiveID: String {
        id.flatMap(TXTRecordParser.normalizeID) ?? StaticDevice.stableID(host: host, port: port)
    }

    /// A stable id for a device without one: FNV-1a 128-bit over the UTF-8 bytes of
    /// `"<host lower-cased>:<port>"`, as 32 lower-case hex digits. Deterministic across runs,
    /// machines and versions (no random seed, no platform hash).
    public static func stableID(host: String, port: Int) -> String {
        FNV1a128.hex(Array("\(host.lowercased()):\(port)".utf8))
    }

    /// The record announced for this device before (or without) mDNS information.
    public var record: CastDeviceRecord {
        let type = TXTRecordParser.castType(capabilities: nil, model: nil, port: nil)
        return CastDeviceRecord(
            id: effectiveID,
            friendlyName: name ?? host,
            model: nil,
            manufacturer: type == .group ? "Google Inc." : nil,
            host: host,
            port: port,
            capabilities: [],
            castType: type,
            source: .static,
            topicOverride: topic
        )
    }
}

/// FNV-1a with the 128-bit parameters (offset basis 0x6c62272e07bb014262b821756295c58d,
/// prime 2^88 + 0x13b), on two 64-bit words so it needs no `UInt128`.
enum FNV1a128 {
    static func hash(_ bytes: [UInt8]) -> (high: UInt64, low: UInt64) {
        var high: UInt64 = 0x6c62_272e_07bb_0142
        var low: UInt64 = 0x62b8_2175_6295_c58d
        for byte in bytes {
            low ^= UInt64(byte)
            // (high, low) * (2^88 + 0x13b) mod 2^128
            let product = low.multipliedFullWidth(by: 0x13b)
            let newHigh = high &* 0x13b &+ product.high &+ (low << 24)
            low = product.low
            high = newHigh
        }
        return (high, low)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let (high, low) = hash(bytes)
        return hex64(high) + hex64(low)
    }

    private static func hex64(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
