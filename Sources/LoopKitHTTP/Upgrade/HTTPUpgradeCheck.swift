/// What an ``HTTPUpgrader`` finds in a request head: the upgrade may go on, with what its `101` needs,
/// or it is refused with an HTTP response (the connection stays HTTP). A value: safe from any thread.
public enum HTTPUpgradeCheck<Acceptance> {
    /// The upgrade may go on, with what its `101` and take-over need.
    case accepted(Acceptance)
    /// The upgrade is refused with this response; the connection stays HTTP.
    case refused(HTTPServerResponse)
}
