import CastProtocol
import Testing

@Suite("eureka_info parser") struct EurekaInfoTests {
    private func parse(_ text: String) throws -> EurekaInfo {
        try EurekaInfo.parse(Array(text.utf8)).get()
    }

    private func failure(_ bytes: [UInt8]) -> EurekaParseError.Code? {
        if case .failure(let error) = EurekaInfo.parse(bytes) { return error.code }
        return nil
    }

    @Test("a member's full answer: device facts, the group it leads, a dynamic group")
    func fullAnswer() throws {
        let info = try parse("""
            {"name":"Kitchen","device_info":{"name":"Kitchen speaker","model_name":"Google Home",
             "manufacturer":"Google Inc.","ssdp_udn":"0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9",
             "capabilities":{"display_supported":false,"multizone_supported":true}},
             "multizone":{"groups":[{"name":"Downstairs","uuid":"99998888-7777-6666-5555-444433332222",
                                     "elected_leader":"self","cast_port":42123}],
                          "dynamic_groups":[{"name":"Temporary","uuid":"11112222333344445555666677778888",
                                             "elected_leader":"192.0.2.7:10001"}]}}
            """)
        #expect(info.name == "Kitchen")
        #expect(info.friendlyName == "Kitchen speaker")
        #expect(info.model == "Google Home")
        #expect(info.manufacturer == "Google Inc.")
        #expect(info.id == "0a1b2c3d4e5f60718293a4b5c6d7e8f9")
        #expect(info.displaySupported == false && info.multizoneSupported == true)
        #expect(info.groups == [EurekaInfo.Group(name: "Downstairs", id: "99998888777766665555444433332222",
                                                 leader: .thisDevice, castPort: 42123)])
        #expect(info.dynamicGroups == [EurekaInfo.Group(name: "Temporary", id: "11112222333344445555666677778888",
                                                        leader: .member(host: "192.0.2.7", port: 10001))])
    }

    @Test("an answer without params: top-level name, ssdp_udn and ip_address")
    func noParams() throws {
        let info = try parse(#"{"name":"TV","ssdp_udn":"0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9","ip_address":"192.0.2.10","uptime":3.5}"#)
        #expect(info.friendlyName == "TV" && info.deviceName == nil)
        #expect(info.id == "0a1b2c3d4e5f60718293a4b5c6d7e8f9")
        #expect(info.ipAddress == "192.0.2.10")
        #expect(info.groups.isEmpty && info.dynamicGroups.isEmpty && info.model == nil)
    }

    @Test("elected_leader: self, host:port, [v6]:port, a bare host, and what is not a host")
    func leaders() {
        let cases: [(String, EurekaInfo.Group.Leader)] = [
            (#""self""#, .thisDevice),
            (#""192.0.2.5:10001""#, .member(host: "192.0.2.5", port: 10001)),
            (#""[fe80::1%eth0]:10001""#, .member(host: "fe80::1%eth0", port: 10001)),
            (#""fe80::2""#, .member(host: "fe80::2", port: nil)),
            (#""speaker.local""#, .member(host: "speaker.local", port: nil)),
            (#""192.0.2.5:99999""#, .member(host: "192.0.2.5", port: nil)),
            (#""192.0.2.5:""#, .member(host: "192.0.2.5", port: nil)),
            (#""bad host!:1""#, .unknown),
            (#""[fe80::1""#, .unknown),
            (#""[fe80::1]x""#, .unknown),
            (#"":10001""#, .unknown),
            (#""""#, .unknown),
            ("7", .unknown),
            ("null", .unknown),
        ]
        for (json, expected) in cases {
            let info = try? parse(#"{"multizone":{"groups":[{"elected_leader":\#(json)}]}}"#)
            #expect(info?.groups.first?.leader == expected, "elected_leader \(json)")
        }
    }

    @Test("cast_port: whole numbers and digit strings in 1-65535, nothing else")
    func ports() {
        let cases: [(String, Int?)] = [
            ("8009", 8009), (#""32123""#, 32123), ("65535", 65535), ("0", nil), ("65536", nil), ("-1", nil), ("1.5", nil),
            ("1e300", nil), (#""12a""#, nil), (#""123456""#, nil), ("true", nil), ("[]", nil),
        ]
        for (json, expected) in cases {
            let info = try? parse(#"{"multizone":{"groups":[{"cast_port":\#(json)}]}}"#)
            #expect(info?.groups.first?.castPort == expected, "cast_port \(json)")
        }
    }

    @Test("fields of the wrong type are absent; groups that are not objects are skipped")
    func wrongTypes() throws {
        let info = try parse("""
            {"name":5,"device_info":[],"ssdp_udn":"not-a-uuid","ip_address":{},
             "multizone":{"groups":[1,"x",null,{"name":["no"],"uuid":"1234"}],"dynamic_groups":{"a":1}}}
            """)
        #expect(info == EurekaInfo(groups: [EurekaInfo.Group()]))
        let capabilities = try parse(#"{"device_info":{"capabilities":{"display_supported":"false","multizone_supported":1}}}"#)
        #expect(capabilities.displaySupported == nil && capabilities.multizoneSupported == nil)
    }

    @Test("texts are trimmed and bounded; group lists are bounded")
    func bounds() throws {
        let long = String(repeating: "ä", count: 1000)
        let groups = (0..<100).map { #"{"name":"g\#($0)"}"# }.joined(separator: ",")
        let info = try parse(#"{"name":"  \#(long)  ","device_info":{"model_name":"   "},"multizone":{"groups":[\#(groups)]}}"#)
        #expect(info.name == String(repeating: "ä", count: EurekaInfo.maximumTextLength))
        #expect(info.model == nil)
        #expect(info.groups.count == EurekaInfo.maximumGroups)
        #expect(info.groups.last?.name == "g63")
    }

    @Test("not JSON, not an object, too large, too deep: typed errors, no crash")
    func errors() {
        #expect(failure([]) == .notJSON)
        #expect(failure(Array("<html>forbidden</html>".utf8)) == .notJSON)
        #expect(failure([0x00, 0xFF, 0x7B, 0x7B]) == .notJSON)
        #expect(failure(Array("[]".utf8)) == .notAnObject)
        #expect(failure(Array(#""text""#.utf8)) == .notAnObject)
        #expect(failure(Array(repeating: UInt8(ascii: " "), count: EurekaInfo.maximumSize + 1)) == .tooLarge)
        #expect(failure(Array(String(repeating: "[", count: 60_000).utf8)) == .notJSON)
        let deep = String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        #expect(failure(Array(deep.utf8)) == .notJSON)
        // Exactly at the limit is still read.
        let padded = "{}" + String(repeating: " ", count: EurekaInfo.maximumSize - 2)
        #expect(failure(Array(padded.utf8)) == nil)
    }
}
