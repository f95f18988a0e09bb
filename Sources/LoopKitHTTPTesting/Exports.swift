// A test of HTTP routes steps a LoopDriver (HTTPTestClient(router:driver:), client.driver): one import for both.
@_exported import LoopKitTesting
