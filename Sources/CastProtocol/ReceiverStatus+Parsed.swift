/// RECEIVER_STATUS read from a parsed `JSONValue` (`JSONValue.parse`, one pass) instead of
/// through `JSONDecoder`, which was most of a volume reply's cost on the loop (~7 % of a cold
/// command turn). The rules are those of the `Decodable` inits, field by field: a field of the
/// wrong type is absent; `applications` is empty when one entry has no string `appId`; an app's
/// `namespaces` are empty when one entry has no string `name`; `volume` is absent when one of its
/// fields has the wrong type (its synthesized decoding is strict). `JSONValue.parse` hands
/// everything it is unsure of to `JSONDecoder`, so the values are the decoder's; a document it
/// refuses takes the `JSONDecoder` path whole. `ReceiverResponse.parseWithJSONDecoder` is that
/// path for everything, and the payload fuzzer and `ReceiverStatusParsedTests` compare the two.
extension ReceiverStatus {
    init(parsed object: [String: JSONValue]) {
        self.init()
        applications = object["applications"].strictArray(ReceiverApplication.init(parsed:)).lenient ?? []
        volume = object["volume"].strictObject(ReceiverVolume.init(parsed:)).lenient
        isActiveInput = object["isActiveInput"].strictBool().lenient
        isStandBy = object["isStandBy"].strictBool().lenient
        userEq = object["userEq"].anyJSON
    }
}

extension ReceiverVolume {
    /// nil when a field is there with the wrong type (as the synthesized `Decodable` throws).
    init?(parsed object: [String: JSONValue]) {
        guard let controlType = take(object["controlType"].strictString()), let level = take(object["level"].strictDouble()),
              let muted = take(object["muted"].strictBool()),
              let stepInterval = take(object["stepInterval"].strictDouble()) else { return nil }
        self.init(controlType: controlType, level: level, muted: muted, stepInterval: stepInterval)
    }
}

extension ReceiverApplication {
    /// nil without a string `appId` (the one field `init(from:)` requires).
    init?(parsed object: [String: JSONValue]) {
        guard case .value(let appId) = object["appId"].strictString() else { return nil }
        let namespaces = object["namespaces"].strictArray { entry -> String? in
            if case .value(let name) = entry["name"].strictString() { return name } else { return nil }
        }.lenient ?? []
        func string(_ key: String) -> String? { object[key].strictString().lenient }
        self.init(appId: appId, appType: string("appType"), displayName: string("displayName"), iconUrl: string("iconUrl"),
                  isIdleScreen: object["isIdleScreen"].strictBool().lenient,
                  launchedFromCloud: object["launchedFromCloud"].strictBool().lenient, namespaces: namespaces,
                  sessionId: string("sessionId"), statusText: string("statusText"),
                  transportId: string("transportId").flatMap(CastEndpoint.validated), universalAppId: string("universalAppId"))
    }
}
