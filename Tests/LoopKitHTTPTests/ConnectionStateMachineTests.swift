import HTTPTypes
import Testing
@testable import LoopKitHTTP

@Suite("Connection state machine: keep-alive and close decisions")
struct ConnectionStateMachineTests {
    func head(keepAlive: Bool = true, expectsContinue: Bool = false, framing: HTTPBodyFraming = .none) -> HTTPRequestHead {
        HTTPRequestHead(request: HTTPRequest(method: .get, scheme: nil, authority: "h", path: "/"), version: .http1_1,
                        keepAlive: keepAlive, expectsContinue: expectsContinue, framing: framing)
    }

    @Test func keptAliveRequestReturnsToIdleAndResumesParsing() {
        var machine = HTTPConnectionStateMachine()
        machine.bytesArrived()
        #expect(machine.state == .readingHead)
        #expect(machine.headParsed(head()) == .none)
        #expect(machine.requestComplete() == .dispatch)
        #expect(!machine.canParse)
        #expect(machine.responseFinished() == .resumeParsing)
        #expect(machine.state == .idle)
    }

    @Test func connectionCloseClosesAfterTheResponse() {
        var machine = HTTPConnectionStateMachine()
        machine.bytesArrived()
        _ = machine.headParsed(head(keepAlive: false))
        _ = machine.requestComplete()
        #expect(!machine.responseKeepsAlive)
        #expect(machine.responseFinished() == .closeAfterFlush)
    }

    @Test func expectContinueWithABodyAsksForContinue() {
        var machine = HTTPConnectionStateMachine()
        #expect(machine.headParsed(head(expectsContinue: true, framing: .length(3))) == .sendContinue)
        #expect(machine.headParsed(head(expectsContinue: true, framing: .none)) == .none)
    }

    /// A streaming route's 100 waits for the handler to want the body, goes out once, and not at all once
    /// the body has ended (the client sent it without waiting).
    @Test func aStreamingRouteOwesContinueOnceWhileItsBodyIsToCome() {
        var machine = HTTPConnectionStateMachine()
        machine.bytesArrived()
        machine.streamingStarted(head(expectsContinue: true, framing: .chunked))
        #expect(machine.bodyWanted() == .sendContinue)
        #expect(machine.bodyWanted() == .none)
        #expect(machine.requestComplete() == .none)
        #expect(machine.responseFinished() == .resumeParsing)

        machine.bytesArrived()
        machine.streamingStarted(head(expectsContinue: true, framing: .length(3)))
        #expect(machine.requestComplete() == .none)
        #expect(machine.bodyWanted() == .none)

        var noExpectation = HTTPConnectionStateMachine()
        noExpectation.streamingStarted(head(framing: .length(3)))
        #expect(noExpectation.bodyWanted() == .none)
    }

    @Test func parseErrorRefusesWithItsStatus() {
        var machine = HTTPConnectionStateMachine()
        machine.bytesArrived()
        #expect(machine.parseFailed(.bodyTooLarge) == .refuse(.contentTooLarge))
        #expect(machine.state == .closing)
    }

    @Test func timeoutWhileIdleClosesSilently() {
        var machine = HTTPConnectionStateMachine()
        #expect(machine.timedOut() == .closeNow)
    }

    @Test func timeoutWhileReadingIs408() {
        var machine = HTTPConnectionStateMachine()
        machine.bytesArrived()
        #expect(machine.timedOut() == .refuse(.requestTimeout))
    }

    @Test func timeoutWhileRespondingIsIgnored() {
        var machine = HTTPConnectionStateMachine()
        _ = machine.headParsed(head())
        _ = machine.requestComplete()
        #expect(machine.timedOut() == .none)
    }

    @Test func shutdownClosesAnIdleConnectionAtOnce() {
        var machine = HTTPConnectionStateMachine()
        #expect(machine.shutdownRequested() == .closeNow)
    }

    @Test func shutdownMakesTheCurrentResponseTheLast() {
        var machine = HTTPConnectionStateMachine()
        _ = machine.headParsed(head())
        _ = machine.requestComplete()
        #expect(machine.shutdownRequested() == .none)
        #expect(!machine.responseKeepsAlive)
        #expect(machine.responseFinished() == .closeAfterFlush)
    }
}
