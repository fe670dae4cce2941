import Foundation

/// The command line's words as the system hands them over: bytes.
///
/// On Linux a file name is bytes, and some are not UTF-8 (`caf\xE9.jpg`, in Latin-1).
/// `CommandLine.arguments` repairs such a word to `caf\u{FFFD}.jpg`, which names another file, or
/// none. The commands still parse the repaired words; a file operand looks its bytes up here, by the
/// word it was repaired to.
enum RawArguments {
    /// The bytes of the words after the program name that are not UTF-8, by the word each was
    /// repaired to; `nil` where that word stands for more than one: two words with different bytes
    /// repaired to it, or one repaired to a word also given as such (a name with a real U+FFFD in it).
    private static let notUTF8: [String: [UInt8]?] = {
        var found: [String: [UInt8]?] = [:]
        var valid: Set<String> = []
        for index in 1..<Int(CommandLine.argc) {
            guard let word = CommandLine.unsafeArgv[index] else { continue }
            let bytes = Array(UnsafeRawBufferPointer(start: word, count: strlen(word)))
            if let text = String(validating: bytes, as: UTF8.self) {
                valid.insert(text)
                continue
            }
            let repaired = String(decoding: bytes, as: UTF8.self)
            if let known = found[repaired], known != bytes {
                found[repaired] = .some(nil)
            } else {
                found[repaired] = bytes
            }
        }
        for repaired in found.keys where valid.contains(repaired) { found[repaired] = .some(nil) }
        return found
    }()

    /// The bytes `argument` was repaired from, or `nil` for a word that was UTF-8 as given.
    ///
    /// - Throws: A usage error when two words with different bytes read the same once repaired: which
    ///   one `argument` is cannot be told.
    static func bytes(of argument: String) throws(UsageError) -> [UInt8]? {
        guard argument.unicodeScalars.contains("\u{FFFD}"), let bytes = notUTF8[argument] else { return nil }
        guard let bytes else {
            throw UsageError(
                "two arguments read \(Console.printable(argument)) once their bytes that are not UTF-8 are"
                    + " replaced: give them as file: URLs, with those bytes percent-encoded (%E9)")
        }
        return bytes
    }
}
