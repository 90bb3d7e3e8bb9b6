/// The protocol between `locket` and its TPM helper, `locket-tpm` (SPEC §21):
/// the same frames as `Wire` (a 4-byte length, a message-type byte, big-endian
/// fields), its own magic, version and messages. One request, one reply, in
/// order; the helper keeps nothing of a request once it has replied but the
/// open TPM, its storage key and its session. Frames are small: a side
/// refuses one over `maximumFrame` before reading it.
public enum TPMWire {
    /// The protocol version both sides must speak.
    public static let version: UInt16 = 1
    /// The handshake's magic: not `Wire.magic`, so neither helper is mistaken for the other.
    public static let magic: [UInt8] = Array("LKTP".utf8)
    /// The largest frame either side sends or accepts.
    public static let maximumFrame = 16 * 1024
    /// The largest marshalled TPM2B_PUBLIC or TPM2B_PRIVATE a request may carry.
    public static let maximumBlob = 4096
    /// The largest authorization value (the SHA-256 digest size: the objects' name algorithm).
    public static let maximumAuthorization = 32
    /// The largest sealed secret (MAX_SYM_DATA of the PC Client profile).
    public static let maximumSealed = 128
    /// The longest TCTI configuration.
    public static let maximumTCTI = 512
    /// A P-256 coordinate, scalar or SHA-256 digest.
    public static let p256Bytes = 32
    /// The PCRs a policy can name: bits 0-23 of a mask (the SHA-256 bank).
    public static let pcrMaskLimit: UInt32 = 1 << 24

    /// What each frame body starts with. `auth` below is `u8 present, [bytes value]`.
    public enum Kind: UInt8, Sendable {
        // locket -> helper
        /// magic, u16 version
        case hello = 0x01
        /// nothing: flush, close the TPM, exit 0
        case close = 0x04
        /// string TCTI configuration ("device:/dev/tpmrm0", "swtpm:host=...,port=...")
        case open = 0x10
        /// nothing
        case probe = 0x11
        /// auth
        case createKey = 0x12
        /// bytes public, bytes private, auth, bytes digest (32)
        case sign = 0x13
        /// bytes public, bytes private, auth, bytes x (32), bytes y (32)
        case ecdh = 0x14
        /// bytes secret (1-128), auth, u32 PCR mask
        case seal = 0x15
        /// bytes public, bytes private, auth, u32 PCR mask
        case unseal = 0x16
        /// nothing
        case lockout = 0x17
        // helper -> locket
        /// magic, u16 version
        case helloReply = 0x81
        /// nothing: the TPM answered
        case opened = 0x90
        /// u32 family, u32 revision, u32 year, u32 day, u32 manufacturer, 4 x u32 vendor, 2 x u32 firmware, u8 P-256
        case info = 0x91
        /// bytes public, bytes private (a new key or sealed object)
        case object = 0x92
        /// bytes r, bytes s (each at most 32)
        case signature = 0x93
        /// bytes secret (a shared x coordinate, an unsealed secret)
        case secret = 0x94
        /// u32 counter, u32 max tries, u32 interval, u32 recovery, u8 in lockout
        case lockoutStatus = 0x96
        /// u8 Failure, u8 stage, u32 TPM response code, string message
        case error = 0x9f
    }

    /// What an error frame says went wrong; the client maps each to an OSStatus.
    public enum Failure: UInt8, Sendable {
        /// No TPM could be opened with the TCTI (no device, refused, no permission).
        case unavailable = 1
        /// The blob does not load under this TPM's storage key: another TPM, or this one cleared.
        case otherTPM = 2
        /// A wrong authorization value; the TPM counted it (if the object is DA-protected).
        case authorization = 3
        /// The TPM is in dictionary-attack lockout.
        case lockout = 4
        /// A policy was not satisfied (the PCRs changed).
        case policy = 5
        /// The TPM stopped answering during the request.
        case lost = 6
        /// The request's fields are not what the helper accepts (a malformed blob, a bad size).
        case badRequest = 7
        /// The TPM refused for another reason (the response code says which).
        case tpm = 8
        /// The frame could not be read: the helper exits after this reply.
        case protocolError = 9
        /// The TPM lacks room (objects, sessions) or the feature (P-256).
        case resources = 10
    }
}
