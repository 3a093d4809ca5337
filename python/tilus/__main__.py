"""``python -m tilus cache info`` / ``python -m tilus cache clear [--cubins|--tuning]``."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    """Run the command line ``python -m tilus ...`` with ``argv`` (default: ``sys.argv[1:]``);
    returns the exit status (1 when some cache file could not be removed).
    """
    parser = argparse.ArgumentParser(prog="python -m tilus")
    commands = parser.add_subparsers(dest="command", required=True)
    cache = commands.add_parser("cache", help="the disk cache of binaries and tuning results")
    actions = cache.add_subparsers(dest="action", required=True)
    for name, text in (("info", "show what the cache holds"), ("clear", "delete it")):
        action = actions.add_parser(name, help=text)
        action.add_argument("--dir", help="cache root (default: $TILUS_CACHE_DIR, "
                                          "~/.cache/tilus when unset; empty: memory only)")
        if name == "clear":
            action.add_argument("--cubins", action="store_true", help="only compiled kernels")
            action.add_argument("--tuning", action="store_true", help="only tuning results")
    args = parser.parse_args(argv)

    from tilus import cache as tilus_cache

    if args.action == "info":
        print(tilus_cache.format_info(tilus_cache.cache_info(args.dir)))
        return 0
    both = not (args.cubins or args.tuning)
    removed = tilus_cache.clear_cache(args.dir, cubins=both or args.cubins,
                                      tuning=both or args.tuning)
    root = args.dir if args.dir is not None else tilus_cache.option.get_cache_dir()
    if not removed:
        print(f"tilus cache: nothing to clear in {root or '(memory only)'}")
    status = 0
    for part, usage in removed.items():
        if usage["files"] or not usage["failed"]:
            print(f"tilus cache: removed {usage['files']} {part} file(s) from {root}")
        if usage["failed"]:
            print(f"tilus cache: could not remove {usage['failed']} {part} file(s) from "
                  f"{root} ({usage['error']})", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
