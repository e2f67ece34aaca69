import CastProtocol

/// `tracks`: what to turn on or off, as the command said it (checked against the media's tracks
/// when the command's turn comes, in `CommandPlanner`).
public struct TracksCommand: Sendable, Hashable {
    public enum Subtitles: Sendable, Hashable {
        case off
        /// The first text track in this BCP-47 language (`en` also matches `en-US`).
        case language(String)
    }

    /// Exactly these track ids active (`[]`: none).
    public var active: [Int]?
    public var subtitles: Subtitles?
    /// The first audio track in this language.
    public var audio: String?
    /// A Cast `TextTrackStyle` (camelCase keys), already checked.
    public var textStyle: JSONValue?

    public init(active: [Int]? = nil, subtitles: Subtitles? = nil, audio: String? = nil, textStyle: JSONValue? = nil) {
        self.active = active
        self.subtitles = subtitles
        self.audio = audio
        self.textStyle = textStyle
    }

    /// True when the command changes which tracks are active (not only the style).
    var selectsTracks: Bool { active != nil || subtitles != nil || audio != nil }
}

/// `queue`: one edit of the receiver's queue. Item ids are checked against the queue the device
/// reported when the command's turn comes (`CommandPlanner`).
public enum QueueCommand: Sendable, Hashable {
    public enum Position: Sendable, Hashable {
        /// At the end of the queue.
        case end
        /// Right after the current item.
        case next
        /// Before the item with this id.
        case before(Int)
    }

    case insert([QueueItem], at: Position)
    case remove([Int])
    /// These ids, in this order, before `before` (at the end when nil).
    case reorder([Int], before: Int?)
    case jump(itemId: Int)
    case jumpBy(Int)
    /// `REPEAT_OFF`, `REPEAT_ALL`, `REPEAT_SINGLE`, `REPEAT_ALL_AND_SHUFFLE`.
    case repeatMode(String)
    case shuffle

    /// A jump changes what plays (it ends a running announcement).
    var jumps: Bool {
        switch self {
        case .jump, .jumpBy: return true
        default: return false
        }
    }

    /// Inserting, removing and reordering edit the items themselves: only a queue the bridge can
    /// own (CommandPlanner).
    var editsItems: Bool {
        switch self {
        case .insert, .remove, .reorder: return true
        default: return false
        }
    }
}
