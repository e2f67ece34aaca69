import CastProtocol

/// Input: an HTTP body as a device would send it at `/setup/eureka_info`. It goes through
/// `EurekaInfo.parse`, whose result must keep the type's promises whatever the bytes: ids of 32
/// lower-case hex digits, ports 1–65535, bounded texts and group lists.
func fuzzEureka(_ input: UnsafeRawBufferPointer) {
    let bytes = Array(input)
    guard case .success(let info) = EurekaInfo.parse(bytes) else { return }
    func checkID(_ id: String?) {
        guard let id else { return }
        precondition(id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) },
                     "id not normalised: \(id)")
    }
    func checkText(_ text: String?) {
        guard let text else { return }
        precondition(!text.isEmpty && text.count <= EurekaInfo.maximumTextLength, "text not bounded: \(text.count)")
    }
    checkID(info.id)
    for text in [info.name, info.deviceName, info.model, info.manufacturer, info.ipAddress, info.friendlyName] {
        checkText(text)
    }
    precondition(info.groups.count <= EurekaInfo.maximumGroups && info.dynamicGroups.count <= EurekaInfo.maximumGroups,
                 "group lists not bounded")
    for group in info.groups + info.dynamicGroups {
        checkID(group.id)
        checkText(group.name)
        if let port = group.castPort { precondition((1...65_535).contains(port), "cast_port out of range: \(port)") }
        if case .member(let host, let port) = group.leader {
            precondition(!host.isEmpty && host.utf8.count <= 253, "leader host not bounded")
            if let port { precondition((1...65_535).contains(port), "leader port out of range: \(port)") }
        }
    }
}
