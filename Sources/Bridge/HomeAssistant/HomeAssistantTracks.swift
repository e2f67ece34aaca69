import CastProtocol

/// The languages a device's current media offers, as the options of the Home Assistant selects
/// for subtitles and audio language. A Home Assistant select has a fixed list of options, so the
/// device's discovery config is published again when these change (change-only: only then).
/// Only languages that are plain BCP-47 tags become options (they go into a command template).
struct TrackOptions: Sendable, Hashable {
    /// `off` first, then the languages of the text tracks, each once, in the media's order.
    var subtitles: [String]
    /// The languages of the audio tracks, each once.
    var audio: [String]

    init(_ media: MediaStatus?) {
        let tracks = media?.effectiveMedia?.trackList ?? []
        func languages(_ type: String) -> [String] {
            var seen = Set<String>()
            return tracks.filter { $0.type == type }.compactMap(\.language)
                .filter { CommandParser.isLanguageTag($0) && seen.insert($0.lowercased()).inserted }
        }
        subtitles = ["off"] + languages("TEXT")
        audio = languages("AUDIO")
    }
}

extension HomeAssistantDiscovery {
    /// The subtitle and audio language selects of a device, with the options of its media now.
    static func haTrackEntities(_ options: TrackOptions) -> [HAEntity] {
        [
            HAEntity(platform: "select", object: "subtitles", name: "Subtitles", fields: { t, dev in
                ["state_topic": .string(t.media(dev)),
                 "value_template": .string(TrackTemplate.state(type: "text", options: options.subtitles, none: "'off'")),
                 "command_topic": .string(t.command(dev, .tracks)),
                 "command_template": .string(#"{"subtitles": "{{ value }}"}"#),
                 "options": .array(options.subtitles.map(JSONValue.string)), "icon": .string("mdi:subtitles")]
            }, extraAvailability: { t, dev in
                .object(["topic": .string(t.media(dev)), "value_template": .string(TrackTemplate.available(type: "text"))])
            }),
            HAEntity(platform: "select", object: "audio_language", name: "Audio language", fields: { t, dev in
                ["state_topic": .string(t.media(dev)),
                 "value_template": .string(TrackTemplate.state(type: "audio", options: options.audio, none: "none")),
                 "command_topic": .string(t.command(dev, .tracks)),
                 "command_template": .string(#"{"audio": "{{ value }}"}"#),
                 "options": .array(options.audio.map(JSONValue.string)), "icon": .string("mdi:translate")]
            }, extraAvailability: { t, dev in
                .object(["topic": .string(t.media(dev)), "value_template": .string(TrackTemplate.available(type: "audio"))])
            }),
        ]
    }

    /// Templates of the track selects; like the others, they read absent keys without a warning.
    enum TrackTemplate {
        /// The language of the active track of `type` when it is one of `options` (the options are
        /// in the template, so that a media document that arrives before its config is never an
        /// "invalid option"); else `none` (a Jinja expression).
        static func state(type: String, options: [String], none: String) -> String {
            let list = "[" + options.map { "'\($0)'" }.joined(separator: ", ") + "]"
            return "{% set t = value_json.get('tracks') or [] %}{% set a = value_json.get('active_tracks') or [] %}"
                + "{% set l = t | selectattr('type', 'equalto', '\(type)') | selectattr('id', 'in', a) | map(attribute='language') | select('string') | list %}"
                + "{% set v = l[0] if l else \(none) %}{{ v if v in \(list) else none }}"
        }

        /// `online` while the media has a track of `type` with a language.
        static func available(type: String) -> String {
            "{% set t = value_json.get('tracks') or [] %}"
                + "{{ 'online' if t | selectattr('type', 'equalto', '\(type)') | map(attribute='language') | select('string') | list else 'offline' }}"
        }
    }
}
