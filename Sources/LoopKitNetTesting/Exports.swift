// One import for a connection test: the in-memory pair and the driver that steps its loop.
@_exported import LoopKitTesting
