/// What a server keeps for a WebSocket its HTTP upgrade made, in the socket's engine (its handler, which
/// the loop's registry drains and the loop's sweep looks at): the handle, held while the connection is
/// open (the route's code may drop it; the server still serves the socket, its pings included), and the
/// server's context, whose sweep checks the deadlines on what the client must take (``OutputDeadlines``).
/// Loop-confined, like the engine.
struct ServedWebSocket {
    let handle: WebSocket
    /// The server's context on the loop: the deadlines' lengths, the log and the cut hook (let go with the
    /// rest when the connection ends).
    let context: HTTPLoopContext
}
