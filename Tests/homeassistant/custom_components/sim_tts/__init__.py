"""A text-to-speech engine for tests only: `tts: [{platform: sim_tts}]` gives `tts.sim_tts_say`,
which plays through `media_player.play_media` with `announce: true` like `tts.speak`."""
