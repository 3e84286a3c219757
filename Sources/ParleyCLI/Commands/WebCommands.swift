import Foundation
import WebUI

/// `parley web login`: a link that signs a browser in to this data directory's web UI.
struct WebLoginCommand: Command {
    let name = "web login"
    let summary = "print a link that signs a browser in to the web UI (the printed one was lost, or another browser)"
    let usage = ["web login"]
    let options: [OptionSpec] = []
    let details = [
        "The link carries the data directory's login secret (web.secret), the same one `parley run` prints: a browser that "
            + "opened it stays signed in across restarts of the node and of the browser, until `parley web logout --all`. "
            + "Anyone with the link can act as you on this node: do not share it."
    ]
    let examples = ["web login"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        _ = try context.identity()
        let file = WebSecret(dataDirectory: try context.dataDirectory().path)
        let secret: String
        do throws(WebError) {
            secret = try file.current()
        } catch {
            throw CLIError.failure(error.message)
        }
        guard let base = webAddress(context) else {
            context.output.line("http://\(WebServer.defaultAddress)/?token=\(secret)")
            FileHandle.standardError.write(
                Data("parley: no node with a web UI runs for this data directory now; the link works once `parley run` serves one\n".utf8))
            return 0
        }
        context.output.line(base + "?token=" + secret)
        return 0
    }
}

/// `parley web logout --all`: every browser signed in to the web UI is signed out.
struct WebLogoutCommand: Command {
    let name = "web logout"
    let summary = "sign every browser out of the web UI (a lost laptop, a shared link)"
    let usage = ["web logout --all"]
    static let all = Flag.flag("all", "sign out every browser (required: there is no other kind of logout)")
    let options = [Self.all.spec]
    let details = [
        "Replaces the data directory's login secret: every link and every browser's cookie stop working at once, also on a "
            + "running node. `parley web login` prints the new link."
    ]
    let examples = ["web logout --all"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        guard arguments[Self.all] else { throw CLIError.usage("say --all: it signs out every browser at once", command: name) }
        _ = try context.identity()
        let file = WebSecret(dataDirectory: try context.dataDirectory().path)
        do throws(WebError) {
            try file.replace()
        } catch {
            throw CLIError.failure(error.message)
        }
        context.output.line("every browser is signed out; `parley web login` prints a new link")
        return 0
    }
}
