"""python -m kfin: the same as the kfin command."""

from kfin.commands.app import main

main()
