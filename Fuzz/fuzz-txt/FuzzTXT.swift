import Bridge
import Discovery
import FuzzSupport

/// Input: the RDATA of an mDNS TXT record (length-prefixed strings, `id=…`, `fn=…`, `md=…`, …),
/// optionally followed by a NUL byte and a service instance name. The strings go through
/// `TXTRecordParser.split` and `parse` (at the device port and at a group's port), and a record
/// that parses gets a topic name from `TopicNameRegistry`: alone, when its name is taken, with
/// its friendly name as a config `topic:` override, and next to a device of the same id prefix.
func fuzzTXT(_ input: UnsafeRawBufferPointer) {
    var strings: [[UInt8]] = []
    var index = input.startIndex
    var serviceName: String?
    while index < input.endIndex {
        let length = Int(input[index])
        index += 1
        if length == 0 {
            serviceName = String(decoding: input[index...], as: UTF8.self)
            break
        }
        let end = min(index + length, input.endIndex)
        strings.append(Array(input[index..<end]))
        index = end
    }
    let pairs = TXTRecordParser.split(strings)
    for port in [TXTRecordParser.devicePort, 32123] {
        guard case .success(let record) = TXTRecordParser.parse(pairs, host: "192.0.2.10", port: port,
                                                                  serviceName: serviceName) else { continue }
        var registry = TopicNameRegistry()
        _ = registry.assign(id: "fedcba9876543210fedcba9876543210", friendlyName: "Kitchen Speaker")
        let name = registry.assign(id: record.id, friendlyName: record.friendlyName)
        precondition(TopicNameRegistry.isValidTopicName(name), "assigned an invalid topic name")
        // The same name again, for another device: it must get a different, valid name.
        let other = registry.assign(id: String(record.id.reversed()) + "x", friendlyName: record.friendlyName)
        precondition(other != name && TopicNameRegistry.isValidTopicName(other), "a taken name was assigned again")
        _ = registry.assign(id: record.id + "0", friendlyName: "", override: record.friendlyName)
    }
    for (_, value) in pairs.prefix(32) {
        _ = TXTRecordParser.decodeEscapes(value)
        _ = TXTRecordParser.normalizeID(String(decoding: value, as: UTF8.self))
    }
}
