import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket otp [ATTRIBUTES] [--ref REF] [-n] [--prompt TEXT] [--application-password-stdin]`
    /// The seed is a secret: an item with access control asks for its proof as `find -w` does.
    static func otp(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let query = try AttributeOptions.query(invocation)
        let keychain = try context.openKeychain()
        let result = try AccessPrompt.run(keychain, invocation, context) { try keychain.oneTimeCode(query, now: context.io.environment.time.seconds()) }
        if context.json {
            var w = JSONWriter()
            w.beginObject()
            w.key("code"); w.string(result.code)
            w.key("type"); w.string(result.kind.rawValue)
            w.key("algorithm"); w.string(result.algorithm.rawValue)
            w.key("digits"); w.int(Int64(result.digits))
            if let period = result.period { w.key("period"); w.uint(period) }
            if let left = result.secondsLeft { w.key("secondsLeft"); w.uint(left) }
            if let counter = result.counter { w.key("counter"); w.uint(counter) }
            w.endObject()
            context.out.bytes(w.bytes)
            context.out.text("\n")
            return 0
        }
        context.out.text(result.code)
        if !invocation.has("no-newline") { context.out.text("\n") }
        return 0
    }
}
