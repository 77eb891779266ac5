"""The command line (`castbench ...`): typer commands that parse options, call the library and print
its results; no benchmark logic lives here."""
