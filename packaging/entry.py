"""Entry point of the bundled app (PyInstaller): the ``sparcdesk`` command line, and the
window when started without arguments (a desktop launcher, a double click). ``-m MODULE``
runs one of the app's modules, as ``python -m`` would (the engine's worker processes).

On Windows the bundle has two executables built from this file: ``sparcdesk.exe``
(windowed, no console: the window) and ``sparcdesk-cli.exe`` (console: the command line).
"""

import multiprocessing
import os
import sys

if __name__ == "__main__":
    # the window indexes in a spawned child: the frozen executable is re-run for it, and
    # freeze_support() must see that before anything else parses the arguments
    multiprocessing.freeze_support()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from engine.cli.main import main, register_command

    def gui(argv: list[str]) -> int:
        from app.main import gui_command  # the window's modules load only for the window

        return gui_command(argv)

    # the bundle has no installed entry points: the launcher adds the app's command itself
    register_command("gui", "open the desktop window (options: sparcdesk gui --help)", gui)

    args = sys.argv[1:]
    if args[:1] == ["-m"] and len(args) > 1:
        # the engine's helper processes are started as [sys.executable, "-m", module]
        # (engine.ingest.extract_worker); in the bundle sys.executable is this program
        import runpy

        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        sys.exit(0)
    # macOS passes -psn_... to apps started from Finder on old systems
    args = [a for a in args if not a.startswith("-psn_")]
    if not args:
        args = ["gui"]
    sys.exit(main(args))
