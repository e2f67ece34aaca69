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
        if let apps = object["applications"]?.arrayValue {
            var parsed: [ReceiverApplication] = []
            parsed.reserveCapacity(apps.count)
            for app in apps {
                guard case .object(let fields) = app, let application = ReceiverApplication(parsed: fields) else {
                    parsed = []
                    break
                }
                parsed.append(application)
            }
            applications = parsed
        }
        if case .object(let fields)? = object["volume"] { volume = ReceiverVolume(parsed: fields) }
        isActiveInput = object["isActiveInput"]?.strictBool
        isStandBy = object["isStandBy"]?.strictBool
        if let eq = object["userEq"], eq != .null { userEq = eq }
    }
}

extension ReceiverVolume {
    /// nil when a field is there with the wrong type (as the synthesized `Decodable` throws).
    init?(parsed object: [String: JSONValue]) {
        self.init()
        guard let controlType = object.field("controlType", \.strictString),
              let level = object.field("level", \.strictNumber),
              let muted = object.field("muted", \.strictBool),
              let stepInterval = object.field("stepInterval", \.strictNumber) else { return nil }
        self.controlType = controlType
        self.level = level
        self.muted = muted
        self.stepInterval = stepInterval
    }
}

extension ReceiverApplication {
    /// nil without a string `appId` (the one field `init(from:)` requires).
    init?(parsed object: [String: JSONValue]) {
        guard let appId = object["appId"]?.strictString else { return nil }
        var namespaces: [String] = []
        if let entries = object["namespaces"]?.arrayValue {
            for entry in entries {
                guard case .object(let fields) = entry, let name = fields["name"]?.strictString else {
                    namespaces = []
                    break
                }
                namespaces.append(name)
            }
        }
        self.init(appId: appId, appType: object["appType"]?.strictString, displayName: object["displayName"]?.strictString,
                  iconUrl: object["iconUrl"]?.strictString, isIdleScreen: object["isIdleScreen"]?.strictBool,
                  launchedFromCloud: object["launchedFromCloud"]?.strictBool, namespaces: namespaces,
                  sessionId: object["sessionId"]?.strictString, statusText: object["statusText"]?.strictString,
                  transportId: object["transportId"]?.strictString.flatMap(CastEndpoint.validated),
                  universalAppId: object["universalAppId"]?.strictString)
    }
}

private extension JSONValue {
    var strictString: String? { if case .string(let s) = self { return s } else { return nil } }
    var strictBool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var strictNumber: Double? { if case .number(let n) = self { return n } else { return nil } }
}

private extension Dictionary where Key == String, Value == JSONValue {
    /// A field of a strictly decoded struct: absent or null is `.some(nil)`, the right type its
    /// value, the wrong type nil (the whole struct fails).
    func field<T>(_ key: String, _ read: (JSONValue) -> T?) -> T?? {
        guard let value = self[key], value != .null else { return .some(nil) }
        guard let typed = read(value) else { return nil }
        return .some(typed)
    }
}
