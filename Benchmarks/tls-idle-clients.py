#!/usr/bin/env python3
"""Idle TLS keep-alive clients for `make bench-https`: opens COUNT TLS connections to 127.0.0.1:PORT
(verified against CAFILE, server name "localhost"), sends one keep-alive `GET /hello` on each and reads the
whole response, then keeps every connection open and idle. Prints `ready N` once all N are answered (or
`failed REASON`), waits until its standard input closes, then closes them all.

Handshakes run at most 64 at a time so that the server is never asked for more than a loaded server sees.
"""
import asyncio
import resource
import ssl
import sys


async def open_one(port, context, gate):
    async with gate:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
        writer.write(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        await reader.readexactly(length)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.split(b"\r\n")[0].decode())
        return writer


async def main(port, count, cafile):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    context = ssl.create_default_context(cafile=cafile)
    gate = asyncio.Semaphore(64)
    try:
        writers = await asyncio.gather(*(open_one(port, context, gate) for _ in range(count)))
    except Exception as error:  # noqa: BLE001 - reported to the script, which stops the row
        print(f"failed {type(error).__name__}: {error}", flush=True)
        return 1
    print(f"ready {len(writers)}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for writer in writers:
        writer.transport.abort()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])))
