"""localstripe as the tests run it: its own server, its store kept in memory only.

localstripe writes its whole store to /tmp/localstripe.pickle after every change (and reads it back at
start unless told `--from-scratch`): one path for every run on the machine. The tests' server keeps
nothing on disk, so runs side by side never share or clobber a store.

Run: `python -m tests.processor.stripe.localstripe_server --port N --from-scratch`.
"""

from __future__ import annotations

from localstripe import resources, server


def main() -> None:
    resources.Store.dump_to_disk = lambda self: None
    resources.Store.try_load_from_disk = lambda self: None
    server.start()  # its own command line: --port, --from-scratch


if __name__ == "__main__":
    main()
