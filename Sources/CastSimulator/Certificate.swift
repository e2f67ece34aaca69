import Crypto
import Foundation
import NIOSSL
import X509

/// A self-signed TLS identity generated at startup, like a real device's (P-256 key, valid
/// from one hour ago for two days: within the 4-day lifetime Chrome accepts).
struct SelfSignedIdentity {
    let certificate: NIOSSLCertificate
    let privateKey: NIOSSLPrivateKey
    /// The certificate's DER (what a device-auth signature covers).
    let certificateDER: [UInt8]

    static func generate(commonName: String) throws -> SelfSignedIdentity {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName(commonName)
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(2 * 86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                KeyUsage(digitalSignature: true)
                try ExtendedKeyUsage([.serverAuth])
            },
            issuerPrivateKey: .init(key)
        )
        let pem = try certificate.serializeAsPEM().pemString
        return SelfSignedIdentity(
            certificate: try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem),
            privateKey: try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem),
            certificateDER: try certificate.serializeAsPEM().derBytes
        )
    }

    func serverContext() throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate)], privateKey: .privateKey(privateKey))
        tls.minimumTLSVersion = .tlsv12
        return try NIOSSLContext(configuration: tls)
    }
}
