#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Testing
import TestSupport

/// scripts/test runs the Swift suites in a network namespace of their own with only loopback
/// (`unshare --net`, `lo` up; it sets CAST2MQTT_LOOPBACK_ONLY=1 there): a test that names an
/// address of another host by mistake, a documentation address included (on our machines
/// 192.0.2.0/24 is the machine's own network), cannot send it a packet. This suite checks that
/// the namespace is what it says: another host is unreachable at once, loopback works. Outside
/// that namespace it does nothing, except under CI, where the suites must run inside it.
@Suite(.timeLimit(.minutes(1))) struct LoopbackOnlyTests {
    static var inside: Bool { environment("CAST2MQTT_LOOPBACK_ONLY") == "1" }

    /// connect() on a blocking TCP socket to `address`:`port`; the errno, 0 when it connected.
    static func connectErrno(_ address: String, _ port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, address, &addr.sin_addr) == 1 else { return EINVAL }
        let result = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0 ? 0 : errno
    }

    /// The names of this network namespace's interfaces (getifaddrs asks the kernel over
    /// netlink, so it sees the namespace the process is in).
    static func interfaceNames() -> Set<String> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var names: Set<String> = []
        var next = list
        while let entry = next {
            if let name = entry.pointee.ifa_name { names.insert(String(cString: name)) }
            next = entry.pointee.ifa_next
        }
        return names
    }

    @Test func anotherHostIsUnreachableAtOnce() throws {
        guard Self.inside else {
            if isCI { Issue.record("scripts/test runs the Swift suites in a loopback-only network namespace; this run is not in one") }
            return
        }
        // Checked before anything is sent: with any interface besides loopback, the connections
        // below could leave the machine, so the test stops here.
        let names = Self.interfaceNames()
        try #require(names == ["lo"], "CAST2MQTT_LOOPBACK_ONLY is set, but this namespace has \(names.sorted())")
        // No route but loopback's: the kernel refuses before any packet is made.
        #expect(Self.connectErrno("192.0.2.9", 8009) == ENETUNREACH)
        #expect(Self.connectErrno("198.51.100.7", 443) == ENETUNREACH)
    }

    @Test func loopbackWorks() throws {
        guard Self.inside else { return }
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(listener, pointer, length) == 0 && listen(listener, 1) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        #expect(Self.connectErrno("127.0.0.1", UInt16(bigEndian: addr.sin_port)) == 0)
    }
}
