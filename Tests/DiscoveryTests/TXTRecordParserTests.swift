import Testing
@testable import Discovery

@Suite struct TXTRecordParserTests {
    private func parse(_ txt: [String: String], port: Int = 8009, serviceName: String? = "svc") -> Result<CastDeviceRecord, TXTParseError> {
        TXTRecordParser.parse(txt, host: "192.0.2.5", port: port, serviceName: serviceName, interface: "eth0")
    }

    @Test func chromecast() throws {
        let record = try parse([
            "id": "8F4E5B2A1C3D4E5F6A7B8C9D0E1F2A3B", "cd": "0123456789ABCDEF0123456789ABCDEF",
            "rm": "ABCDEF0123456789", "ve": "05", "md": "Chromecast", "ic": "/setup/icon.png",
            "fn": "Living Room TV", "ca": "4101", "st": "0", "bs": "FA8FCA123456", "nf": "1", "rs": "",
        ]).get()
        #expect(record.id == "8f4e5b2a1c3d4e5f6a7b8c9d0e1f2a3b")
        #expect(record.friendlyName == "Living Room TV")
        #expect(record.model == "Chromecast")
        #expect(record.manufacturer == "Google Inc.")
        #expect(record.host == "192.0.2.5")
        #expect(record.port == 8009)
        #expect(record.capabilities == [.videoOut, .audioOut, .attenuationVolume])
        #expect(record.capabilities.names == ["video_out", "audio_out", "attenuation_volume"])
        #expect(record.castType == .video)
        #expect(record.busy == false)
        #expect(record.statusText == nil)
        #expect(record.protocolVersion == "05")
        #expect(record.iconPath == "/setup/icon.png")
        #expect(record.serviceName == "svc")
        #expect(record.interface == "eth0")
        #expect(record.source == .mdns)
        #expect(record.topicOverride == nil)
    }

    @Test func chromecastAudio() throws {
        let record = try parse(["id": "11112222333344445555666677778888", "md": "Chromecast Audio",
                                "fn": "Kitchen", "ca": "2052", "st": "1", "rs": "Spotify"]).get()
        #expect(record.castType == .audio)
        #expect(record.capabilities == [.audioOut, .masterVolume])
        #expect(record.capabilities.names == ["audio_out", "master_volume"])
        #expect(record.busy == true)
        #expect(record.statusText == "Spotify")
    }

    @Test func groupWithDashedIDOnOtherPort() throws {
        let record = try parse(["id": "3a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", "cd": "3a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
                                "md": "Google Cast Group", "fn": "Whole House", "ca": "2084"], port: 32254).get()
        #expect(record.id == "3a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d")
        #expect(record.port == 32254)
        #expect(record.castType == .group)
        #expect(record.capabilities.contains(.multizoneGroup))
        #expect(record.capabilities.names == ["audio_out", "group", "master_volume"])
        #expect(record.manufacturer == "Google Inc.")
    }

    @Test func groupBitOnDevicePortIsStillGroup() throws {
        let record = try parse(["id": "3a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d", "ca": "2084"]).get()
        #expect(record.castType == .group)
    }

    @Test func groupModelWithoutTheGroupBitIsAGroup() throws {
        // `md` alone says group, whatever `ca` has (and on any port).
        let record = try parse(["id": "3a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", "md": "Google Cast Group", "ca": "2052"],
                               port: 8009).get()
        #expect(record.castType == .group)
        #expect(record.id == "3a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d")
        #expect(try parse(["id": "3a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d", "md": " google cast group "]).get().castType == .group)
    }

    @Test func thePortDecidesOnlyWhenNeitherCaNorMdIsThere() throws {
        let id = "aaaabbbbccccddddeeeeffff00001111"
        #expect(try parse(["id": id], port: 32187).get().castType == .group)
        #expect(try parse(["id": id], port: 32187).get().manufacturer == "Google Inc.")
        #expect(try parse(["id": id], port: 8009).get().castType == .video)
        #expect(try parse(["id": id, "ca": "4101"], port: 32187).get().castType == .video)
        #expect(try parse(["id": id, "md": "Google Home"], port: 32187).get().castType == .audio)
    }

    @Test func speakerWithUndocumentedBits() throws {
        let record = try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "md": "Google Home", "fn": "Bedroom speaker",
                                "ca": "198660"]).get()
        #expect(record.castType == .audio)
        #expect(record.capabilities.rawValue == 198660)
        #expect(record.capabilities.contains([.audioOut, .masterVolume]))
        #expect(record.capabilities.names == ["audio_out", "master_volume"])
    }

    @Test func escapedFriendlyName() throws {
        let record = try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "fn": "Living\\032Room\\032TV"]).get()
        #expect(record.friendlyName == "Living Room TV")
        // Multi-byte UTF-8 written as decimal escapes, and an escaped backslash.
        #expect(TXTRecordParser.decodeEscapes(Array("Caf\\195\\169 \\\\ 1".utf8)) == "Café \\ 1")
        // A trailing backslash or short digit run stays as it is.
        #expect(TXTRecordParser.decodeEscapes(Array("a\\12".utf8)) == "a12")
        #expect(TXTRecordParser.decodeEscapes(Array("a\\".utf8)) == "a\\")
    }

    @Test func missingIDIsSkipped() {
        #expect(parse(["fn": "No id here", "md": "Chromecast"]) == .failure(TXTParseError(code: .missingID)))
    }

    @Test(arguments: ["", "xyz", "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdefa",
                      "0123456789abcdef0123456789abcdeg"])
    func malformedIDIsSkipped(id: String) {
        #expect(parse(["id": id, "fn": "Bad"]) == .failure(TXTParseError(code: .malformedID, value: id)))
    }

    @Test func nonNumericCapabilitiesMeanNone() throws {
        let record = try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "md": "Chromecast", "ca": "lots"]).get()
        #expect(record.capabilities == [])
        #expect(record.castType == .audio)  // ca present but without video out
    }

    @Test func missingCapabilitiesUseModelHint() throws {
        #expect(try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "md": "Chromecast Audio"]).get().castType == .audio)
        #expect(try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "md": "Google Home Mini"]).get().castType == .audio)
        #expect(try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "md": "Chromecast"]).get().castType == .video)
        #expect(try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "md": "SHIELD Android TV"]).get().castType == .video)
    }

    @Test func missingFriendlyNameFallsBack() throws {
        #expect(try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "md": "Chromecast"]).get().friendlyName == "Chromecast")
        #expect(try parse(["id": "aaaabbbbccccddddeeeeffff00001111"], serviceName: "Chromecast-aaaa").get()
            .friendlyName == "Chromecast-aaaa")
        #expect(try parse(["id": "aaaabbbbccccddddeeeeffff00001111", "fn": ""], serviceName: nil).get()
            .friendlyName == "aaaabbbbccccddddeeeeffff00001111")
    }

    @Test func rawStringsSplitFirstKeyWinsCaseInsensitive() throws {
        let pairs = TXTRecordParser.split([
            Array("ID=aaaabbbbccccddddeeeeffff00001111".utf8), Array("fn=a=b".utf8), Array("nf".utf8),
            Array("=junk".utf8), Array("id=bbbbbbbbccccddddeeeeffff00001111".utf8),
        ])
        #expect(pairs.count == 4)
        let record = try TXTRecordParser.parse(pairs, host: "::1", port: 8009).get()
        #expect(record.id == "aaaabbbbccccddddeeeeffff00001111")
        #expect(record.friendlyName == "a=b")
        #expect(record.address == "[::1]:8009")
    }

    @Test func invalidUTF8DoesNotCrash() throws {
        let record = try TXTRecordParser.parse(
            [(key: "id", value: Array("aaaabbbbccccddddeeeeffff00001111".utf8)), (key: "fn", value: [0xff, 0xfe, 0x41])],
            host: "192.0.2.1", port: 8009).get()
        #expect(record.friendlyName.hasSuffix("A"))
    }

    @Test func castTXTHasTheKeysOfARealDevice() throws {
        let txt = ServicePublisher.castTXT(id: "0123456789abcdef0123456789abcdef", name: "Sim TV")
        #expect(Set(txt.keys) == ["id", "cd", "rm", "ve", "md", "ic", "fn", "ca", "st", "bs", "nf", "rs"])
        #expect(txt["ve"] == "05")
        #expect(txt["ic"] == "/setup/icon.png")
        #expect(txt["nf"] == "1")
        #expect(txt["ca"] == "4101")
        #expect(txt["rm"]?.count == 16)
        #expect(txt["bs"]?.count == 12)
        let record = try TXTRecordParser.parse(txt, host: "127.0.0.1", port: 8009).get()
        #expect(record.friendlyName == "Sim TV")
        #expect(record.castType == .video)
        #expect(record.busy == false)
    }
}

@Suite struct StaticDeviceTests {
    @Test func stableIDIsFNV1a128OfHostPort() {
        #expect(FNV1a128.hex([]) == "6c62272e07bb014262b821756295c58d")
        #expect(FNV1a128.hex(Array("a".utf8)) == "d228cb696f1a8caf78912b704e4a8964")
        #expect(StaticDevice.stableID(host: "192.0.2.10", port: 8009) == "7648922727a9f77caf52cc04056380d1")
        let device = StaticDevice(host: "192.0.2.10")
        #expect(device.effectiveID == "7648922727a9f77caf52cc04056380d1")
        #expect(StaticDevice(host: "192.0.2.10", port: 8010).effectiveID != device.effectiveID)
    }

    @Test func configuredIDIsNormalised() {
        let device = StaticDevice(host: "192.0.2.10", id: "8F4E5B2A-1C3D-4E5F-6A7B-8C9D0E1F2A3B")
        #expect(device.effectiveID == "8f4e5b2a1c3d4e5f6a7b8c9d0e1f2a3b")
    }

    @Test func recordUsesConfiguredNameAndTopic() {
        let record = StaticDevice(host: "192.0.2.10", port: 32000, name: "Group", topic: "all").record
        #expect(record.friendlyName == "Group")
        #expect(record.topicOverride == "all")
        #expect(record.source == .static)
        // Nothing known but the port: not a group (the port alone does not make one).
        #expect(record.castType == .video)
        #expect(record.manufacturer == nil)
        #expect(StaticDevice(host: "192.0.2.11").record.friendlyName == "192.0.2.11")
    }
}

@Suite struct DeviceFilterTests {
    let tv = CastDeviceRecord(id: "8f4e5b2a1c3d4e5f6a7b8c9d0e1f2a3b", friendlyName: "Living Room TV", host: "192.0.2.1")
    let speaker = CastDeviceRecord(id: "aaaabbbbccccddddeeeeffff00001111", friendlyName: "Kitchen", host: "192.0.2.2")

    @Test func emptyIncludesAll() {
        let filter = DeviceFilter(include: [], exclude: [])
        #expect(filter.allows(tv) && filter.allows(speaker))
    }

    @Test func includeByNameCaseInsensitiveOrID() {
        let filter = DeviceFilter(include: ["living room tv"], exclude: [])
        #expect(filter.allows(tv))
        #expect(!filter.allows(speaker))
        let byID = DeviceFilter(include: ["AAAABBBB-CCCC-DDDD-EEEE-FFFF00001111"], exclude: [])
        #expect(byID.allows(speaker))
        #expect(!byID.allows(tv))
    }

    @Test func excludeWins() {
        let filter = DeviceFilter(include: ["Kitchen", "Living Room TV"], exclude: ["KITCHEN"])
        #expect(filter.allows(tv))
        #expect(!filter.allows(speaker))
        #expect(!DeviceFilter(include: [], exclude: ["8f4e5b2a1c3d4e5f6a7b8c9d0e1f2a3b"]).allows(tv))
    }
}
