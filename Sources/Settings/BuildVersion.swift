/// The version this binary reports (`cast2mqtt --version`, `bridge/info`, Home Assistant's
/// `sw_version`). A plain `swift build` uses the value below; `scripts/package binary` builds a
/// staged copy of the tree in which this file holds `git describe --tags --always --dirty`.
public enum BuildVersion {
    public static let string = "0.1.0"
}
