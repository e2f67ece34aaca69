/// The rule every instance computes the same way to name a device's owner (mqtt-api.md §10;
/// docs/scaling.md). Pure and deterministic: the same inputs give the same owner in every
/// process, on every platform, in every run.
///
/// `sticky-rendezvous-v1`, over the *candidates* — the live instances (retained document present
/// and `online`) whose document lists the device with a quality above 0:
/// 1. the device's preference list (`prefer`), first candidate in its order;
/// 2. else the instance that holds the device's current claim, while it is a candidate (sticky:
///    an owned device stays where it is while its owner lives and reaches it — an instance that
///    comes back does not pull devices over, so nothing flaps);
/// 3. else rendezvous hashing: the candidate with the highest `hash(instance, device)`, ties to
///    the lower instance name.
public enum InstanceRule {
    /// The rule's name, published in every instance document.
    public static let name = "sticky-rendezvous-v1"

    /// 64-bit FNV-1a over the UTF-8 bytes of `instance`, a 0 byte and `device`, finished with
    /// the SplitMix64 mixer (FNV alone spreads short, similar keys poorly in the high bits). Not
    /// Swift's `Hasher`: that one is seeded per process.
    public static func hash(instance: String, device: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ byte: UInt8) {
            h ^= UInt64(byte)
            h = h &* 0x0000_0100_0000_01b3
        }
        for byte in instance.utf8 { add(byte) }
        add(0)
        for byte in device.utf8 { add(byte) }
        var z = h &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// The owner of `device` among `candidates` (nil: no candidate). `holder`: the instance of the
    /// device's current claim; `prefer`: the device's preference list, in order.
    public static func owner(device: String, candidates: some Collection<String>, holder: String?,
                             prefer: [String] = [],
                             hash: (_ instance: String, _ device: String) -> UInt64 = { hash(instance: $0, device: $1) }) -> String? {
        guard !candidates.isEmpty else { return nil }
        for name in prefer where candidates.contains(name) { return name }
        if let holder, candidates.contains(holder) { return holder }
        var best: (name: String, hash: UInt64)?
        for name in candidates {
            let h = hash(name, device)
            if let b = best, b.hash > h || (b.hash == h && b.name < name) { continue }
            best = (name, h)
        }
        return best?.name
    }

    /// The primary (owner of the plain bridge topics and the bridge requests): `configured` while
    /// it is live, else the lowest live instance name.
    public static func primary(live: some Collection<String>, configured: String?) -> String? {
        if let configured, live.contains(configured) { return configured }
        return live.min()
    }

    /// An instance name: `[A-Za-z0-9_-]`, 1–64 characters.
    public static func isValidName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x2d || b == 0x5f
        }
    }
}
