import Bridge
import Foundation
import Testing

func configurationError(_ yaml: String, environment: [String: String] = [:]) -> ConfigurationError? {
    do {
        _ = try ConfigurationLoader.load(yaml: yaml, environment: environment)
        return nil
    } catch let error as ConfigurationError {
        return error
    } catch {
        return ConfigurationError(path: "?", message: "\(error)")
    }
}

@Suite struct WebConfigurationTests {
    @Test func defaultsAreThePageOnLoopback() throws {
        let c = try ConfigurationLoader.load(yaml: "")
        #expect(c.web.enabled && c.web.listen == "127.0.0.1:8199" && c.web.token == nil && !c.web.metricsPublic)
        #expect(c.web.address == WebListenAddress("127.0.0.1:8199"))
        #expect(c.web.address?.isLoopback == true)
    }

    @Test func theSectionAndItsEnvironmentVariablesAreRead() throws {
        let c = try ConfigurationLoader.load(yaml: """
            web:
              enabled: false
              listen: "0.0.0.0:8080"
              token: s3cret
              metrics_public: true
            """, environment: ["CAST2MQTT_WEB_LISTEN": "[::]:9000"])
        #expect(!c.web.enabled && c.web.token == "s3cret" && c.web.metricsPublic)
        #expect(c.web.address == WebListenAddress("[::]:9000"))
        #expect(c.web.address?.host == "::" && c.web.address?.port == 9000)
        let printed = ConfigurationLoader.printable(c)
        #expect(printed.contains("web:\n  enabled: false\n  listen: \"[::]:9000\"\n  token: \"***\""))
        #expect(!printed.contains("s3cret"))
        #expect(ConfigurationLoader.environmentVariables["CAST2MQTT_WEB_TOKEN"] == "web.token")
    }

    @Test func anyAddressButLoopbackNeedsAToken() throws {
        let error = try #require(configurationError("web: {listen: \"0.0.0.0:8199\"}"))
        #expect(error.path == "web.listen")
        #expect(error.message.contains("not a loopback address") && error.message.contains("web.token"))
        #expect(configurationError("web: {listen: \"192.0.2.1:80\", enabled: false}")?.path == "web.listen",
                "checked with the page off too")
        #expect(configurationError("web: {listen: \"0.0.0.0:8199\", token: abc}") == nil)
        #expect(configurationError("web: {listen: \"0.0.0.0:8199\", password_file: /etc/x}") == nil)
        for loopback in ["127.0.0.1:1", "127.9.9.9:8199", "localhost:8199", "[::1]:8199", "127.0.0.1:0"] {
            #expect(configurationError("web: {listen: \"\(loopback)\"}") == nil, "\(loopback)")
        }
    }

    @Test func badValuesNameTheKey() {
        for listen in ["nonsense", "127.0.0.1", "127.0.0.1:99999", "bridge.lan:80", "256.1.1.1:80", "[::1]", ":80", "127.0.0.1:-1", "::1:80"] {
            #expect(configurationError("web: {listen: \"\(listen)\"}")?.path == "web.listen", "\(listen)")
        }
        #expect(configurationError("web: {token: \"  \"}")?.path == "web.token")
        #expect(configurationError("web: {token: a, password_file: /x}")?.path == "web.password_file")
        #expect(configurationError("web: {enabled: maybe}")?.path == "web.enabled")
        #expect(configurationError("web: {port: 80}")?.path == "web.port")
    }

    @Test func thePasswordFileIsReadAtLoad() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("web-config-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("token").path
        let config = dir.appendingPathComponent("c.yaml").path
        try "web: {listen: \"0.0.0.0:8199\", password_file: \(file)}\n".write(toFile: config, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(path: config, environment: [:]) }
        try "\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(path: config, environment: [:]) }
        try "  from-file  \nsecond line\n".write(toFile: file, atomically: true, encoding: .utf8)
        let c = try ConfigurationLoader.load(path: config, environment: [:])
        #expect(try ConfigurationLoader.webSecret(c) == "from-file")
    }
}
