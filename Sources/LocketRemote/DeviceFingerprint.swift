import LocketCore
import LocketSupport

/// A device's fingerprint (SPEC §17 "Devices", docs/REMOTE.md): what an
/// admin compares out of band before approving a device, so that a key the
/// server swapped in is never approved. 10 bytes (80 bits) of BLAKE2b-256
/// over the keychain's identity and the device's two public keys (X25519,
/// to which group keys are sealed; Ed25519, with which it signs), shown as
/// five groups of four hex digits or, to be read aloud, as ten words.
struct DeviceFingerprint: Equatable {
    static let size = 10
    let bytes: [UInt8]

    init(keychainID: [UInt8], encryptionKey: [UInt8], signingKey: [UInt8]) {
        bytes = Array(DeviceSigning.hash("locket.device.fingerprint.v1", [keychainID, encryptionKey, signingKey]).prefix(DeviceFingerprint.size))
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// `3f9a-0c12-77e0-a41b-9c03`.
    var hex: String {
        let digits = Hex.encode(bytes)
        return stride(from: 0, to: digits.count, by: 4).map { start in
            let from = digits.index(digits.startIndex, offsetBy: start)
            return String(digits[from..<digits.index(from, offsetBy: 4)])
        }.joined(separator: "-")
    }

    /// The same bytes as ten words of `DeviceFingerprint.words`.
    var words: String { bytes.map { DeviceFingerprint.words[Int($0)] }.joined(separator: " ") }

    /// Either form, as typed: hex with or without dashes or spaces, any case;
    /// or the ten words separated by spaces or dashes. Nil when it is neither.
    static func parse(_ text: String) -> DeviceFingerprint? {
        let lowered = text.lowercased()
        let compact = lowered.filter { $0 != "-" && $0 != " " && $0 != ":" }
        if compact.count == 2 * size, let bytes = Hex.decode(compact) { return DeviceFingerprint(bytes: bytes) }
        let names = lowered.split { $0 == " " || $0 == "-" || $0 == "," }
        guard names.count == size else { return nil }
        var bytes: [UInt8] = []
        for name in names {
            guard let index = words.firstIndex(of: String(name)) else { return nil }
            bytes.append(UInt8(index))
        }
        return DeviceFingerprint(bytes: bytes)
    }

    /// 256 distinct everyday words, one per byte value.
    static let words: [String] = [
        "acid", "acorn", "actor", "adult", "agent", "alarm", "album", "alert", "alley", "amber", "angle", "ankle", "apple", "apron", "arena", "armor",
        "arrow", "aspen", "atlas", "attic", "audio", "avenue", "badge", "bagel", "baker", "balloon", "bamboo", "banjo", "barn", "basin", "basket", "beach",
        "beacon", "beard", "beaver", "bench", "berry", "bison", "blade", "blanket", "board", "bonnet", "border", "bottle", "bracket", "branch", "brick", "bridge",
        "broom", "bucket", "bugle", "butter", "button", "cabin", "cactus", "camel", "candle", "canoe", "canvas", "canyon", "carbon", "carpet", "carrot", "castle",
        "cedar", "cellar", "cement", "chalk", "cherry", "chess", "cider", "circus", "clamp", "cliff", "clock", "cloud", "clover", "cobalt", "coffee", "comet",
        "copper", "coral", "cotton", "cougar", "crane", "crater", "crayon", "crown", "crystal", "curtain", "daisy", "dancer", "delta", "denim", "desert", "diamond",
        "dinner", "dolphin", "donkey", "dragon", "drawer", "drum", "eagle", "easel", "echo", "elbow", "ember", "engine", "falcon", "feather", "fiddle", "finch",
        "flame", "flannel", "flute", "forest", "fossil", "fox", "galaxy", "garden", "garlic", "geyser", "ginger", "glacier", "glove", "goblet", "granite", "grape",
        "gravel", "guitar", "hammer", "harbor", "harp", "hazel", "helmet", "hermit", "honey", "hornet", "iceberg", "igloo", "indigo", "island", "ivory", "jacket",
        "jaguar", "jasmine", "jelly", "jewel", "jigsaw", "juniper", "kayak", "kennel", "kernel", "kettle", "kitten", "ladder", "lagoon", "lantern", "lava", "lemon",
        "lentil", "lily", "linen", "lizard", "lobster", "locket", "lotus", "magnet", "mango", "maple", "marble", "meadow", "melon", "mirror", "mitten", "mosaic",
        "muffin", "mustard", "napkin", "nectar", "needle", "nickel", "noodle", "nutmeg", "oasis", "ocean", "olive", "onion", "opal", "orbit", "orchid", "otter",
        "oyster", "paddle", "palace", "panda", "papaya", "parrot", "pebble", "pepper", "piano", "pickle", "pillow", "pilot", "pine", "planet", "plum", "pocket",
        "pony", "poppy", "potato", "pumpkin", "puzzle", "quartz", "quill", "rabbit", "radish", "raven", "ribbon", "river", "robin", "rocket", "saddle", "salmon",
        "sandal", "scarf", "shovel", "silver", "sketch", "sparrow", "spider", "sponge", "spruce", "squid", "statue", "summit", "sunset", "swan", "tablet", "teapot",
        "thimble", "thistle", "thunder", "tiger", "timber", "tomato", "tundra", "tulip", "turtle", "velvet", "violet", "walnut", "whistle", "willow", "window", "zebra",
    ]
}
