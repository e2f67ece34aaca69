import CastProtocol
import Foundation
import Testing
import X509

/// Public test data (DeviceAuthVectors/ORIGIN.md), read by path.
enum AuthVectors {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("DeviceAuthVectors")

    static func data(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    /// The base64 bodies of the blocks `-----BEGIN <label>-----` of a file, decoded.
    static func blocks(_ name: String, label: String = "CERTIFICATE") throws -> [[UInt8]] {
        let text = String(decoding: try data(name), as: UTF8.self)
        var result: [[UInt8]] = []
        var body: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "-----BEGIN \(label)-----" { body = "" } else if line == "-----END \(label)-----" {
                if let b = body, let bytes = Data(base64Encoded: b) { result.append([UInt8](bytes)) }
                body = nil
            } else if body != nil { body! += line.trimmingCharacters(in: .whitespaces) }
        }
        return result
    }

    /// A chain file: device certificate first, then its intermediates.
    static func chain(_ name: String) throws -> (device: Certificate, intermediates: [[UInt8]]) {
        let certs = try blocks(name)
        return (try Certificate(derEncoded: certs[0]), Array(certs.dropFirst()))
    }

    static func date(_ year: Int, _ month: Int, _ day: Int, hour: Int = 0) -> Date {
        var c = DateComponents()
        (c.year, c.month, c.day, c.hour) = (year, month, day, hour)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: c)!
    }
}

@Suite("device authentication: the verifier against public test data") struct DeviceAuthVectorTests {
    let april2016 = AuthVectors.date(2016, 4, 1)

    @Test("both public roots are built in")
    func roots() throws {
        #expect(DeviceAuthRoots.certificates.count == 2)
        let cast = try Certificate(derEncoded: AuthVectors.blocks("cast_root_ca.pem")[0])
        let eureka = try Certificate(derEncoded: AuthVectors.blocks("eureka_root_ca.pem")[0])
        #expect(DeviceAuthRoots.certificates == [cast, eureka])
    }

    @Test("real device chains verify up to the real Cast and Eureka roots", arguments: [
        ("chromecast_gen1.pem", "2ZZBG9 FA8FCA3EF91A"), ("chromecast_gen1_reissue.pem", "2ZZBG9 FA8FCA3EF91A"),
        ("chromecast_gen2.pem", "3ZZAK6 FA8FCA3F0D35"), ("chromecast_audio.pem", "4ZZDZJ FA8FCA7EFE3C"),
        ("fugu.pem", "-6394818897508095075"), ("vizio.pem", "9V0000VB FA8FCA784D01"),
    ])
    func realChains(file: String, commonName: String) throws {
        let (device, intermediates) = try AuthVectors.chain(file)
        #expect(DeviceAuthVerifier.verifyChain(device: device, intermediates: intermediates, at: april2016,
                                               trust: .castRoots) == nil)
        // Given in the other order, the chain is found all the same.
        #expect(DeviceAuthVerifier.verifyChain(device: device, intermediates: intermediates.reversed(), at: april2016,
                                               trust: .castRoots) == nil)
        // Without its intermediates, or without any trusted root, it does not verify.
        if !intermediates.isEmpty {
            #expect(DeviceAuthVerifier.verifyChain(device: device, intermediates: [], at: april2016,
                                                   trust: .castRoots) == .untrustedChain)
        }
        #expect(DeviceAuthVerifier.verifyChain(device: device, intermediates: intermediates, at: april2016,
                                               trust: DeviceAuthTrustStore(anchors: [])) == .untrustedChain)
        let summary = DeviceAuthVerifierTestAccess.summary(of: try AuthVectors.blocks(file)[0])
        #expect(summary.commonName == commonName)
        #expect(summary.organization == "Google Inc")
    }

    @Test("a chain to an untrusted ICA, and a root presented as a device, fail")
    func untrusted() throws {
        let (device, intermediates) = try AuthVectors.chain("unchained.pem")
        #expect(DeviceAuthVerifier.verifyChain(device: device, intermediates: intermediates, at: april2016,
                                               trust: .castRoots) == .untrustedChain)
        let root = try Certificate(derEncoded: AuthVectors.blocks("cast_root_ca.pem")[0])
        #expect(DeviceAuthVerifier.verifyChain(device: root, intermediates: [], at: april2016,
                                               trust: .castRoots) == .untrustedChain)
    }

    @Test("a real chain outside its validity period is expired")
    func expiredChain() throws {
        let (device, intermediates) = try AuthVectors.chain("chromecast_gen2.pem")
        #expect(DeviceAuthVerifier.verifyChain(device: device, intermediates: intermediates,
                                               at: AuthVectors.date(2015, 1, 1), trust: .castRoots) == .expired)
        #expect(DeviceAuthVerifier.verifyChain(device: device, intermediates: intermediates,
                                               at: AuthVectors.date(2037, 3, 1), trust: .castRoots) == .expired)
    }

    @Test("a real device's signatures (SHA-1 and SHA-256) verify with its certificate's key")
    func realSignature() throws {
        let (device, _) = try AuthVectors.chain("chromecast_gen1.pem")
        let file = "signeddata_2ZZBG9_FA8FCA3EF91A.pem"
        let message = try #require(AuthVectors.blocks(file, label: "MESSAGE").first)
        #expect(message == Array("STRING".utf8))
        let sha1 = try #require(AuthVectors.blocks(file, label: "SIGNATURE SHA1").first)
        let sha256 = try #require(AuthVectors.blocks(file, label: "SIGNATURE SHA256").first)
        #expect(DeviceAuthVerifier.verifySignature(sha1, hash: .sha1, key: device.publicKey, data: message))
        #expect(DeviceAuthVerifier.verifySignature(sha256, hash: .sha256, key: device.publicKey, data: message))
        // The wrong hash, other data, a flipped bit: no.
        #expect(!DeviceAuthVerifier.verifySignature(sha1, hash: .sha256, key: device.publicKey, data: message))
        #expect(!DeviceAuthVerifier.verifySignature(sha256, hash: .sha256, key: device.publicKey, data: Array("STRINH".utf8)))
        var flipped = sha256
        flipped[17] ^= 0x01
        #expect(!DeviceAuthVerifier.verifySignature(flipped, hash: .sha256, key: device.publicKey, data: message))
    }

    /// Open Screen's test receiver: a complete AuthResponse to a challenge, over its TLS
    /// certificate, signed by a device key that chains to a test root.
    struct ReceiverVector {
        var nonce: [UInt8]
        var reply: [UInt8]
        var tls: [UInt8]
        var trust: DeviceAuthTrustStore

        init() throws {
            let challenge = try CastMessage(serializedBytes: AuthVectors.data("receiver_auth_challenge.pb"))
            #expect(challenge.namespace == CastNamespace.deviceAuth)
            nonce = try #require(DeviceAuthMessages.challengeNonce(challenge.payload.bytes))
            // The file is a bare AuthResponse: wrapped here as the DeviceAuthMessage a device
            // sends (field 2, length-delimited).
            let response = try AuthVectors.data("receiver_auth_response.pb")
            var length: [UInt8] = []
            var n = response.count
            repeat {
                length.append(UInt8(n & 0x7F) | (n > 0x7F ? 0x80 : 0))
                n >>= 7
            } while n > 0
            reply = [0x12] + length + response
            tls = try #require(AuthVectors.blocks("receiver_device_tls.pem").first)
            let chain = try AuthVectors.blocks("receiver_device_chain.pem")
            trust = DeviceAuthTrustStore(anchors: [try Certificate(derEncoded: chain[2])])
        }
    }

    @Test("Open Screen's test receiver answer verifies completely; each changed part fails as it should")
    func receiverVector() throws {
        let v = try ReceiverVector()
        let during = AuthVectors.date(2019, 12, 17, hour: 12)
        #expect(v.nonce.count == 16)
        let result = DeviceAuthVerifier.verify(reply: v.reply, nonce: v.nonce, tlsCertificateDER: v.tls, at: during, trust: v.trust)
        #expect(result.failure == nil)
        #expect(result.certificate?.commonName == "Device")
        // Only the real Cast roots: the test root is not one of them.
        #expect(DeviceAuthVerifier.verify(reply: v.reply, nonce: v.nonce, tlsCertificateDER: v.tls, at: during,
                                          trust: .castRoots).failure == .untrustedChain)
        // Another nonce (a replayed answer).
        var other = v.nonce
        other[0] ^= 0xFF
        #expect(DeviceAuthVerifier.verify(reply: v.reply, nonce: other, tlsCertificateDER: v.tls, at: during,
                                          trust: v.trust).failure == .nonceMismatch)
        // After the TLS certificate expired, before it began, or without one.
        #expect(DeviceAuthVerifier.verify(reply: v.reply, nonce: v.nonce, tlsCertificateDER: v.tls,
                                          at: AuthVectors.date(2019, 12, 20), trust: v.trust).failure == .tlsCertificate)
        #expect(DeviceAuthVerifier.verify(reply: v.reply, nonce: v.nonce, tlsCertificateDER: v.tls,
                                          at: AuthVectors.date(2019, 12, 15), trust: v.trust).failure == .tlsCertificate)
        #expect(DeviceAuthVerifier.verify(reply: v.reply, nonce: v.nonce, tlsCertificateDER: nil,
                                          at: during, trust: v.trust).failure == .tlsCertificate)
        // Another TLS certificate than the one signed: the signature does not cover it.
        let otherTLS = try AuthVectors.blocks("cast_test_root_ca.pem")[0]
        #expect(DeviceAuthVerifier.verify(reply: v.reply, nonce: v.nonce, tlsCertificateDER: otherTLS, at: during,
                                          trust: v.trust).failure == .tlsCertificate)
        // A changed signature.
        guard case .response(var response) = try DeviceAuthMessages.parseReply(v.reply) else {
            Issue.record("not a response")
            return
        }
        response.signature[5] ^= 0x10
        let tampered = DeviceAuthMessages.responsePayload(response)
        #expect(DeviceAuthVerifier.verify(reply: tampered, nonce: v.nonce, tlsCertificateDER: v.tls, at: during,
                                          trust: v.trust).failure == .badSignature)
    }

    @Test("an AuthError answer, garbage and oversized answers are typed failures")
    func errorsAndGarbage() throws {
        let v = try ReceiverVector()
        let during = AuthVectors.date(2019, 12, 17, hour: 12)
        func check(_ bytes: [UInt8]) -> DeviceAuthFailure? {
            DeviceAuthVerifier.verify(reply: bytes, nonce: v.nonce, tlsCertificateDER: v.tls, at: during, trust: v.trust).failure
        }
        #expect(check(DeviceAuthMessages.errorPayload(code: 2)) == .authError)
        #expect(check([]) == .malformed)
        #expect(check([0xFF, 0xFF, 0xFF]) == .malformed)
        #expect(check(DeviceAuthMessages.challenge(nonce: v.nonce)) == .malformed)
        #expect(check([UInt8](repeating: 0, count: DeviceAuthMessages.maxMessageBytes + 1)) == .malformed)
        // Every prefix of a real answer: never a crash, never authenticated.
        for n in stride(from: 0, to: v.reply.count, by: 7) {
            #expect(check(Array(v.reply.prefix(n))) != nil)
        }
    }

    @Test("a challenge carries the nonce, RSASSA-PKCS1-v1_5 and SHA-256")
    func challengeEncoding() throws {
        let nonce = [UInt8](0..<16)
        let payload = DeviceAuthMessages.challenge(nonce: nonce)
        #expect(DeviceAuthMessages.challengeNonce(payload) == nonce)
        // DeviceAuthMessage{challenge(1){signature_algorithm(1)=1, sender_nonce(2)=16 bytes, hash_algorithm(3)=1}}
        #expect(payload == [0x0A, 0x16, 0x08, 0x01, 0x12, 0x10] + nonce + [0x18, 0x01])
    }
}

/// The summary helper is internal; a device certificate's summary as the verifier makes it.
enum DeviceAuthVerifierTestAccess {
    static func summary(of der: [UInt8]) -> DeviceCertificateSummary {
        // A response that fails on the TLS certificate still carries the summary.
        let response = DeviceAuthResponse(signature: [1], deviceCertificate: der, intermediates: [], senderNonce: [1],
                                          hash: .sha256)
        let result = DeviceAuthVerifier.verify(response: response, nonce: [1], tlsCertificateDER: nil, at: Date(),
                                               trust: .castRoots)
        return result.certificate ?? DeviceCertificateSummary(commonName: nil, organization: nil, sha256: "")
    }
}
