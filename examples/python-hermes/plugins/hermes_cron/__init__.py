"""hermes-cron as Python Hermes' cron trigger.

Python Hermes' gateway keeps its chats and platforms; the hermes-cron daemon sharing the
same HERMES_HOME fires the jobs, so each occurrence runs once. Install:

    mkdir -p "$HERMES_HOME/plugins"
    cp -r examples/python-hermes/plugins/hermes_cron "$HERMES_HOME/plugins/"

then set in config.yaml

    cron:
      provider: hermes_cron

restart Python Hermes' gateway, and run the hermes-cron service (`hermes cron service
install`). Without the plugin both would fire due jobs; the shared ledger keeps them from
running one occurrence twice, but the two would race for every job.
"""

import threading

from cron.scheduler_provider import CronScheduler


class HermesCronTrigger(CronScheduler):
    """Fires nothing: due jobs are the hermes-cron daemon's."""

    @property
    def name(self) -> str:
        return "hermes-cron"

    def start(self, stop_event: threading.Event, *, adapters=None, loop=None, interval=60, **_):
        # Block as the built-in ticker does, until the gateway shuts down.
        stop_event.wait()

    def recover_interrupted(self) -> int:
        # Runs in flight belong to the hermes-cron daemon, which recovers its own.
        return 0
