import Crypto
import NIOCore

/// The page's files, compiled into the binary (`embedInCode` in Package.swift), each with its
/// `Content-Type` and an `ETag` (a hash of the bytes) so a browser revalidates cheaply.
enum WebAssets {
    struct File: Sendable {
        let buffer: ByteBuffer
        let contentType: String
        let etag: String

        init(_ bytes: [UInt8], _ contentType: String) {
            buffer = ByteBuffer(bytes: bytes)
            self.contentType = contentType
            etag = "\"" + SHA256.hash(data: bytes).prefix(8).map { String(UInt16($0) | 0x100, radix: 16).dropFirst() }.joined() + "\""
        }
    }

    static let javascript = "text/javascript; charset=utf-8"

    static let files: [String: File] = [
        "/": File(PackageResources.index_html, "text/html; charset=utf-8"),
        "/app.css": File(PackageResources.app_css, "text/css; charset=utf-8"),
        "/favicon.svg": File(PackageResources.favicon_svg, "image/svg+xml"),
        "/app.js": File(PackageResources.app_js, javascript),
        "/connection.js": File(PackageResources.connection_js, javascript),
        "/util.js": File(PackageResources.util_js, javascript),
        "/devices.js": File(PackageResources.devices_js, javascript),
        "/device.js": File(PackageResources.device_js, javascript),
        "/bridge.js": File(PackageResources.bridge_js, javascript),
        "/controls.js": File(PackageResources.controls_js, javascript),
        "/login.js": File(PackageResources.login_js, javascript),
    ]

    /// The file for a path; the page's own routes (`/device/...`, `/bridge`) get the page.
    static func file(_ path: String) -> File? {
        if let file = files[path] { return file }
        if path == "/bridge" || path == "/index.html" || path.hasPrefix("/device/") { return files["/"] }
        return nil
    }
}
