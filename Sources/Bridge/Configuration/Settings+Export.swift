// The configuration model (`BridgeConfiguration`, its sections, `ConfigurationError`) lives in the
// small `Settings` target, which the lower layers (Discovery, MQTT) read too; the bridge's users
// see it through `import Bridge` as before. Parsing stays here (ConfigurationLoader.swift).
@_exported import Settings
