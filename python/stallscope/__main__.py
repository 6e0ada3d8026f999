"""``python -m stallscope`` and the wheel's ``stallscope`` command: the Rust command, in-process."""

from __future__ import annotations

import sys

from . import _native


def main(argv: list[str] | None = None) -> int:
    """Runs ``stallscope`` with ``argv`` (default: this process' arguments) and returns its
    exit code: 0 ok, 2 unreadable input or bad arguments, 1 other errors."""
    args = ["stallscope", *(sys.argv[1:] if argv is None else argv)]
    # the command writes to the process' file descriptors, after what Python buffered
    sys.stdout.flush()
    sys.stderr.flush()
    return _native.cli(args)


if __name__ == "__main__":
    sys.exit(main())
