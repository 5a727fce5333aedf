"""Runs Python Hermes' own API server (gateway/platforms/api_server.py, hermes-agent
from PyPI) alone on 127.0.0.1:<port>, with API_SERVER_KEY from the environment, until
killed. Started by api_compat.sh with the venv's python and its own HERMES_HOME."""

import asyncio
import os
import sys

from gateway.config import PlatformConfig
from gateway.platforms.api_server import APIServerAdapter


async def serve(port):
    adapter = APIServerAdapter(PlatformConfig(enabled=True, extra={
        "host": "127.0.0.1", "port": port, "key": os.environ["API_SERVER_KEY"],
    }))
    if not await adapter.connect():
        sys.exit("pyapi_server: Python Hermes' API server did not start")
    print(f"listening on 127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
