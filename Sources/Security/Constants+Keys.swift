// The keys and values of the SecItem dictionaries, with Apple's names and
// the string values Apple's own constants hold (so a dictionary printed,
// logged or compared by value reads the same). What each one does here is in
// docs/SECURITY-MODULE.md: every one that SPEC sections 3-14 give a meaning
// works as on Apple's platforms; the rest are refused with errSecParam where
// Apple would act on them, and accepted where Apple ignores them.

// MARK: - Item classes

/// The key of an item's class; its value is one of the kSecClass... values.
nonisolated(unsafe) public let kSecClass: CFString = "class"
/// A generic password (unique by access group, service and account).
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
/// An internet password (unique by access group, account, security domain, server, protocol, authentication type, port and path).
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = "inet"
/// A certificate (unique by access group, certificate type, issuer and serial number).
nonisolated(unsafe) public let kSecClassCertificate: CFString = "cert"
/// A key (private or public; unique by its key attributes and access group).
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
/// An identity: a certificate and the private key whose application label is its public key hash (never stored as such).
nonisolated(unsafe) public let kSecClassIdentity: CFString = "idnt"

// MARK: - Attributes

/// When the item's secret is available: one of the kSecAttrAccessible... values (add only).
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
/// A SecAccessControl: the protection class and the proof each use needs (add only; not with kSecAttrAccessible).
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
/// The access group (String): one of the caller's entitlements; add uses the first when none is given.
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"
/// Here: whether the item may leave this device (backups, exports); true refuses the ThisDeviceOnly classes. There is no iCloud.
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = "sync"
/// When the item was added (Date, read only).
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = "cdat"
/// When the item last changed (Date, read only).
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = "mdat"
/// A description of the kind of item (String).
nonisolated(unsafe) public let kSecAttrDescription: CFString = "desc"
/// A comment (String).
nonisolated(unsafe) public let kSecAttrComment: CFString = "icmt"
/// The creator, a four-character code (NSNumber, as FourCharCode).
nonisolated(unsafe) public let kSecAttrCreator: CFString = "crtr"
/// The type, a four-character code (NSNumber, as FourCharCode).
nonisolated(unsafe) public let kSecAttrType: CFString = "type"
/// The label (String); defaults to the service or server of a password.
nonisolated(unsafe) public let kSecAttrLabel: CFString = "labl"
/// Not kept by locket: errSecParam.
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = "invi"
/// Not kept by locket: errSecParam.
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = "nega"
/// The account (String).
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
/// The service of a generic password (String).
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
/// Application bytes of a generic password (Data).
nonisolated(unsafe) public let kSecAttrGeneric: CFString = "gena"
/// The security domain of an internet password (String).
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = "sdmn"
/// The server of an internet password (String).
nonisolated(unsafe) public let kSecAttrServer: CFString = "srvr"
/// The protocol of an internet password: one of the kSecAttrProtocol... values.
nonisolated(unsafe) public let kSecAttrProtocol: CFString = "ptcl"
/// The authentication type of an internet password: one of the kSecAttrAuthenticationType... values.
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = "atyp"
/// The port of an internet password (Int, 0-65535).
nonisolated(unsafe) public let kSecAttrPort: CFString = "port"
/// The path of an internet password (String).
nonisolated(unsafe) public let kSecAttrPath: CFString = "path"
/// A certificate's subject, DER (Data, read only).
nonisolated(unsafe) public let kSecAttrSubject: CFString = "subj"
/// A certificate's issuer, DER (Data, read only).
nonisolated(unsafe) public let kSecAttrIssuer: CFString = "issr"
/// A certificate's serial number (Data, read only).
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = "slnr"
/// A certificate's subject key identifier (Data, read only).
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = "skid"
/// The SHA-1 of a certificate's public key (Data, read only): equal to its private key's application label.
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = "pkhh"
/// A certificate's type (Int, read only).
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = "ctyp"
/// A certificate's encoding (Int, read only).
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = "cenc"
/// A key's class: kSecAttrKeyClassPublic or kSecAttrKeyClassPrivate.
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = "kcls"
/// A key's application label: the SHA-1 of its public key (Data, read only).
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = "klbl"
/// Whether SecKeyCreateRandomKey stores the key in the keychain (Bool).
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = "perm"
/// Accepted and ignored, as on iOS.
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = "sens"
/// Whether a private key's value may leave the keychain (Bool, add only).
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = "extr"
/// A key's application tag, the reverse-DNS name it is found by (Data).
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = "atag"
/// A key's type: one of the kSecAttrKeyType... values.
nonisolated(unsafe) public let kSecAttrKeyType: CFString = "type"
/// A key's size in bits (Int).
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = "bsiz"
/// A key's effective size in bits (Int, read only).
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = "esiz"
/// Whether the key encrypts (Bool, derived from the key).
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = "encr"
/// Whether the key decrypts (Bool, derived from the key).
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = "decr"
/// Whether the key derives (Bool, derived from the key).
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = "drve"
/// Whether the key signs (Bool, derived from the key).
nonisolated(unsafe) public let kSecAttrCanSign: CFString = "sign"
/// Whether the key verifies (Bool, derived from the key).
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = "vrfy"
/// Whether the key wraps (Bool, derived from the key).
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = "wrap"
/// Whether the key unwraps (Bool, derived from the key).
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = "unwp"
/// Where a key lives: kSecAttrTokenIDSecureEnclave makes (and finds) keys that never leave the keychain.
nonisolated(unsafe) public let kSecAttrTokenID: CFString = "tkid"
/// The persistent reference among an item's attributes, and as a query term (as kSecValuePersistentRef).
nonisolated(unsafe) public let kSecAttrPersistentReference: CFString = "persistref"

// MARK: - Values

/// The item's secret (Data): a password, or a key or certificate in Apple's external representation.
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
/// The item as an object: a SecKey, SecCertificate or SecIdentity.
nonisolated(unsafe) public let kSecValueRef: CFString = "v_Ref"
/// The item's persistent reference (Data): the 32 hexadecimal digits `locket --ref` takes, as UTF-8.
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = "v_PersistentRef"

// MARK: - Return types

/// Return the secret (Bool).
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
/// Return the attributes, as a dictionary (Bool).
nonisolated(unsafe) public let kSecReturnAttributes: CFString = "r_Attributes"
/// Return the item as a SecKey, SecCertificate or SecIdentity (Bool).
nonisolated(unsafe) public let kSecReturnRef: CFString = "r_Ref"
/// Return the persistent reference (Bool).
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = "r_PersistentRef"

// MARK: - Search

/// How many items to return: kSecMatchLimitOne (SecItemCopyMatching's default), kSecMatchLimitAll, or a number.
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
/// At most one item.
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// Every matching item (an array).
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"
/// Matching is byte for byte here: false is accepted, true is errSecParam.
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
/// Certificate matching by policy: errSecParam.
nonisolated(unsafe) public let kSecMatchPolicy: CFString = "m_Policy"
/// Matching within a list of items: errSecParam.
nonisolated(unsafe) public let kSecMatchItemList: CFString = "m_ItemList"
/// macOS keychain search lists: errSecParam.
nonisolated(unsafe) public let kSecMatchSearchList: CFString = "m_SearchList"
/// Certificate matching by issuers: errSecParam.
nonisolated(unsafe) public let kSecMatchIssuers: CFString = "m_Issuers"
/// Certificate matching by e-mail address: errSecParam.
nonisolated(unsafe) public let kSecMatchEmailAddressIfPresent: CFString = "m_EmailAddressIfPresent"
/// Certificate matching by subject: errSecParam.
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
/// Certificate matching by trust: errSecParam.
nonisolated(unsafe) public let kSecMatchTrustedOnly: CFString = "m_TrustedOnly"
/// Certificate matching by validity: errSecParam.
nonisolated(unsafe) public let kSecMatchValidOnDate: CFString = "m_ValidOnDate"

// MARK: - Use

/// Why the keychain password is asked for, shown above the prompt at the terminal (String).
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// Whether a proof may be asked for: kSecUseAuthenticationUIAllow (default), ...Fail or ...Skip.
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
/// Ask at the terminal when an item's access control needs a proof.
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
/// Never ask: errSecInteractionNotAllowed where a proof is needed.
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
/// Never ask: leave out the items that need a proof.
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"
/// An LAContext (module LocalAuthentication): its application password credential, its interactionNotAllowed and localizedReason.
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// true: as kSecUseAuthenticationUIFail (Apple's older spelling).
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"
/// Accepted: every locket keychain has the data protection keychain's semantics.
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"
/// Operating on a list of items: errSecParam.
nonisolated(unsafe) public let kSecUseItemList: CFString = "u_ItemList"
