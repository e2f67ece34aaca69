import Testing
@testable import Bridge

/// Inputs the fuzzers found (docs/reliability.md, "Fuzzing"), replayed through the entry point the
/// fuzz target calls. Each one is also in the target's corpus under `Fuzz/Corpus/<target>/regression-*`.
@Suite struct NamingFuzzRegressionTests {
    /// fuzz-txt, `Fuzz/Corpus/txt/regression-long-service-name-slug`: a TXT record without `fn`
    /// and `md` names the device after its mDNS service name; this 147-byte one (NULs, control
    /// characters, a slug over 128 bytes) made `TopicNameRegistry.assign` loop forever.
    static let serviceName: [UInt8] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 48, 48, 19, 114, 109, 61, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 65, 66, 67, 68,
        69, 70, 5, 118, 35, 105, 100, 61, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102, 48, 49,
        50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102, 19, 99, 100, 61, 67, 49, 66, 54, 69, 50, 66, 52,
        70, 48, 65, 49, 68, 50, 67, 51, 3, 114, 109, 61, 5, 118, 101, 61, 48, 53, 19, 109, 100, 61, 67, 104, 114, 111,
        109, 101, 99, 97, 115, 116, 32, 85, 108, 116, 114, 97, 18, 105, 99, 61, 47, 115, 101, 116, 101, 61, 48, 53,
        103, 103, 103, 103, 102, 83, 110, 61, 105, 109, 32, 117, 112, 84, 47, 118,
    ]

    @Test(.timeLimit(.minutes(1))) func longServiceNameGetsValidDistinctNames() {
        let name = String(decoding: Self.serviceName, as: UTF8.self)
        #expect(TopicNameRegistry.slug(name).utf8.count > 128)
        var registry = TopicNameRegistry()
        _ = registry.assign(id: "fedcba9876543210fedcba9876543210", friendlyName: "Kitchen Speaker")
        let first = registry.assign(id: "0123456789abcdef0123456789abcdef", friendlyName: name)
        let second = registry.assign(id: "fedcba98765432100123456789abcdefx", friendlyName: name)
        let overridden = registry.assign(id: "0123456789abcdef0123456789abcdef0", friendlyName: "", override: name)
        for assigned in [first, second, overridden] {
            #expect(TopicNameRegistry.isValidTopicName(assigned))
            #expect(assigned.utf8.count <= 128)
        }
        #expect(Set([first, second, overridden]).count == 3)
    }
}
