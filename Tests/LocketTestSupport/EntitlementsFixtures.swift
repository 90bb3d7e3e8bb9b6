/// The tests' one set of entitlements fixtures (issue 12): two apps from
/// different teams, and what their entitlements give. The engine's parser
/// tests and the end-to-end tests read the same files.
public enum Apps {
    /// App A: an `.entitlements` file as Xcode writes it (XML header, Apple's
    /// DOCTYPE, tabs, keys locket ignores: strings, arrays, a boolean, an integer) with both
    /// prefix variables, a repeated group and an application group that
    /// repeats a keychain group.
    public static let xcodeA = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>aps-environment</key>
        \t<string>development</string>
        \t<key>com.apple.developer.associated-domains</key>
        \t<array>
        \t\t<string>applinks:example.com</string>
        \t</array>
        \t<key>com.apple.security.app-sandbox</key>
        \t<true/>
        \t<key>com.apple.developer.icloud-container-environment</key>
        \t<integer>1</integer>
        \t<key>com.apple.application-identifier</key>
        \t<string>SKMME9E2Y8.com.example.waffle-varnisher</string>
        \t<key>keychain-access-groups</key>
        \t<array>
        \t\t<string>$(AppIdentifierPrefix)groupA</string>
        \t\t<string>$(TeamIdentifierPrefix)groupB</string>
        \t\t<string>$(AppIdentifierPrefix)groupA</string>
        \t</array>
        \t<key>com.apple.security.application-groups</key>
        \t<array>
        \t\t<string>group.com.example.waffle</string>
        \t\t<string>SKMME9E2Y8.groupB</string>
        \t</array>
        </dict>
        </plist>

        """
    /// A's access-group list: keychain-access-groups, the application
    /// identifier, the application groups; duplicates dropped.
    public static let groupsA = ["SKMME9E2Y8.groupA", "SKMME9E2Y8.groupB",
                          "SKMME9E2Y8.com.example.waffle-varnisher", "group.com.example.waffle"]

    /// App B: JSON, application identifier first in the file, one extra group.
    public static let jsonB = """
        {
          "application-identifier": "Z9Y8X7W6V5.com.example.other",
          "keychain-access-groups": ["$(AppIdentifierPrefix)b-shared"],
          "aps-environment": "production"
        }

        """
    public static let groupsB = ["Z9Y8X7W6V5.b-shared", "Z9Y8X7W6V5.com.example.other"]
}
