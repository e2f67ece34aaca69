import Crypto

/// SHA-256 fingerprints of device certificates, in the usual `AB:CD:…` form.
public enum CertificateFingerprint {
    public static func sha256(_ der: [UInt8]) -> String {
        SHA256.hash(data: der).map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}
