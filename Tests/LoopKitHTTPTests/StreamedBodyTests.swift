#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTypes
import LoopKit
import LoopKitNet
import Synchronization
import Testing
@testable import LoopKitHTTP
import LoopKitHTTPTesting

/// The routes of the streamed-body tests.
private func streamingRouter(gate: Gate = Gate(), bodies: Recorder<HTTPRequestBody> = Recorder()) -> HTTPRouter {
    var router = HTTPRouter()
    // Counts the body and reports its trailers.
    router.on(.post, "/count", bodyLimit: nil) { _, body in
        bodies.record(body)
        var count = 0
        for try await chunk in body { count += chunk.count }
        let trailer = body.trailers?[HTTPField.Name("X-Checksum")!] ?? "-"
        return .text("received \(count) trailer \(trailer)")
    }
    // The same, with callbacks.
    router.on(.post, "/count-callbacks", bodyLimit: nil) { _, body, responder in
        var count = 0
        body.read({ count += $0.count }, onEnd: { result in
            switch result {
            case .success: responder.send(.text("received \(count)"))
            case .failure(let error): responder.send(.text("failed \(error)", status: .badRequest))
            }
        })
    }
    router.on(.post, "/limited", bodyLimit: 10) { _, body in
        var count = 0
        for try await chunk in body { count += chunk.count }
        return .text("received \(count)")
    }
    router.on(.post, "/collect", bodyLimit: nil) { _, body in
        let bytes = try await body.collect(upTo: 8)
        return .text("collected \(bytes.count)")
    }
    // Answers at once, reading nothing.
    router.on(.post, "/early", bodyLimit: nil) { _, _ in .text("early") }
    // Reads nothing until the gate opens.
    router.on(.post, "/stall", bodyLimit: nil) { _, body in
        bodies.record(body)
        await gate.wait()
        var count = 0
        for try await chunk in body { count += chunk.count }
        return .text("received \(count)")
    }
    router.get("/hello") { _ in .text("Hello, World!") }
    return router
}

/// Reads a request body as it arrives: sized and chunked, backpressure, limits, 100-continue, early answers.
@Suite("Streamed request bodies")
struct StreamedBodyTests {
    @Test func aSizedBodyArrivesWhole() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            let body = String(repeating: "x", count: 200_000)
            let response = try client.exchange("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 200000\r\n\r\n" + body)
            #expect(response.text == "received 200000 trailer -")
            #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").text == "Hello, World!")  // kept alive
        }
    }

    @Test func aChunkedBodyArrivesWholeWithItsTrailers() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            let request = "POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Checksum: abc\r\n\r\n"
            #expect(try client.exchange(request).text == "received 12 trailer abc")
        }
    }

    @Test func theCallbackFormReadsTheWholeBody() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            let request = "POST /count-callbacks HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
            #expect(try client.exchange(request).text == "received 7")
        }
    }

    @Test func splittingTheRequestAtEveryByteGivesTheSameAnswer() async throws {
        let chunked = Array(("POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "4\r\nabcd\r\n2\r\nef\r\n0\r\nX-Checksum: z\r\n\r\n").utf8)
        let sized = Array("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nabcdef".utf8)
        try await withServer(router: streamingRouter()) { _, port in
            for request in [chunked, sized] {
                let expected = request == chunked ? "received 6 trailer z" : "received 6 trailer -"
                for split in 1..<request.count {
                    let client = try RawClient(port: port)
                    client.send(Array(request[..<split]))
                    client.send(Array(request[split...]))
                    #expect(try client.readResponse().text == expected, "split at \(split)")
                }
            }
        }
    }

    @Test func aHandlerThatDoesNotReadStopsTheSocketBeingRead() async throws {
        let gate = Gate()
        let bodies = Recorder<HTTPRequestBody>()
        try await withServer(router: streamingRouter(gate: gate, bodies: bodies)) { _, port in
            let client = try RawClient(port: port)
            let total = 64 * 1024 * 1024  // far more than the kernel's socket buffers
            let sent = Atomic<Int>(0)
            let fd = client.fd
            // The blocking sends run on a thread of their own: blocked in send(2) on a thread of Swift's
            // cooperative pool (two here), they starved the other tests' tasks under the thread sanitizer.
            // The thread starts here, not from a task: a task waits for a pool thread to start, and in a full
            // run under the sanitizer the pool stayed busy past `eventually`'s bound (the request never came).
            let senderDone = DispatchSemaphore(value: 0)
            Thread {
                defer { senderDone.signal() }
                var head = Array("POST /stall HTTP/1.1\r\nHost: t\r\nContent-Length: \(total)\r\n\r\n".utf8)
                _ = head.withUnsafeMutableBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                let chunk = [UInt8](repeating: 7, count: 64 * 1024)
                var left = total
                while left > 0 {
                    let count = chunk.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, min(left, $0.count), Int32(MSG_NOSIGNAL)) }
                    guard count > 0 else { return }
                    left -= count
                    sent.add(count, ordering: .relaxed)
                }
            }.start()
            // Wait until the sender is stuck: the server reads nothing more while the handler does not.
            #expect(try await eventually { !bodies.all.isEmpty })
            var previous = -1
            while sent.load(ordering: .relaxed) != previous {
                previous = sent.load(ordering: .relaxed)
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(previous < total)
            guard let body = bodies.all.first else {
                gate.open()
                return
            }
            let buffered = try await body.loop.perform { body.bufferedCount }
            #expect(buffered <= body.bufferLimit + 64 * 1024)  // the limit, plus at most the read that crossed it
            gate.open()
            try await onOwnThread { senderDone.wait() }
            #expect(try client.readResponse().text == "received \(total)")
        }
    }

    @Test func aBodyOverTheRoutesLimitGets413() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let sized = try RawClient(port: port)
            #expect(try sized.exchange("POST /limited HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n").status == 413)
            #expect(sized.isClosedByServer())
            let chunked = try RawClient(port: port)
            let request = "POST /limited HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n"
            #expect(try chunked.exchange(request).status == 413)
            #expect(chunked.isClosedByServer())
        }
    }

    @Test func collectingPastItsLimitGets413() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            #expect(try client.exchange("POST /collect HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde").text == "collected 5")
            let response = try client.exchange("POST /collect HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\n123456789")
            #expect(response.status == 413)
        }
    }

    @Test func continueIsSentWhenTheHandlerStartsReading() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /count HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            #expect(try client.readResponse().status == 100)
            client.send("hello")
            #expect(try client.readResponse().text == "received 5 trailer -")
        }
    }

    @Test func aHandlerThatAnswersWithoutReadingSendsNoContinueAndCloses() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /early HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)  // the final answer, not 100
            #expect(response.text == "early")
            #expect(response.field("Connection") == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func aBodyTooLargeForTheRouteIsRefusedBeforeContinue() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("POST /limited HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
            #expect(response.status == 413)
            #expect(client.isClosedByServer())
        }
    }

    @Test func anEarlyAnswerClosesWithoutLosingTheResponseOrAnsweringWhatFollows() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n\r\n0123456789")  // half the body
            let response = try client.readResponse()
            #expect(response.text == "early")
            #expect(response.field("Connection") == "close")
            // The rest of the body and a request behind it: read and dropped (no reset), never answered.
            client.send("abcdefghijGET /hello HTTP/1.1\r\nHost: t\r\n\r\n" + String(repeating: "z", count: 50_000))
            #expect(client.readUntilClosed().isEmpty)
        }
    }

    @Test func theNextRequestIsAnsweredAfterAStreamedOne() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcGET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "received 3 trailer -")
            #expect(try client.readResponse().text == "Hello, World!")
        }
    }

    @Test func aClientThatLeavesMidBodyEndsTheBodyWithConnectionClosed() async throws {
        let bodies = Recorder<HTTPRequestBody>()
        let outcome = Recorder<String>()
        var router = HTTPRouter()
        router.on(.post, "/watch", bodyLimit: nil) { _, body in
            bodies.record(body)
            do {
                for try await _ in body {}
                outcome.record("ended")
            } catch {
                outcome.record("\(error)")
            }
            return .text("done")
        }
        try await withServer(router: router) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /watch HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
            try await eventually { !bodies.all.isEmpty }
            Glibc.shutdown(client.fd, Int32(SHUT_RDWR))
            try await eventually { !outcome.all.isEmpty }
            #expect(outcome.all == [HTTPBodyError.connectionClosed.description])
        }
    }

    @Test func aSecondReaderWhileOneWaitsStopsTheProcess() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var router = HTTPRouter()
            router.on(.post, "/two-readers", bodyLimit: nil) { _, body in
                Task(executorPreference: body.loop) { for try await _ in body {} }
                for try await _ in body {}
                return .text("read")
            }
            let client = try! HTTPTestClient(router: router)
            try! client.send("POST /two-readers HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n")
            try! client.runUntilIdle()
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("HTTPRequestBody has one consumer at a time"))
    }
}
