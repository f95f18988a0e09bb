// The currency types of LoopKitHTTP's public API come with it: `import LoopKitHTTP` is enough to name
// `HTTPResponse`, `HTTPRequest` and `HTTPFields` (swift-http-types), as a route or a test does.
@_exported import HTTPTypes
