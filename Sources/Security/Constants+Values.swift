// The values of attributes with a fixed set of them, with Apple's names and
// string values: protection classes, internet protocols and authentication
// types, key classes and types, tokens, and the keys of SecKeyCreateRandomKey,
// SecPKCS12Import and their results.

// MARK: - Protection classes

/// Readable while the keychain is unlocked (the default).
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// Readable from the first unlock on, until `lock --all` (a reboot).
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// Always readable (deprecated, as on Apple's platforms).
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = "dk"
/// While unlocked, in a keychain with a password, never leaving this device.
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
/// While unlocked, never leaving this device.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// From the first unlock on, never leaving this device.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// Always, never leaving this device (deprecated).
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"

// MARK: - Synchronizable

/// In a query: items that may leave this device and items that may not.
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = "syna"

// MARK: - Internet protocols

/// The protocol FTP (`ftp `).
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = "ftp "
/// The protocol FTPAccount (`ftpa`).
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
/// The protocol HTTP (`http`).
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = "http"
/// The protocol IRC (`irc `).
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = "irc "
/// The protocol NNTP (`nntp`).
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = "nntp"
/// The protocol POP3 (`pop3`).
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = "pop3"
/// The protocol SMTP (`smtp`).
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = "smtp"
/// The protocol SOCKS (`sox `).
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = "sox "
/// The protocol IMAP (`imap`).
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = "imap"
/// The protocol LDAP (`ldap`).
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = "ldap"
/// The protocol AppleTalk (`atlk`).
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = "atlk"
/// The protocol AFP (`afp `).
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = "afp "
/// The protocol Telnet (`teln`).
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = "teln"
/// The protocol SSH (`ssh `).
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = "ssh "
/// The protocol FTPS (`ftps`).
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = "ftps"
/// The protocol HTTPS (`htps`).
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = "htps"
/// The protocol HTTPProxy (`htpx`).
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
/// The protocol HTTPSProxy (`htsx`).
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
/// The protocol FTPProxy (`ftpx`).
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
/// The protocol SMB (`smb `).
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = "smb "
/// The protocol RTSP (`rtsp`).
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = "rtsp"
/// The protocol RTSPProxy (`rtsx`).
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
/// The protocol DAAP (`daap`).
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = "daap"
/// The protocol EPPC (`eppc`).
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = "eppc"
/// The protocol IPP (`ipp `).
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = "ipp "
/// The protocol NNTPS (`ntps`).
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = "ntps"
/// The protocol LDAPS (`ldps`).
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = "ldps"
/// The protocol TelnetS (`tels`).
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = "tels"
/// The protocol IMAPS (`imps`).
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = "imps"
/// The protocol IRCS (`ircs`).
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = "ircs"
/// The protocol POP3S (`pops`).
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: - Authentication types

/// NTLM (`ntlm`).
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
/// MSN (`msna`).
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
/// DPA (`dpaa`).
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
/// RPA (`rpaa`).
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
/// HTTP basic (`http`).
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
/// HTTP digest (`httd`).
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
/// An HTML form (`form`).
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
/// The default (`dflt`).
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: - Keys

/// A public key.
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = "0"
/// A private key.
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = "1"
/// A symmetric key: not supported (errSecParam where one would be made).
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = "2"
/// RSA (1024, 2048, 3072 or 4096 bits to generate; 512 to 8192 to import).
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = "42"
/// Elliptic curve on P-256, P-384 or P-521 (the size gives the curve).
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = "73"
/// Elliptic curve on P-256, P-384 or P-521 (the same as kSecAttrKeyTypeEC).
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
/// Ed25519 signatures.
nonisolated(unsafe) public let kSecAttrKeyTypeEd25519: CFString = "105"
/// X25519 key agreement (sealed boxes here).
nonisolated(unsafe) public let kSecAttrKeyTypeX25519: CFString = "106"
/// A P-256 key made inside the TPM that never leaves it (SPEC §21): the
/// keychain keeps only the TPM's wrapped blob. Without a TPM (no
/// /dev/tpmrm0, no LOCKET_TPM) or without locket-tpm: errSecNotAvailable.
nonisolated(unsafe) public let kSecAttrTokenIDSecureEnclave: CFString = "com.apple.setoken"
/// Locket's own: a non-extractable P-256 key in the keychain, where no TPM
/// is (`key generate --token software-enclave`), asked for by name.
nonisolated(unsafe) public let kSecAttrTokenIDSoftwareEnclave: CFString = "org.locket.software-enclave"
/// SecKeyCreateRandomKey: the attributes of the private key (kSecAttrIsPermanent, kSecAttrApplicationTag, kSecAttrLabel, kSecAttrAccessControl).
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = "private"
/// SecKeyCreateRandomKey: the attributes of the public key (kSecAttrIsPermanent stores it too).
nonisolated(unsafe) public let kSecPublicKeyAttrs: CFString = "public"

// MARK: - PKCS#12

/// SecPKCS12Import: the file's password (String).
nonisolated(unsafe) public let kSecImportExportPassphrase: CFString = "passphrase"
/// SecPKCS12Import: accepted; importing is always to memory here.
nonisolated(unsafe) public let kSecImportToMemoryOnly: CFString = "memory"
/// SecPKCS12Import result: the friendly name (String).
nonisolated(unsafe) public let kSecImportItemLabel: CFString = "label"
/// SecPKCS12Import result: the private key's application label (Data).
nonisolated(unsafe) public let kSecImportItemKeyID: CFString = "keyid"
/// SecPKCS12Import result: no SecTrust here; never present.
nonisolated(unsafe) public let kSecImportItemTrust: CFString = "trust"
/// SecPKCS12Import result: the certificates, the identity's first ([SecCertificate]).
nonisolated(unsafe) public let kSecImportItemCertChain: CFString = "chain"
/// SecPKCS12Import result: the identity (SecIdentity).
nonisolated(unsafe) public let kSecImportItemIdentity: CFString = "identity"
