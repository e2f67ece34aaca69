import Foundation
import Testing

@testable import MQTT

@Suite struct BrokerURLTests {
    @Test func parsesPlainAndTLSURLs() throws {
        #expect(try MQTTBrokerAddress(url: "mqtt://broker.lan:1884") == MQTTBrokerAddress(host: "broker.lan", port: 1884, tls: false))
        #expect(try MQTTBrokerAddress(url: "mqtts://10.0.0.2:8884") == MQTTBrokerAddress(host: "10.0.0.2", port: 8884, tls: true))
        #expect(try MQTTBrokerAddress(url: "mqtt://localhost") == MQTTBrokerAddress(host: "localhost", port: 1883, tls: false))
        #expect(try MQTTBrokerAddress(url: "mqtts://localhost/") == MQTTBrokerAddress(host: "localhost", port: 8883, tls: true))
        #expect(try MQTTBrokerAddress(url: " MQTT://h:1 ") == MQTTBrokerAddress(host: "h", port: 1, tls: false))
        #expect(try MQTTBrokerAddress(url: "mqtt://[::1]:1883") == MQTTBrokerAddress(host: "::1", port: 1883, tls: false))
        #expect(try MQTTBrokerAddress(url: "mqtt://[::1]:1883").description == "[::1]:1883")
        #expect(try MQTTBrokerAddress(url: "mqtt://h:2000").description == "h:2000")
    }

    @Test(arguments: [
        ("http://host:1883", "unknown scheme \"http\""),
        ("host:1883", "expected mqtt://host:port"),
        ("mqtt://:1883", "missing host"),
        ("mqtt://", "missing host"),
        ("mqtt://host:", "bad port \"\""),
        ("mqtt://host:abc", "bad port \"abc\""),
        ("mqtt://host:0", "bad port \"0\""),
        ("mqtt://host:65536", "bad port \"65536\""),
        ("mqtt://host:1883/topic", "a path is not allowed"),
        ("mqtt://user:pw@host:1883", "credentials in the URL are not supported"),
        ("mqtt://[::1", "unterminated IPv6 address"),
    ])
    func rejectsBadURLs(url: String, expected: String) {
        #expect {
            _ = try MQTTBrokerAddress(url: url)
        } throws: { error in
            guard let error = error as? MQTTError else { return false }
            return error.code == .invalidConfiguration && error.message.contains(expected)
                && error.message.contains(url.trimmingWhitespace)
        }
    }

    @Test func validatesConfiguration() throws {
        #expect(try MQTTConfiguration().validate() == MQTTBrokerAddress(host: "127.0.0.1", port: 1883, tls: false))
        func message(_ c: MQTTConfiguration) -> String? {
            do {
                _ = try c.validate()
                return nil
            } catch { return error.message }
        }
        #expect(message(MQTTConfiguration(clientID: "")) == "a persistent session (clean start off) needs a client id")
        #expect(message(MQTTConfiguration(clientID: "", cleanStart: true)) == nil)
        #expect(message(MQTTConfiguration(keepalive: 2))?.contains("keepalive") == true)
        #expect(message(MQTTConfiguration(username: "u", password: "p", passwordFile: "/f"))?.contains("not both") == true)
        #expect(message(MQTTConfiguration(password: "p"))?.contains("needs a username") == true)
        #expect(message(MQTTConfiguration(url: "mqtt://h:1", caFile: "/ca"))?.contains("need an mqtts:// URL") == true)
        #expect(message(MQTTConfiguration(url: "mqtts://h:1", certFile: "/c"))?.contains("together") == true)
        #expect(message(MQTTConfiguration(url: "mqtts://h:1", caFile: "/ca", certFile: "/c", keyFile: "/k")) == nil)
        #expect(message(MQTTConfiguration(reconnectInitial: .seconds(5), reconnectMax: .seconds(1))) != nil)
        #expect(message(MQTTConfiguration(will: MQTTMessage(topic: ""))) != nil)
    }

    @Test func readsThePasswordFilesFirstLine() throws {
        let path = "/tmp/cast2mqtt-pw-\(uniqueID("f"))"
        try "s3cret\nsecond line\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let configuration = MQTTConfiguration(username: "u", passwordFile: path)
        #expect(try configuration.resolvedPassword() == "s3cret")
        #expect(try MQTTConfiguration(username: "u", password: "inline").resolvedPassword() == "inline")
        #expect {
            _ = try MQTTConfiguration(username: "u", passwordFile: path + ".missing").resolvedPassword()
        } throws: { error in
            (error as? MQTTError)?.code == .invalidConfiguration
                && (error as? MQTTError)?.message.contains("cannot read password file") == true
        }
    }

    @Test func clientInitRejectsBadConfigurationWithoutIO() {
        #expect(throws: MQTTError.self) {
            _ = try MosquittoClient(configuration: MQTTConfiguration(url: "ftp://x"), logger: testLogger)
        }
    }
}

@Suite struct ErrorMappingTests {
    @Test func mapsLibraryReturnCodes() {
        // libmosquitto's MOSQ_ERR_* values (the test does not import the C module).
        let cases: [(Int32, MQTTError.Code)] = [
            (4, /* NO_CONN */ .noConnection),
            (5, /* CONN_REFUSED */ .connectionRefused),
            (7, /* CONN_LOST */ .connectionLost),
            (19, /* KEEPALIVE */ .connectionLost),
            (2, /* PROTOCOL */ .protocolError),
            (3, /* INVAL */ .invalidArgument),
            (18, /* MALFORMED_UTF8 */ .invalidArgument),
            (8, /* TLS */ .tls),
            (9, /* PAYLOAD_SIZE */ .payloadTooLarge),
            (25, /* OVERSIZE_PACKET */ .payloadTooLarge),
            (10, /* NOT_SUPPORTED */ .notSupported),
            (11, /* AUTH */ .notAuthorized),
            (15, /* EAI */ .lookupFailed),
            (14, /* ERRNO */ .system),
            (13, /* UNKNOWN */ .library),
        ]
        for (rc, code) in cases {
            let error = MQTTError(returnCode: rc, operation: "do it")
            #expect(error.code == code, "\(rc)")
            #expect(error.message.hasPrefix("do it: "))
        }
        #expect(MQTTError(returnCode: 4, operation: "publish").message
            == "publish: The client is not currently connected.")
        #expect(MQTTError(returnCode: 14, operation: "connect", errno: ECONNREFUSED).message
            == "connect: Connection refused")
    }

    @Test func checkThrowsOnlyOnFailure() throws {
        try MQTTError.check(0, "fine")
        #expect(throws: MQTTError(code: .noConnection, message: "x: The client is not currently connected.")) {
            try MQTTError.check(4, "x")
        }
    }

    @Test func mapsConnackRefusals() {
        let v5Bad = MQTTError(connackCode: 0x86, protocolVersion: .v5)
        #expect(v5Bad.code == .notAuthorized)
        #expect(v5Bad.message.lowercased().contains("bad user name or password"))
        let v5NotAuthorized = MQTTError(connackCode: 0x87, protocolVersion: .v5)
        #expect(v5NotAuthorized.code == .notAuthorized)
        #expect(v5NotAuthorized.message.lowercased().contains("not authori"))
        #expect(MQTTError(connackCode: 0x88, protocolVersion: .v5).code == .connectionRefused)
        let v3 = MQTTError(connackCode: 5, protocolVersion: .v311)
        #expect(v3.code == .notAuthorized)
        #expect(v3.message.lowercased().contains("not authorised"))
        #expect(MQTTError(connackCode: 4, protocolVersion: .v311).message.lowercased().contains("bad user name or password"))
        #expect(MQTTError(connackCode: 2, protocolVersion: .v311).code == .connectionRefused)
    }

    @Test func messageConvenience() {
        let m = MQTTMessage(topic: "t", string: "héllo", qos: .exactlyOnce, retain: true)
        #expect(m.payload == Array("héllo".utf8))
        #expect(m.string == "héllo")
        #expect(MQTTMessage(topic: "t", payload: [0xff]).string == nil)
        #expect(MQTTMessage(topic: "t").qos == .atLeastOnce)
    }
}
