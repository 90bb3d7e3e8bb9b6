/// Names users type for Apple's protocol and authentication-type codes.
public enum FourCharCodes {
    /// kSecAttrProtocol values by scheme name.
    public static let protocols: [String: String] = [
        "ftp": "ftp ", "ftpaccount": "ftpa", "http": "http", "irc": "irc ", "nntp": "nntp", "pop3": "pop3",
        "smtp": "smtp", "socks": "sox ", "imap": "imap", "ldap": "ldap", "appletalk": "atlk", "afp": "afp ",
        "telnet": "teln", "ssh": "ssh ", "ftps": "ftps", "https": "htps", "httpproxy": "htpx",
        "httpsproxy": "htsx", "ftpproxy": "ftpx", "cifs": "cifs", "smb": "smb ", "rtsp": "rtsp",
        "rtspproxy": "rtsx", "daap": "daap", "eppc": "eppc", "ipp": "ipp ", "nntps": "ntps", "ldaps": "ldps",
        "telnets": "tels", "imaps": "imps", "ircs": "ircs", "pop3s": "pops", "svn": "svn ",
    ]

    /// kSecAttrAuthenticationType values by name.
    public static let authenticationTypes: [String: String] = [
        "default": "dflt", "http-basic": "http", "http-digest": "httd", "form": "form", "html-form": "form",
        "ntlm": "ntlm", "msn": "msna", "dpa": "dpaa", "rpa": "rpaa",
    ]
}
