"""The command line: the Typer app and one thin module per command."""
