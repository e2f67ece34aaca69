#!/usr/bin/env python3
"""Writes the committed seed corpora (Fuzz/Corpus/<target>/seed-*) from real messages: the payload
test fixtures (Tests/CastProtocolTests/PayloadTests.swift), what the simulator sends and records,
the MQTT examples of docs/topics.md, example-config.yaml and the TXT keys of real devices and of
cast-sim. Deterministic: run it again after changing a fixture or an example, then commit.

Usage: Fuzz/Corpus/make-seeds.py   (from anywhere; only seed-* files are rewritten, inputs that
a fuzzer found and that were added by hand keep their own names)
"""
import hashlib
import os
import re
import struct

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
corpus = os.path.join(root, "Fuzz", "Corpus")


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    directory = os.path.join(corpus, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "seed-" + name), "wb") as f:
        f.write(data)


def clear(target):
    directory = os.path.join(corpus, target)
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.startswith("seed-"):
            os.remove(os.path.join(directory, name))


def slug(text, limit=40):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit] or "x"


# ---------------------------------------------------------------------------------------------
# Payloads: the JSON fixtures of the payload tests, plus what the simulator sends.

def fixtures():
    text = open(os.path.join(root, "Tests", "CastProtocolTests", "PayloadTests.swift")).read()
    out = re.findall(r'#"(\{.*?\})"#', text)
    for block in re.findall(r'"""\n(.*?)\n\s*"""', text, re.S):
        out.append("".join(line.strip() for line in block.splitlines()))
    return out


SIMULATED = [
    # RECEIVER_STATUS of an idle device and of one casting with the Default Media Receiver (cast-sim).
    '{"type":"RECEIVER_STATUS","requestId":1,"status":{"applications":[],"isActiveInput":true,'
    '"isStandBy":false,"volume":{"controlType":"attenuation","level":0.5,"muted":false,"stepInterval":0.05}}}',
    '{"type":"RECEIVER_STATUS","requestId":0,"status":{"applications":[{"appId":"CC1AD845","appType":"WEB",'
    '"displayName":"Default Media Receiver","isIdleScreen":false,"namespaces":[{"name":"urn:x-cast:com.google.cast.media"},'
    '{"name":"urn:x-cast:com.example.app"}],"sessionId":"session-1","statusText":"Casting","transportId":"transport-1"}],'
    '"volume":{"controlType":"attenuation","level":0.4,"muted":false,"stepInterval":0.05}}}',
    '{"type":"MEDIA_STATUS","requestId":2,"status":[{"mediaSessionId":1,"playerState":"BUFFERING","currentTime":0,'
    '"playbackRate":1,"supportedMediaCommands":274447,"media":{"contentId":"http://192.0.2.5/song.mp3",'
    '"streamType":"BUFFERED","contentType":"audio/mpeg","duration":212.5}}]}',
    '{"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playerState":"IDLE","idleReason":"FINISHED"}]}',
    '{"type":"LOAD_FAILED","requestId":3}',
    '{"type":"INVALID_REQUEST","requestId":4,"reason":"INVALID_MEDIA_SESSION_ID"}',
    '{"type":"PONG"}',
    '{"type":"CLOSE","reasonCode":5}',
    '{"type":"DEVICE_ADDED","device":{"deviceId":"abc","name":"Kitchen","capabilities":4,"volume":{"level":0.3,"muted":false}}}',
    '{"type":"GET_APP_AVAILABILITY","requestId":5,"availability":{"CC1AD845":"APP_AVAILABLE"}}',
    '{"type":"PONG_FROM_APP","requestId":1}',
    # The queue listed by ids, its items asked, a change, and media with tracks (cast-sim, issue #18).
    '{"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playerState":"PLAYING","currentItemId":2,'
    '"items":[{"itemId":1},{"itemId":2},{"itemId":3}],"repeatMode":"REPEAT_OFF","media":{"contentId":"http://x/2.mp3"}}]}',
    '{"type":"QUEUE_ITEM_IDS","requestId":7,"itemIds":[1,2,3,4]}',
    '{"type":"QUEUE_ITEMS","requestId":8,"items":[{"itemId":1,"autoplay":true,"media":{"contentId":"http://x/1.mp3",'
    '"metadata":{"metadataType":3,"title":"One"}}},{"itemId":3,"preloadTime":5,"media":{"contentId":"http://x/3.mp3"}}]}',
    '{"type":"QUEUE_CHANGE","requestId":0,"changeType":"INSERT","itemIds":[4],"insertBefore":2,"sequenceNumber":1}',
    '{"type":"QUEUE_CHANGE","requestId":0,"changeType":"UPDATE","itemIds":[3,1,2],"reorderItemIds":[3]}',
    '{"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playerState":"PLAYING","activeTrackIds":[1,3],'
    '"media":{"contentId":"http://x/m.mp4","tracks":[{"trackId":1,"type":"TEXT","subtype":"SUBTITLES","language":"en",'
    '"trackContentId":"http://x/en.vtt"},{"trackId":3,"type":"AUDIO","language":"de"}],"textTrackStyle":{"fontScale":1.2}}}]}',
]

# What a device received (cast-sim's recordings of a client session): sender -> device.
RECORDED = [
    ("sender-0", "receiver-0", "urn:x-cast:com.google.cast.tp.connection",
     '{"type":"CONNECT","origin":{},"userAgent":"cast2mqtt","senderInfo":{"sdkType":2,"version":"1.0","platform":6,'
     '"connectionType":1}}'),
    ("sender-0", "receiver-0", "urn:x-cast:com.google.cast.tp.heartbeat", '{"type":"PING"}'),
    ("sender-0", "receiver-0", "urn:x-cast:com.google.cast.receiver", '{"type":"GET_STATUS","requestId":1}'),
    ("sender-0", "receiver-0", "urn:x-cast:com.google.cast.receiver", '{"type":"LAUNCH","appId":"CC1AD845","requestId":2}'),
    ("sender-0", "transport-1", "urn:x-cast:com.google.cast.media",
     '{"type":"LOAD","requestId":3,"autoplay":true,"media":{"contentId":"http://192.0.2.5/song.mp3",'
     '"streamType":"BUFFERED","contentType":"audio/mpeg"}}'),
]


def selector(payload):
    """The fuzz-payload envelope byte for a fixture: namespace by type, app transport for media."""
    kinds = [
        (("CONNECT", '"CLOSE"'), 0), (("PING", "PONG\""), 1),
        (("MULTIZONE", "DEVICE_"), 4),
        (("MEDIA_STATUS", "LOAD_FAILED", "SESSION_STATE", "QUEUE_", "mediaSessionId", "metadataType", "INVALID_MEDIA"), 3 | 0x10),
        (("RECEIVER_STATUS", "LAUNCH", "INVALID_REQUEST", "GET_APP_AVAILABILITY", "STOP", "SET_VOLUME", "requestId"), 2),
    ]
    for needles, value in kinds:
        if any(n in payload for n in needles):
            return value
    return 5 | 0x10


# ---------------------------------------------------------------------------------------------
# Frames: protobuf CastMessage (cast_channel.proto), 4-byte big-endian length.

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire, value):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(value)
    return key + varint(len(value)) + value


def cast_message(source, destination, namespace, payload, binary=False):
    body = field(1, 0, 0) + field(2, 2, source.encode()) + field(3, 2, destination.encode())
    body += field(4, 2, namespace.encode()) + field(5, 0, 1 if binary else 0)
    body += field(7, 2, payload) if binary else field(6, 2, payload.encode())
    return body


def frame(body):
    return struct.pack(">I", len(body)) + body


# ---------------------------------------------------------------------------------------------

def payload_seeds():
    clear("payload")
    clear("frame")
    messages = fixtures() + SIMULATED
    for payload in messages:
        name = slug(payload) + "-" + hashlib.sha1(payload.encode()).hexdigest()[:6]
        sel = selector(payload)
        write("payload", name, bytes([sel]) + payload.encode())
        namespaces = ["urn:x-cast:com.google.cast.tp.connection", "urn:x-cast:com.google.cast.tp.heartbeat",
                      "urn:x-cast:com.google.cast.receiver", "urn:x-cast:com.google.cast.media",
                      "urn:x-cast:com.google.cast.multizone", "urn:x-cast:com.example.app"]
        source = "transport-1" if sel & 0x10 else "receiver-0"
        body = cast_message(source, "sender-0", namespaces[sel & 0x07], payload)
        write("frame", name, bytes([255]) + frame(body))
    # A session as the client sees it: receiver status with an app, then media status, then a
    # partial update, an app message and the app's CLOSE.
    session = [bytes([2]) + SIMULATED[1].encode(), bytes([3 | 0x10]) + SIMULATED[2].encode(),
               bytes([3 | 0x10]) + b'{"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playerState":"PLAYING","currentTime":12.5}]}',
               bytes([5 | 0x10]) + b'{"type":"PONG","requestId":3}',
               bytes([0 | 0x10]) + b'{"type":"CLOSE"}']
    write("payload", "session", b"\x00".join(session))
    write("payload", "binary-app-message", bytes([5 | 0x08 | 0x10]) + bytes(range(0, 256, 7)))
    # Frames: what cast-sim recorded from a client, a coalesced stream of them (read in small
    # chunks), and a binary payload.
    stream = b""
    for source, destination, namespace, payload in RECORDED:
        body = cast_message(source, destination, namespace, payload)
        stream += frame(body)
        write("frame", "recorded-" + slug(payload, 24), bytes([255]) + frame(body))
    write("frame", "recorded-stream-chunks-of-7", bytes([6]) + stream)
    write("frame", "binary", bytes([255]) + frame(cast_message("transport-1", "sender-0", "urn:x-cast:com.example.app",
                                                              bytes(range(32)), binary=True)))


def command_seeds():
    clear("command")
    text = open(os.path.join(root, "docs", "topics.md")).read()
    # mosquitto_pub -t TOPIC (-n | -m 'PAYLOAD', possibly over several lines)
    pattern = re.compile(r"mosquitto_pub -t '?([^ ']+)'?(?: -n| -m (?:'(.*?)'|(\S+)))", re.S)
    seen = set()
    for topic, quoted, bare in pattern.findall(text):
        payload = quoted if quoted else bare
        payload = re.sub(r"\n\s*", " ", payload)
        data = topic.encode() + b"\x00" + payload.encode()
        if data in seen:
            continue
        seen.add(data)
        write("command", slug(topic.split("/", 1)[-1] + " " + payload, 48) + "-" + hashlib.sha1(data).hexdigest()[:6], data)
    write("command", "ha-status-online", b"homeassistant/status\x00online")
    write("command", "kitchen-volume-json", b'cast2mqtt/kitchen_speaker/command/volume\x00{"id":"v1","level":0.25}')
    write("command", "ad-break-skip-ad",
          b'{"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playerState":"PLAYING","currentTime":3,'
          b'"breakStatus":{"breakId":"b1","breakClipId":"c1","currentBreakTime":2,"currentBreakClipTime":2,"whenSkippable":5}}]}'
          b"\x00cast2mqtt/living_room_tv/command/skip_ad\x00")
    write("command", "live-seek",
          b'{"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playerState":"PLAYING","currentTime":100,'
          b'"media":{"contentId":"http://192.0.2.5/live","streamType":"LIVE"},"liveSeekableRange":{"start":10,"end":200}}]}'
          b'\x00cast2mqtt/living_room_tv/command/seek\x00{"relative": -30}')
    write("command", "send-binary", b"cast2mqtt/living_room_tv/command/send/urn:x-cast:com.example.app\x00\xff\x00\x01")
    # A movie with tracks and a queue on the TV, then the commands of issue #18 against it.
    movie = (b'{"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playerState":"PLAYING","currentItemId":2,'
             b'"supportedMediaCommands":278479,"activeTrackIds":[3],"items":[{"itemId":1},{"itemId":2},{"itemId":3}],'
             b'"media":{"contentId":"http://192.0.2.5/m.mp4","tracks":[{"trackId":1,"type":"TEXT","language":"en"},'
             b'{"trackId":2,"type":"TEXT","language":"de"},{"trackId":3,"type":"AUDIO","language":"en"},'
             b'{"trackId":4,"type":"AUDIO","language":"fr"}]}}]}')
    for name, command, payload in [
            ("tracks-subtitles", b"tracks", b"de"), ("tracks-audio", b"tracks", b'{"audio": "fr"}'),
            ("tracks-active", b"tracks", b'{"active": [2, 4]}'),
            ("tracks-style", b"tracks", b'{"subtitles": "off", "text_style": {"font_scale": 2, "edge_color": "#00000080"}}'),
            ("queue-insert-next", b"queue", b'{"insert": [{"url": "http://192.0.2.5/n.mp3", "autoplay": false}], "before": "next"}'),
            ("queue-remove", b"queue", b'{"remove": [3]}'), ("queue-reorder", b"queue", b'{"reorder": [3, 1], "before": 2}'),
            ("queue-jump", b"queue", b'{"jump": 1}'), ("queue-repeat", b"queue", b'{"repeat": "all_and_shuffle"}')]:
        write("command", "movie-" + name, movie + b"\x00cast2mqtt/living_room_tv/command/" + command + b"\x00" + payload)
    write("command", "log-level-device", b'cast2mqtt/bridge/request/log_level\x00{"device": "kitchen_speaker", "level": "trace"}')


def config_seeds():
    clear("config")
    write("config", "config-example", open(os.path.join(root, "example-config.yaml")).read())
    write("config", "minimal", "mqtt:\n  url: mqtt://127.0.0.1:1883\n")
    write("config", "static-devices",
          "mqtt:\n  url: mqtts://user@broker.invalid:8883\n  base_topic: home/cast\n  protocol: \"3.1.1\"\n"
          "cast:\n  reconnect: {initial: 0.25, max: 30}\n  allowed_namespaces: [\"urn:x-cast:com.example.*\"]\n"
          "discovery:\n  mdns: false\n  devices:\n"
          "    - host: 192.0.2.10\n      name: Living Room TV\n      topic: tv\n"
          "    - {host: 192.0.2.11, port: 8009, name: \"Kitchen\", id: fedcba9876543210fedcba9876543210, topic: null}\n"
          "  include: [tv, Kitchen]\n")
    write("config", "env-overrides",
          "mqtt:\n  url: mqtt://broker.invalid\n\x00CAST2MQTT_MQTT_URL=mqtt://127.0.0.1:1884\n"
          "CAST2MQTT_MQTT_QOS=2\nCAST2MQTT_HOMEASSISTANT_ENABLED=false\nCAST2MQTT_DISCOVERY_INCLUDE=tv,Kitchen\n"
          "CAST2MQTT_CAST_RECONNECT_INITIAL=0.1\n")
    write("config", "empty", "")


def txt(pairs):
    out = b""
    for key, value in pairs:
        entry = key.encode() + b"=" + value.encode() if value is not None else key.encode()
        out += bytes([len(entry)]) + entry
    return out


def txt_seeds():
    clear("txt")
    uuid = "0123456789abcdef0123456789abcdef"
    chromecast = [("id", uuid), ("cd", "C1B6E2B4F0A1D2C3"), ("rm", ""), ("ve", "05"), ("md", "Chromecast Ultra"),
                  ("ic", "/setup/icon.png"), ("fn", "Living Room TV"), ("ca", "4101"), ("st", "0"),
                  ("bs", "FA8FCA7A1B2C"), ("nf", "1"), ("rs", "")]
    write("txt", "chromecast", txt(chromecast) + b"\x00Chromecast-Ultra-0123456789abcdef0123456789abcdef")
    write("txt", "google-home", txt([("id", "fedcba98-7654-3210-fedc-ba9876543210"), ("md", "Google Home"),
                                     ("fn", "Kitchen Speaker"), ("ca", "2052"), ("st", "1"), ("rs", "Spotify")]))
    write("txt", "group", txt([("id", "{11112222-3333-4444-5555-666677778888}"), ("md", "Google Cast Group"),
                               ("fn", "Whole House"), ("ca", "2084")]))
    write("txt", "escaped-name", txt([("id", uuid), ("fn", "Caf\\195\\169 \\\\ Lounge"), ("md", "Nest Audio")]))
    write("txt", "cast-sim", txt([("id", uuid), ("cd", "00"), ("rm", "0123456789ABCDEF"), ("ve", "05"), ("md", "cast-sim"),
                                  ("ic", "/setup/icon.png"), ("fn", "Sim TV"), ("ca", "4101"), ("st", "0"),
                                  ("bs", "0123456789AB"), ("nf", "1"), ("rs", "")]))
    write("txt", "no-friendly-name", txt([("ID", uuid.upper()), ("md", "Chromecast"), ("bare", None)]) + b"\x00svc")



def eureka_seeds():
    clear("eureka")
    udn = "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
    # What cast-sim answers for a member that leads one group and is in a dynamic one.
    write("eureka", "cast-sim-member",
          '{"device_info":{"capabilities":{"display_supported":false,"multizone_supported":true},'
          '"manufacturer":"Google Inc.","model_name":"Google Home","name":"Kitchen","ssdp_udn":"' + udn + '"},'
          '"multizone":{"dynamic_groups":[{"elected_leader":"127.0.0.3:10001","name":"Temporary",'
          '"uuid":"11112222-3333-4444-5555-666677778888"}],"groups":[{"cast_port":42123,"elected_leader":"self",'
          '"name":"Downstairs","uuid":"99998888-7777-6666-5555-444433332222"}]},"name":"Kitchen"}')
    # The fields pychromecast and go-chromecast read, as third parties show real devices answer.
    write("eureka", "no-params",
          '{"name":"Living Room TV","ip_address":"192.0.2.10","ssdp_udn":"' + udn + '","uptime":12345.6,'
          '"locale":"en-US","timezone":"Europe/Berlin"}')
    write("eureka", "leaders",
          '{"multizone":{"groups":[{"elected_leader":"[fe80::1%eth0]:10001","uuid":"' + udn.upper() + '"},'
          '{"elected_leader":"fe80::2","cast_port":"32123"},{"elected_leader":"host.local:99999","cast_port":0},'
          '{"elected_leader":7},"not a group"],"dynamic_groups":{}}}')
    write("eureka", "wrong-types",
          '{"name":5,"device_info":[],"multizone":{"groups":null},"ssdp_udn":"not-a-uuid"}')
    write("eureka", "not-an-object", '[{"name":"x"}]')


payload_seeds()
command_seeds()
config_seeds()
txt_seeds()
eureka_seeds()
for target in sorted(os.listdir(corpus)):
    path = os.path.join(corpus, target)
    if os.path.isdir(path):
        print(f"{target}: {len(os.listdir(path))} inputs")
