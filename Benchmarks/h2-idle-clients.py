#!/usr/bin/env python3
"""Idle HTTP/2 clients for `make bench-h2`: opens COUNT cleartext HTTP/2 connections (h2c, prior knowledge) to
127.0.0.1:PORT; on each, the client preface and SETTINGS, one `GET /hello` (HEADERS with END_STREAM, encoded by
the `h2` library from PyPI), the whole 200 response read and the server's SETTINGS acknowledged; then every
connection stays open and idle. Prints `ready N` once all N are answered (or `failed REASON`), waits until its
standard input closes, then closes them all.

At most 64 connections are set up at a time, as tls-idle-clients.py does: the server never sees more at once
than a loaded server does. The client's speed is no part of the figure (the server's RSS is read once all are idle).
"""
import asyncio
import resource
import sys

import h2.config
import h2.connection
import h2.events


async def open_one(port, gate):
    async with gate:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        connection.initiate_connection()
        connection.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":authority", f"127.0.0.1:{port}"),
                                    (":path", "/hello")], end_stream=True)
        writer.write(connection.data_to_send())
        status, ended, settings = None, False, False
        while not (ended and settings):
            data = await reader.read(65536)
            if not data:
                raise RuntimeError("closed by the server")
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = dict(event.headers).get(b":status")
                elif isinstance(event, h2.events.DataReceived):
                    connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    ended = True
                elif isinstance(event, h2.events.RemoteSettingsChanged):
                    settings = True  # h2 queues the SETTINGS ACK, written below
                elif isinstance(event, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                    raise RuntimeError(type(event).__name__)
            writer.write(connection.data_to_send())
        await writer.drain()
        if status != b"200":
            raise RuntimeError(f"status {status}")
        return writer


async def main(port, count):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    gate = asyncio.Semaphore(64)
    try:
        writers = await asyncio.gather(*(open_one(port, gate) for _ in range(count)))
    except Exception as error:  # noqa: BLE001 - reported to the script, which stops the row
        print(f"failed {type(error).__name__}: {error}", flush=True)
        return 1
    print(f"ready {len(writers)}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for writer in writers:
        writer.transport.abort()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]))))
