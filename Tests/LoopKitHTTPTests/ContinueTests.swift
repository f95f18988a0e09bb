import HTTPTypes
import LoopDemoKit
import LoopKit
import Testing
@testable import LoopKitHTTP

/// The routes of the `Expect: 100-continue` tests: collected (`/echo`, from ``testRouter(gate:)``) and
/// streaming ones that answer before, after or without reading the body.
private func continueRouter() -> HTTPRouter {
    var router = testRouter()
    // Starts its streamed response at once and reads the body inside it (LoopDemo's `/echo`).
    router.on(.post, "/stream-echo", bodyLimit: nil) { _, body in
        HTTPServerResponse(status: .ok, body: .stream { writer in
            for try await chunk in body { try await writer.write(chunk) }
        })
    }
    // The same from a callback-form route: the responder sends the streamed response before any read.
    router.on(.post, "/callback-stream-echo", bodyLimit: nil) { _, body, responder in
        responder.send(HTTPServerResponse(status: .ok, body: .stream { writer in
            for try await chunk in body { try await writer.write(chunk) }
        }))
    }
    // Reads the first chunk, then streams it and the rest back.
    router.on(.post, "/read-then-stream", bodyLimit: nil) { _, body in
        var iterator = body.makeAsyncIterator()
        let first = try await iterator.next()
        return HTTPServerResponse(status: .ok, body: .stream { writer in
            if let first { try await writer.write(first) }
            for try await chunk in body { try await writer.write(chunk) }  // the body goes on where it was
        })
    }
    // Answers at once, reading nothing.
    router.on(.post, "/early", bodyLimit: nil) { _, _ in .text("early") }
    return router
}

/// `Expect: 100-continue` (RFC 9110 §10.1.1): `100 Continue` before any final head on a route that reads
/// the body, none on one that answers without it (which closes), none before a refusal; 417 for any other
/// expectation.
@Suite("Expect: 100-continue")
struct ContinueTests {
    /// The head of a request that waits for `100 Continue` before sending its `length`-byte body.
    static func expecting(_ path: String, length: Int) -> String {
        "POST \(path) HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: \(length)\r\n\r\n"
    }

    @Test func continueIsSentBeforeTheBody() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            client.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let interim = try client.readResponse()
            #expect(interim.status == 100)
            client.send("hello")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(final.text == "hello")
        }
    }

    @Test func bodyTooLargeIsRefusedWithoutContinue() async throws {
        try await withServer(configure: { $0.maxBodySize = 10 }) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
            #expect(response.status == 413)
            #expect(client.isClosedByServer())
        }
    }

    /// The first thing on the wire is `100 Continue`, then the streamed response's head; the body echoes.
    @Test func continueGoesOutBeforeTheHeadOfAStreamedResponseStartedBeforeTheBodyIsRead() async throws {
        try await withServer(router: continueRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send(Self.expecting("/stream-echo", length: 5))
            #expect(try client.readResponse(bodyless: true).status == 100)
            client.send("hello")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(final.text == "hello")
        }
    }

    @Test func continueGoesOutBeforeAStreamedResponseSentByACallbackRoute() async throws {
        try await withServer(router: continueRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send(Self.expecting("/callback-stream-echo", length: 5))
            #expect(try client.readResponse(bodyless: true).status == 100)
            client.send("hello")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(final.text == "hello")
        }
    }

    /// A handler that reads (100 goes out) and then streams its response gets no second 100.
    @Test func continueIsSentOnceWhenTheHandlerReadsAndThenStreams() async throws {
        try await withServer(router: continueRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send(Self.expecting("/read-then-stream", length: 5))
            #expect(try client.readResponse(bodyless: true).status == 100)
            client.send("hello")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(final.text == "hello")
        }
    }

    /// The body is refused by the final answer: no 100, `Connection: close`, and what the client sends
    /// anyway is read and dropped until it closes (RFC 9112 §9.3), never answered.
    @Test func aRouteThatAnswersWithoutReadingSendsNoContinueAndDrainsWhatFollows() async throws {
        try await withServer(router: continueRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send(Self.expecting("/early", length: 10))
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "early")
            #expect(response.field("Connection") == "close")
            client.send("0123456789GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(client.readUntilClosed().isEmpty)
        }
    }

    @Test func aSizedBodyPastAStreamingRoutesLimitGets413WithoutContinue() async throws {
        var router = HTTPRouter()
        router.on(.post, "/stream-echo", bodyLimit: 10) { _, body in
            HTTPServerResponse(status: .ok, body: .stream { writer in
                for try await chunk in body { try await writer.write(chunk) }
            })
        }
        try await withServer(router: router) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange(Self.expecting("/stream-echo", length: 11))
            #expect(response.status == 413)
            #expect(client.isClosedByServer())
        }
    }

    /// Any expectation but `100-continue`, alone or in a list (RFC 9110 §10.1.1): 417, and the connection
    /// closes with the request unread (the request behind it is never answered).
    @Test(arguments: ["something-else", "100-continue, 200-ok", "100-continue=1", "100-continue;q=1"])
    func anUnsupportedExpectationGets417(expectation: String) async throws {
        try await withServer(router: continueRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /stream-echo HTTP/1.1\r\nHost: t\r\nExpect: \(expectation)\r\nContent-Length: 5\r\n\r\nhello"
                + "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 417)
            #expect(response.field("Connection") == "close")
            #expect(client.isClosedByServer())
        }
    }

    /// HTTP/1.0 has no expectations: its `Expect`, whatever it says, is ignored (no 100, no 417).
    @Test func anHTTP10RequestsExpectationIsIgnored() async throws {
        try await withServer(router: continueRouter()) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("POST /echo HTTP/1.0\r\nExpect: something-else\r\nContent-Length: 5\r\n\r\nhello")
            #expect(response.status == 200)
            #expect(response.text == "hello")
        }
    }

    /// The expectation's token is case-insensitive; empty list members and whitespace around it are allowed.
    @Test(arguments: ["100-Continue", " 100-continue ", "100-continue,", ", 100-CONTINUE"])
    func continueIsRecognisedInAnySpelling(expectation: String) async throws {
        try await withServer(router: continueRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect:\(expectation)\r\nContent-Length: 5\r\n\r\n")
            #expect(try client.readResponse(bodyless: true).status == 100)
            client.send("hello")
            #expect(try client.readResponse().text == "hello")
        }
    }

    /// LoopDemo serve's `POST /echo`, over a socket: 100 first, as curl and h11 wait for.
    @Test func theDemoEchoSendsContinueBeforeItsHead() async throws {
        try await withServer(router: DemoRoutes.router(work: SyntheticWork(rounds: 1))) { _, port in
            let client = try RawClient(port: port)
            client.send(Self.expecting("/echo", length: 5))
            #expect(try client.readResponse(bodyless: true).status == 100)
            client.send("hello")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(final.text == "hello")
        }
    }
}
