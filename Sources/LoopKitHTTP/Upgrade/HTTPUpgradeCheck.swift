/// What an ``HTTPUpgrader`` finds in a request head: the upgrade may go on, with what its `101` needs,
/// or it is refused with an HTTP response (the connection stays HTTP). A value: safe from any thread.
enum HTTPUpgradeCheck<Acceptance> {
    case accepted(Acceptance)
    case refused(HTTPServerResponse)
}
