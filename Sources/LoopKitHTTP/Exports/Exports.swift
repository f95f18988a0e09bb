// The currency types of LoopKitHTTP's public API come with it: `import LoopKitHTTP` is enough to name
// `HTTPResponse`, `HTTPRequest` and `HTTPFields` (swift-http-types), as a route or a test does, and
// `Bytes` (LoopKitNet), the one type of every owned body: a request's, a response's, a collected one.
@_exported import HTTPTypes
@_exported import struct LoopKitNet.Bytes
// HTTPS: `Configuration.tls` takes a `TLSContext` made from a `TLSConfiguration` (LoopKitTLS).
@_exported import class LoopKitTLS.TLSContext
@_exported import struct LoopKitTLS.TLSConfiguration
